#!/usr/bin/env bash
# Remakes infra/compat/release-523e19a.json: the DynamoDB table as release 523e19a (the release
# before router management) leaves it after real use through its HTTP API (README.md here says
# what it holds and how a later change of a stored shape adds its own fixture).
#
#   infra/compat/make-fixture.sh [OLD_CHECKOUT]
#
# (RELEASE=<commit> makes release-<commit>.json from another commit instead; the driver,
# drive_release.py, speaks 523e19a's API and needs extending for what a later release stores.)
#
# Needs the old commit: OLD_CHECKOUT is a checkout of 523e19a (default ../compat-523e19a beside
# this repository, made with `git worktree add --detach` when missing). Its local-server and
# fake-crm are built there with its own Cargo.lock and target/ (the first build takes long; copy
# a warm target/ there first to shorten it). Nothing built from the old commit enters this
# repository. Runs on the current emulator (infra/scripts/emulator.sh, transaction conflicts off)
# and the current .venv; takes about two minutes once built.
set -euo pipefail
cd "$(dirname "$0")/../.."
RELEASE="${RELEASE:-523e19a}"
OLD="${1:-$(cd .. && pwd)/compat-$RELEASE}"
OUT="infra/compat/release-$RELEASE.json"

if [ ! -d "$OLD" ]; then
    git worktree add --detach "$OLD" "$RELEASE"
fi
if [ "$(git -C "$OLD" rev-parse --short=7 HEAD)" != "$RELEASE" ]; then
    echo "$OLD is not a checkout of $RELEASE" >&2
    exit 1
fi
echo "==> building local-server and fake-crm at $RELEASE in $OLD" >&2
(cd "$OLD" && cargo build --locked -q -p local-server -p fake-crm)

# The development sealing key seals the CRM token and webhook secrets, as the current code reads
# them without configuration; a run-specific cursor key is fine (cursors are not stored).
# The old release retried a cancelled transaction a fixed few times: conflicts off, so its run
# writes the table that light use would have, not one shaped by this emulator's refusals.
export EMULATOR_TRANSACTION_CONFLICTS=0
unset LOCAL_SEALING_KEY SEALING_KMS_KEY_ID
# shellcheck source=infra/scripts/emulator.sh
source infra/scripts/emulator.sh
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    emulator_stop
    rm -rf "$WORK"
}
trap cleanup EXIT
PY=.venv/bin/python

# Waits for "<what> listening on http://HOST:PORT" in a log; prints HOST:PORT.
listening() {
    local log="$1" pid="$2"
    for _ in $(seq 1 600); do
        if grep -q "listening on http://" "$log" 2>/dev/null; then
            grep -o "listening on http://[0-9.:]*" "$log" | head -1 | sed 's|.*http://||'
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            cat "$log" >&2
            return 1
        fi
        sleep 0.1
    done
    cat "$log" >&2
    return 1
}

"$OLD/target/debug/fake-crm" --addr 127.0.0.1:0 >"$WORK/crm.log" 2>&1 &
PIDS+=($!)
CRM_ADDR="$(listening "$WORK/crm.log" "${PIDS[-1]}")"
CRM_PORT="${CRM_ADDR##*:}"

export TABLE_NAME="compat-$RELEASE"
QUEUE_URL="$($PY infra/emulator/queues.py create)"
$PY infra/compat/drive_release.py seed "$OLD/infra/seed/demo.json" "$CRM_PORT" >"$WORK/seed.json"

# Scaled-down delays so SLA checks, webhook retries and CRM retries end within the run.
SLA_MINUTE_SECONDS=0.5 WEBHOOK_RETRY_DELAYS=1,1,1 CRM_SYNC_RETRY_DELAYS=1,1,1 \
    DUE_WORK_LEASE_SECONDS=5 SWEEP_INTERVAL_SECONDS=1 \
    "$OLD/target/debug/local-server" --store dynamodb --queue-url "$QUEUE_URL" \
    --seed "$WORK/seed.json" --addr 127.0.0.1:0 >"$WORK/server.log" 2>&1 &
PIDS+=($!)
SERVER_PID="${PIDS[-1]}"
API="$(listening "$WORK/server.log" "$SERVER_PID")"
echo "==> release $RELEASE serving on http://$API (table $TABLE_NAME at $AWS_ENDPOINT_URL)" >&2

if ! $PY infra/compat/drive_release.py drive "http://$API" "$CRM_PORT" "$QUEUE_URL"; then
    echo "==> the local server's log:" >&2
    tail -20 "$WORK/server.log" >&2
    exit 1
fi
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || true

$PY infra/compat/fixture.py dump "$TABLE_NAME" "$RELEASE" >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "==> wrote $OUT ($($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["Count"])' "$OUT") items)" >&2
