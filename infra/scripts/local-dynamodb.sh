#!/usr/bin/env bash
# The whole API on DynamoDB, locally: starts the emulator (moto), then the local server against
# it with the demo seed (the table is created from infra/table.json and the seed provisioned).
# Extra arguments go to the local server, e.g. --addr 127.0.0.1:3001 or --seed PATH.
# Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=infra/scripts/emulator.sh
source infra/scripts/emulator.sh
trap emulator_stop EXIT
export TABLE_NAME="${TABLE_NAME:-account-routing}"
echo "==> local server on DynamoDB table $TABLE_NAME at $AWS_ENDPOINT_URL"
cargo run -p local-server -- --store dynamodb "$@"
