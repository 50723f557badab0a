#!/usr/bin/env bash
# Runs infra/scripts/smoke.sh against the local server on DynamoDB (the emulator must be running:
# AWS_ENDPOINT_URL set, as infra/scripts/emulator.sh does), on a fresh table with the demo seed.
# Part of the test command.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${AWS_ENDPOINT_URL:?start the emulator first: source infra/scripts/emulator.sh}"
# Built once with the tests when infra/scripts/test.sh runs this (LOCAL_SERVER_PREBUILT=1).
[[ ${LOCAL_SERVER_PREBUILT:-} == 1 ]] || cargo build -q -p local-server
# shellcheck source=infra/scripts/local-server-address.sh
source infra/scripts/local-server-address.sh
work="$(mktemp -d)"
log="$work/server.log"
: >"$log"
table="smoke-$(date +%s)-$RANDOM"
TABLE_NAME="$table" target/debug/local-server --store dynamodb --addr 127.0.0.1:0 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
base=$(local_server_address "$log" "$pid")
SMOKE_CLIENT_ID=northwind-integration SMOKE_CLIENT_SECRET=dev-secret-change-me \
SMOKE_SCOPES="service-api/read service-api/create service-api/update service-api/delete" \
  bash infra/scripts/smoke.sh "$base"
