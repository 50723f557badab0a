#!/usr/bin/env bash
# Requests/s of `GET /contacts/{id}` through the local server against a bare axum hello, both
# built with the release profile in this run and measured side by side on loopback with wrk,
# interleaved, ROUNDS times; prints the medians, each run's figures and their ratio (the
# target: at least 0.70; figures in docs/performance.md).
#
#   bash infra/scripts/bench-http.sh          # ROUNDS=3 DURATION=5 (seconds) CONNECTIONS=8 THREADS=2
#   SKIP_BUILD=1 SERVER_BIN=/tmp/local-server-before bash infra/scripts/bench-http.sh
#       # another build of the local server (e.g. the commit before a change), run alternately
#       # with the current one to compare them side by side
#
# wrk comes from Debian (apt-get install wrk) when missing. The local server runs as shipped: the
# embedded store with the demo seed (the same data as `cargo run -p local-server`), its default
# log level (RUST_LOG unset) and its metrics recorded for `GET /metrics`. The token is the demo
# client's, asked once before the runs (the server's verified-token cache then serves it, as a
# warm Lambda instance would for a client reusing its token). After the runs the script checks
# what the load left: no metric document in the server's log (its size is printed), and
# `GET /metrics` counting every request wrk made.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-5}"
CONNECTIONS="${CONNECTIONS:-8}"
THREADS="${THREADS:-2}"
CONTACT=01936b2a-7c00-7a00-8000-000000000002

# shellcheck source=infra/scripts/http-measure.sh
source infra/scripts/http-measure.sh
install_missing wrk wrk
build_servers

env -u RUST_LOG "${SERVER_BIN:-target/release/local-server}" --addr 127.0.0.1:0 >"$work/server.log" 2>&1 &
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

run_wrk() { # run_wrk <label> <url> [header] -> "requests/s total-requests"
  local out
  if [ -n "${3:-}" ]; then
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -H "$3" "$2")
  else
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" "$2")
  fi
  if grep -q -e 'Non-2xx' -e 'Socket errors' <<<"$out"; then
    echo "error: $1 answered non-2xx responses or had socket errors:" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "$(awk '/Requests\/sec:/ {print $2}' <<<"$out") $(awk '/requests in/ {print $1}' <<<"$out")"
}

log_before=$(wc -c <"$work/server.log")
lines_before=$(wc -l <"$work/server.log")
echo "==> $ROUNDS interleaved rounds of ${DURATION} s: wrk -t$THREADS -c$CONNECTIONS"
server_rps=()
hello_rps=()
served=0
for round in $(seq 1 "$ROUNDS"); do
  read -r s n < <(run_wrk "GET /contacts/{id}" "$SERVER/contacts/$CONTACT" "Authorization: Bearer $TOKEN")
  read -r h _ < <(run_wrk "hello" "$HELLO/")
  server_rps+=("$s")
  hello_rps+=("$h")
  served=$((served + n))
  echo "  round $round: GET /contacts/{id} $s req/s, hello $h req/s, ratio $(python3 -c "print(f'{$s / $h:.2f}')")"
done

# What the load left in the log and in the metrics.
log_after=$(wc -c <"$work/server.log")
lines_after=$(wc -l <"$work/server.log")
if grep -q -e '"_aws"' -e 'CloudWatchMetrics' "$work/server.log"; then
  echo "error: metric documents in the server's log" >&2
  exit 1
fi
counted=$(curl -sf "$SERVER/metrics" | python3 -c '
import sys
total = 0
for line in sys.stdin:
    if line.startswith("Requests{") and "route=\"/contacts/{contactId}\"" in line and "status_class=\"2xx\"" in line:
        total += float(line.rsplit(" ", 1)[1])
print(int(total))')
echo "  log during the load: $((lines_after - lines_before)) lines, $((log_after - log_before)) bytes for $served requests; no metric document"
echo "  GET /metrics: Requests{route=\"/contacts/{contactId}\",status_class=\"2xx\"} = $counted (wrk completed $served; the curl check above adds 1)"

python3 - "${server_rps[*]}" "${hello_rps[*]}" <<'PY'
import statistics, sys
server = [float(x) for x in sys.argv[1].split()]
hello = [float(x) for x in sys.argv[2].split()]
s, h = statistics.median(server), statistics.median(hello)
ratios = [a / b for a, b in zip(server, hello)]
print(f"\nmedian requests/s: GET /contacts/{{id}} {s:,.0f}, bare axum hello {h:,.0f}")
print(f"per-round ratios: {', '.join(f'{r:.2f}' for r in ratios)}")
print(f"ratio: {s / h:.2f} (goal: at least 0.70)")
PY
