#!/usr/bin/env bash
# Requests/s of `POST /dispatch/router` through two builds of the local server, side by side on
# loopback with wrk, interleaved, ROUNDS times (figures in docs/performance.md): the dispatch's
# own CPU on the embedded store, without the AWS SDK.
#
#   SERVER_BIN_B=/tmp/local-server-before bash infra/scripts/bench-dispatch-ab.sh
#       # target/release/local-server (built here unless SKIP_BUILD=1) against another build
#
# The request is the demo's `events/dispatch-router.json` ("Inbound leads", Dana): the first
# assigns, every later one stops at `The router can not overwrite` and appends its history entry.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${ROUNDS:-6}"
DURATION="${DURATION:-5}"
: "${SERVER_BIN_B:?set SERVER_BIN_B to the other build of the local server}"

# shellcheck source=infra/scripts/http-measure.sh
source infra/scripts/http-measure.sh
install_missing wrk wrk
build_servers

env -u RUST_LOG "${SERVER_BIN:-target/release/local-server}" --addr 127.0.0.1:0 >"$work/a.log" 2>&1 &
pids+=($!)
env -u RUST_LOG "$SERVER_BIN_B" --addr 127.0.0.1:0 >"$work/b.log" 2>&1 &
pids+=($!)
A=$(wait_for_address "$work/a.log")
B=$(wait_for_address "$work/b.log")
token() {
  curl -sf -X POST "$1/oauth2/token" -u 'northwind-integration:dev-secret-change-me' \
    -d grant_type=client_credentials -d 'scope=service-api/read service-api/update' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])'
}
body=$(python3 -c 'import json; print(json.load(open("events/dispatch-router.json"))["body"])')
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = [[$body]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
LUA
rps() { # rps <token> <server> -> requests/s
  local out
  out=$(TOKEN="$1" wrk -t2 -c8 -d"${DURATION}s" -s "$work/post.lua" "$2/dispatch/router")
  if grep -q -e 'Non-2xx' -e 'Socket errors' <<<"$out"; then
    echo "error: non-2xx responses or socket errors:" >&2
    echo "$out" >&2
    exit 1
  fi
  awk '/Requests\/sec:/ {print $2}' <<<"$out"
}
TA=$(token "$A")
TB=$(token "$B")
echo "==> $ROUNDS interleaved rounds of $DURATION s: wrk -t2 -c8, POST /dispatch/router"
ratios=()
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then a=$(rps "$TA" "$A"); b=$(rps "$TB" "$B"); else b=$(rps "$TB" "$B"); a=$(rps "$TA" "$A"); fi
  ratio=$(python3 -c "print(f'{$a / $b:.2f}')")
  ratios+=("$ratio")
  echo "  round $r: A ${a} req/s, B ${b} req/s, A / B ${ratio}"
done
python3 -c "import statistics, sys; print(f'median A / B: {statistics.median(map(float, sys.argv[1:])):.2f}')" "${ratios[@]}"
