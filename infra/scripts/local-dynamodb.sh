#!/usr/bin/env bash
# The whole API on DynamoDB, locally: starts the emulator (moto), creates the dispatch queue and
# its dead-letter queue (maxReceiveCount 3), then runs the local server against the table with
# the demo seed (the table is created from infra/table.json and the seed provisioned) and polls
# the queue as Lambda's SQS event source mapping would.
# Extra arguments go to the local server, e.g. --addr 127.0.0.1:3001 or --seed PATH.
# Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=infra/scripts/emulator.sh
source infra/scripts/emulator.sh
trap emulator_stop EXIT
export TABLE_NAME="${TABLE_NAME:-account-routing}"
QUEUE_URL="$(.venv/bin/python infra/emulator/queues.py create)"
echo "==> local server on DynamoDB table $TABLE_NAME at $AWS_ENDPOINT_URL"
echo "==> polling the dispatch queue $QUEUE_URL; send a message from another shell with:"
echo "    AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL .venv/bin/python infra/emulator/queues.py send ROUTER_ID OBJECT_ID"
cargo run -p local-server -- --store dynamodb --queue-url "$QUEUE_URL" "$@"
