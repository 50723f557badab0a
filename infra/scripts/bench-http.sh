#!/usr/bin/env bash
# Requests/s of `GET /contacts/{id}` through the local server against a bare axum hello, both
# built with the release profile in this run and measured side by side on loopback with wrk,
# interleaved, ROUNDS times; prints the medians and their ratio (issue 14 goal 1: at least 0.5;
# figures in docs/performance.md).
#
#   bash infra/scripts/bench-http.sh          # ROUNDS=5 DURATION=5 (seconds) CONNECTIONS=32 THREADS=2
#
# wrk comes from Debian (apt-get install wrk) when missing. The local server runs on the embedded
# store with the demo seed (the same data as `cargo run -p local-server`); the token is the demo
# client's, asked once before the runs (the server's verified-token cache then serves it, as a
# warm Lambda instance would for a client reusing its token).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${ROUNDS:-5}"
DURATION="${DURATION:-5}"
CONNECTIONS="${CONNECTIONS:-32}"
THREADS="${THREADS:-2}"
CONTACT=01936b2a-7c00-7a00-8000-000000000002

if ! command -v wrk >/dev/null; then
  echo "==> apt-get install wrk"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get install -y wrk >/dev/null || { $sudo apt-get update >/dev/null && $sudo apt-get install -y wrk >/dev/null; }
fi

echo "==> cargo build --release (local-server, hello-axum)"
cargo build --release --locked --bin local-server --bin hello-axum

work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

wait_for_address() { # wait_for_address <log> -> http://host:port printed by the server
  for _ in $(seq 1 100); do
    addr=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$1" | head -1 || true)
    [ -n "$addr" ] && { echo "$addr"; return 0; }
    sleep 0.1
  done
  echo "error: no address in $1:" >&2
  cat "$1" >&2
  return 1
}

RUST_LOG=warn target/release/local-server --addr 127.0.0.1:0 >"$work/server.log" 2>&1 &
pids+=($!)
target/release/hello-axum 127.0.0.1:0 >"$work/hello.log" 2>&1 &
pids+=($!)
SERVER=$(wait_for_address "$work/server.log")
HELLO=$(wait_for_address "$work/hello.log")

TOKEN=$(curl -sf -X POST "$SERVER/oauth2/token" -u 'northwind-integration:dev-secret-change-me' \
  -d grant_type=client_credentials -d scope=service-api/read |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')
status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$SERVER/contacts/$CONTACT")
[ "$status" = 200 ] || { echo "error: GET /contacts/$CONTACT answered $status" >&2; exit 1; }

run_wrk() { # run_wrk <label> <url> [header] -> requests/s
  local out
  if [ -n "${3:-}" ]; then
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -H "$3" "$2")
  else
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" "$2")
  fi
  if grep -q 'Non-2xx' <<<"$out"; then
    echo "error: $1 answered non-2xx responses:" >&2
    echo "$out" >&2
    exit 1
  fi
  awk '/Requests\/sec:/ {print $2}' <<<"$out"
}

echo "==> $ROUNDS interleaved rounds of ${DURATION} s: wrk -t$THREADS -c$CONNECTIONS"
server_rps=()
hello_rps=()
for round in $(seq 1 "$ROUNDS"); do
  s=$(run_wrk "GET /contacts/{id}" "$SERVER/contacts/$CONTACT" "Authorization: Bearer $TOKEN")
  h=$(run_wrk "hello" "$HELLO/")
  server_rps+=("$s")
  hello_rps+=("$h")
  echo "  round $round: GET /contacts/{id} $s req/s, hello $h req/s"
done

python3 - "${server_rps[*]}" "${hello_rps[*]}" <<'PY'
import statistics, sys
server = [float(x) for x in sys.argv[1].split()]
hello = [float(x) for x in sys.argv[2].split()]
s, h = statistics.median(server), statistics.median(hello)
print(f"\nmedian requests/s: GET /contacts/{{id}} {s:,.0f}, bare axum hello {h:,.0f}")
print(f"ratio: {s / h:.2f} (goal: at least 0.50)")
PY
