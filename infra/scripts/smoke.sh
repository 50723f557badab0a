#!/usr/bin/env bash
# Deployment smoke test: the README journey (token, create, idempotent retry, patch, list with a
# cursor, explain, dispatch, history, and a router of its own: create, draft, publish, dispatch,
# restore, publish) against a running API; fails on the first unexpected answer.
#
#   SMOKE_CLIENT_ID=... SMOKE_CLIENT_SECRET=... bash infra/scripts/smoke.sh https://<api-id>.execute-api.<region>.amazonaws.com
#
# Optional: SMOKE_ROUTER_ID (a published contacts router; default: the first one listed),
# SMOKE_SCOPES (default: read create update; add service-api/delete to archive the test contact).
# Needs only Python 3. The test command runs it against the local server on DynamoDB (emulator).
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: SMOKE_CLIENT_ID=... SMOKE_CLIENT_SECRET=... $0 BASE_URL" >&2
  exit 2
fi
exec python3 "$(dirname "$0")/smoke.py" "$1"
