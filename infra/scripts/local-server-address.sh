#!/usr/bin/env bash
# Sourced by the scripts that start the local server in the background and need its address.
#
#   log="$work/server.log"
#   : >"$log"                      # made before the server starts: never read before it exists
#   target/debug/local-server --addr 127.0.0.1:0 >"$log" 2>&1 &
#   base=$(local_server_address "$log" $!) || exit 1
#
# local_server_address <log> <pid> [seconds]: waits (60 s by default) for the server's
# "account routing API listening on http://HOST:PORT" line in <log> and prints the URL. The
# background shell opens <log> only once it runs, which a loaded machine can delay past the
# caller's first read (under `set -euo pipefail` a read of a missing file ended the whole
# script), so a missing or empty file only means "not yet". Fails, printing the log, when the
# process exits first or the time runs out.
local_server_address() {
  local log=$1 pid=$2 seconds=${3:-60} base="" tries
  tries=$((seconds * 10))
  for ((i = 0; i < tries; i++)); do
    if [[ -s $log ]]; then
      base=$(sed -n 's/^account routing API listening on \(http:[^ ]*\)$/\1/p' "$log" 2>/dev/null | head -n 1 || true)
      [[ -n $base ]] && { echo "$base"; return 0; }
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "the local server exited at start-up; its log:" >&2
      cat "$log" >&2 2>/dev/null || true
      return 1
    fi
    sleep 0.1
  done
  echo "the local server printed no address within $seconds s; its log:" >&2
  cat "$log" >&2 2>/dev/null || true
  return 1
}
