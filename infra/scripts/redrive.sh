#!/usr/bin/env bash
# Dead letters of the dispatch and webhook queues (docs/operations.md, "Dead letters"):
#
#   bash infra/scripts/redrive.sh list   DLQ_URL
#   bash infra/scripts/redrive.sh move   DLQ_URL QUEUE_URL
#   bash infra/scripts/redrive.sh delete DLQ_URL MESSAGE_ID
#
# AWS region and credentials from the standard environment (AWS_ENDPOINT_URL for the emulator).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo run -q -p provision --bin redrive -- "$@"
