#!/usr/bin/env bash
# Instructions per request of `GET /contacts/{id}` through the local server, of an unknown path
# (its 404: routing, the request span, metrics, the error body) and of the bare axum hello, counted
# by valgrind's callgrind over N requests on one keep-alive connection (figures in
# docs/performance.md). User-space instructions only: the kernel's share of a request (the
# loopback socket) is not counted, and is about the same for both servers. Unlike requests/s on a
# shared machine, the count repeats to within a fraction of a percent, so it tells two builds
# apart where bench-http.sh cannot.
#
#   bash infra/scripts/count-http.sh                    # REQUESTS=2000, the release build
#   SKIP_BUILD=1 SERVER_BIN=/tmp/local-server-before bash infra/scripts/count-http.sh
#       # another build of the local server, e.g. the commit before a change
#
# valgrind comes from Debian (apt-get install valgrind) when missing. The local server runs as
# shipped (embedded store, demo seed, default log level); the token is the demo client's, asked
# before counting, so the verified-token cache serves it as it does under bench-http.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
REQUESTS="${REQUESTS:-2000}"
CONTACT=01936b2a-7c00-7a00-8000-000000000002

# shellcheck source=infra/scripts/http-measure.sh
source infra/scripts/http-measure.sh
install_missing valgrind valgrind
build_servers

# count <label> <path> <token: yes|no> <binary> [args...]: starts the binary under callgrind,
# warms the connection with 50 requests, zeroes the counters, sends REQUESTS requests, dumps.
count() {
  local label=$1 path=$2 token=$3
  shift 3
  local dir="$work/$label"
  mkdir -p "$dir"
  env -u RUST_LOG valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.%p" "$@" \
    >"$dir/server.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  local addr
  addr=$(wait_for_address "$dir/server.log" 1200) # valgrind starts a process slowly
  python3 - "${addr##*:}" "$path" "$token" "$REQUESTS" "$pid" <<'PY'
import base64, http.client, json, subprocess, sys, urllib.parse
port, path, token, n, pid = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
conn = http.client.HTTPConnection("127.0.0.1", port)
headers = {}
if token == "yes":
    basic = base64.b64encode(b"northwind-integration:dev-secret-change-me").decode()
    body = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": "service-api/read"})
    conn.request("POST", "/oauth2/token", body, {"Authorization": "Basic " + basic,
                 "Content-Type": "application/x-www-form-urlencoded"})
    headers["Authorization"] = "Bearer " + json.loads(conn.getresponse().read())["access_token"]
expected = None
for _ in range(50):
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    response.read()
    expected = response.status
subprocess.run(["callgrind_control", "-z", pid], check=True, capture_output=True)
for _ in range(n):
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    response.read()
    assert response.status == expected, (response.status, expected)
subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True)
print(expected)
PY
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  local total
  total=$(callgrind_annotate "$dir"/callgrind.*.1 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  echo "$label $((total / REQUESTS))"
}

server="${SERVER_BIN:-target/release/local-server}"
get=$(count get "/contacts/$CONTACT" yes "$server" --addr 127.0.0.1:0 | tail -1)
unknown=$(count unknown /nowhere no "$server" --addr 127.0.0.1:0 | tail -1)
hello=$(count hello / no target/release/hello-axum 127.0.0.1:0 | tail -1)
python3 - "$get" "$unknown" "$hello" <<'PY'
import sys
rows = [a.split() for a in sys.argv[1:]]
hello = int(rows[2][1])
names = {"get": "GET /contacts/{id} (200)", "unknown": "GET /nowhere (404)", "hello": "bare axum hello"}
print("\ninstructions per request (user space, callgrind):")
for label, n in rows:
    print(f"  {names[label]:28} {int(n):>7,}  {int(n) / hello:.2f}x the hello")
PY
