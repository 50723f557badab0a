#!/usr/bin/env bash
# Bounded mixed load against the local server (README.md, "Load"): builds and starts it on the
# demo seed (embedded store, loopback only), runs wrk twice with the same fixed mix and duration
# (infra/load/mixed.lua: token, record reads, lists, PATCHes, bounded creates and dispatches,
# users, routers) and fails on any 5xx, any unexpected 4xx or any transport error (connect, read,
# write, timeout), or when the server's resident memory after the second run is more than 20 %
# above its memory after the first (a leak grows with every request; the data the second run adds
# is bounded by the script to a few hundred small records).
#
#   bash infra/scripts/load.sh                         # 2 runs of 5 s, 8 connections
#   LOAD_DURATION=30s LOAD_CONNECTIONS=32 bash infra/scripts/load.sh
#
# Part of the README's test command (infra/scripts/test.sh). Installs wrk from Debian's packages
# when it is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION="${LOAD_DURATION:-5s}"
CONNECTIONS="${LOAD_CONNECTIONS:-8}"
THREADS="${LOAD_THREADS:-2}"
MAX_GROWTH_PERCENT=20

if ! command -v wrk >/dev/null; then
  echo "==> installing Debian's wrk"
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  apt_get=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q)
  if ! "${apt_get[@]}" install -y wrk; then
    "${apt_get[@]}" update
    "${apt_get[@]}" install -y wrk
  fi
fi

# Built once with the tests when infra/scripts/test.sh runs this (LOCAL_SERVER_PREBUILT=1).
[[ ${LOCAL_SERVER_PREBUILT:-} == 1 ]] || cargo build -q -p local-server
# shellcheck source=infra/scripts/local-server-address.sh
source infra/scripts/local-server-address.sh
work="$(mktemp -d)"
: >"$work/server.log"
# exec: $! is the server itself, whose /proc/<pid>/status the RSS is read from.
(exec env RUST_LOG=warn ./target/debug/local-server --addr 127.0.0.1:0 >"$work/server.log" 2>&1) &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
base=$(local_server_address "$work/server.log" "$server")
case "$base" in
  http://127.0.0.1:*) ;;
  *) echo "refusing to load anything but loopback: $base" >&2; exit 1 ;;
esac

json() { python3 -c "import json, sys; print(eval(sys.argv[1], {'d': json.load(sys.stdin)}))" "$1"; }
token="$(curl -sf -X POST "$base/oauth2/token" -u 'northwind-integration:dev-secret-change-me' \
  -d grant_type=client_credentials \
  -d 'scope=service-api/read service-api/create service-api/update service-api/delete' |
  json 'd["access_token"]')"
auth=(-H "Authorization: Bearer $token")
contact="$(curl -sf "${auth[@]}" "$base/contacts?limit=2" | json 'd["data"][0]["id"]')"
contact2="$(curl -sf "${auth[@]}" "$base/contacts?limit=2" | json 'd["data"][1]["id"]')"
user="$(curl -sf "${auth[@]}" "$base/users?limit=1" | json 'd["data"][0]["id"]')"
router="$(curl -sf "${auth[@]}" "$base/routers?limit=1" | json 'd["data"][0]["id"]')"

rss_kib() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$server/status"; }

failed=0
run() { # run <label>: one wrk run; checks its counts; prints the RSS after it
  local label=$1
  wrk -t "$THREADS" -c "$CONNECTIONS" -d "$DURATION" --timeout 5s --latency \
    -s infra/load/mixed.lua "$base" -- "$token" "$label" "$contact" "$contact2" "$user" "$router" \
    >"$work/$label.txt"
  local line
  line="$(grep '^LOAD ' "$work/$label.txt")" || { cat "$work/$label.txt"; echo "no summary" >&2; exit 1; }
  echo "    $label: ${line#LOAD } rss_kib=$(rss_kib)" >&2
  local key
  for key in 4xx 5xx other connect read write timeout; do
    local value
    value="$(sed -n "s/.* $key=\([0-9]*\).*/\1/p" <<<"$line")"
    if [ "$value" != 0 ]; then
      echo "FAILED $label: $key=$value" >&2
      failed=1
    fi
  done
  rss_kib
}

echo "==> mixed load on $base: $THREADS threads, $CONNECTIONS connections, $DURATION per run"
rss_start="$(rss_kib)"
echo "    RSS after start-up: $rss_start KiB" >&2
rss_first="$(run first)"
rss_second="$(run second)"
limit=$((rss_first * (100 + MAX_GROWTH_PERCENT) / 100))
echo "    RSS after the first run: $rss_first KiB, after the second: $rss_second KiB (limit $limit KiB)"
if [ "$rss_second" -gt "$limit" ]; then
  echo "FAILED: memory grew more than $MAX_GROWTH_PERCENT % between two identical runs" >&2
  failed=1
fi
if grep -q 'panicked' "$work/server.log"; then
  grep -m 5 'panicked' "$work/server.log" >&2
  echo "FAILED: the server panicked" >&2
  failed=1
fi
[ "$failed" = 0 ] || exit 1
echo "==> load passed"
