#!/usr/bin/env bash
# Runs infra/scripts/smoke.sh against the local server on DynamoDB (the emulator must be running:
# AWS_ENDPOINT_URL set, as infra/scripts/emulator.sh does), on a fresh table with the demo seed.
# Part of the test command.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${AWS_ENDPOINT_URL:?start the emulator first: source infra/scripts/emulator.sh}"
# Built once with the tests when infra/scripts/test.sh runs this (LOCAL_SERVER_PREBUILT=1).
[[ ${LOCAL_SERVER_PREBUILT:-} == 1 ]] || cargo build -q -p local-server
work="$(mktemp -d)"
TABLE_NAME="smoke-$(date +%s)-$RANDOM" target/debug/local-server --store dynamodb --addr 127.0.0.1:0 \
  >"$work/server.out" 2>"$work/server.err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
base=""
for _ in $(seq 1 300); do
  base="$(sed -n 's/^account routing API listening on //p' "$work/server.out" | head -1)"
  [ -n "$base" ] && break
  kill -0 "$pid" 2>/dev/null || { echo "the local server exited:" >&2; cat "$work/server.err" >&2; exit 1; }
  sleep 0.1
done
[ -n "$base" ] || { echo "the local server did not start" >&2; exit 1; }
SMOKE_CLIENT_ID=northwind-integration SMOKE_CLIENT_SECRET=dev-secret-change-me \
SMOKE_SCOPES="service-api/read service-api/create service-api/update service-api/delete" \
  bash infra/scripts/smoke.sh "$base"
