#!/usr/bin/env bash
# Where the time of `GET /contacts/{id}` goes, against the bare axum hello (docs/performance.md):
# both built with the release profile plus symbols (CARGO_PROFILE_RELEASE_STRIP=false,
# CARGO_PROFILE_RELEASE_DEBUG=line-tables-only, into target/profiling so the stripped release
# build is left alone), each put under the load of infra/scripts/bench-http.sh (wrk, 8
# connections) while `perf record -g` samples it, then the top of each profile by shared object
# and by symbol. Findings in docs/performance.md.
#
#   bash infra/scripts/profile-http.sh        # DURATION=10 (seconds of sampling each) OUT=<dir>
#
# wrk and perf (Debian's linux-perf) are installed with apt-get when missing. perf needs
# kernel.perf_event_paranoid <= 1 (or root) to sample a process; the script sets it when root.
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION="${DURATION:-10}"
CONNECTIONS="${CONNECTIONS:-8}"
THREADS="${THREADS:-2}"
OUT="${OUT:-$(mktemp -d)}"
CONTACT=01936b2a-7c00-7a00-8000-000000000002
TARGET=target/profiling

# shellcheck source=infra/scripts/http-measure.sh
source infra/scripts/http-measure.sh
install_missing wrk wrk
install_missing perf linux-perf
if [ "$(id -u)" = 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
  echo 1 >/proc/sys/kernel/perf_event_paranoid
fi

echo "==> with symbols into $TARGET"
CARGO_PROFILE_RELEASE_STRIP=false CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
  build_servers --target-dir "$TARGET"

env -u RUST_LOG "$TARGET/release/local-server" --addr 127.0.0.1:0 >"$OUT/server.log" 2>&1 &
server_pid=$!
pids+=("$server_pid")
"$TARGET/release/hello-axum" 127.0.0.1:0 >"$OUT/hello.log" 2>&1 &
hello_pid=$!
pids+=("$hello_pid")
SERVER=$(wait_for_address "$OUT/server.log")
HELLO=$(wait_for_address "$OUT/hello.log")
TOKEN=$(curl -sf -X POST "$SERVER/oauth2/token" -u 'northwind-integration:dev-secret-change-me' \
  -d grant_type=client_credentials -d scope=service-api/read |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')

profile() { # profile <label> <pid> <url> [header]
  local label=$1 pid=$2 url=$3
  local args=(-t"$THREADS" -c"$CONNECTIONS" -d"$((DURATION + 2))s")
  [ -n "${4:-}" ] && args+=(-H "$4")
  wrk "${args[@]}" "$url" >"$OUT/$label.wrk" &
  local wrk_pid=$!
  sleep 1
  perf record -q -g -F 999 -p "$pid" -o "$OUT/$label.data" -- sleep "$DURATION" 2>/dev/null
  wait "$wrk_pid"
  echo "==> $label: $(awk '/Requests\/sec:/ {print $2}' "$OUT/$label.wrk") requests/s under perf"
  # sed, not head: head would close the pipe early and pipefail stop the script.
  perf report -i "$OUT/$label.data" -g none --no-children --sort dso --stdio 2>/dev/null |
    grep -v '^#' | grep -v '^$' | sed -n '1,12p' | tee "$OUT/$label.dso.txt"
  echo "  -- top symbols"
  perf report -i "$OUT/$label.data" -g none --no-children --sort dso,symbol --stdio 2>/dev/null |
    grep -v '^#' | grep -v '^$' | grep '%' | sed -n '1,40p' | tee "$OUT/$label.symbols.txt"
}

profile local-server "$server_pid" "$SERVER/contacts/$CONTACT" "Authorization: Bearer $TOKEN"
profile hello "$hello_pid" "$HELLO/"
echo
echo "profiles and reports in $OUT (perf report -i $OUT/local-server.data for more)"
