#!/usr/bin/env bash
# Starts the local AWS emulator (moto's server: DynamoDB and SQS on one loopback port) and exports
# the environment the SDK reads. Source it:
#
#   source infra/scripts/emulator.sh     # starts moto, exports AWS_ENDPOINT_URL and friends
#   ...                                  # run tests, the local server, provision
#   emulator_stop                        # stops it (test.sh does this in an EXIT trap)
#
# moto is installed into .venv/ at the repository root the first time (with uv, infra/scripts/
# tools-venv.sh; a few seconds), and reused afterwards. Needs only Python 3 and pip. Each test
# creates its own table.
#
# Transaction conflicts (infra/emulator/transactions.py), on unless turned off:
# the emulator refuses what DynamoDB refuses to a request that meets a TransactWriteItems in
# flight on one of its items: another TransactWriteItems is cancelled (TransactionCanceledException,
# reason TransactionConflict), a PutItem/UpdateItem/DeleteItem fails with
# TransactionConflictException, a TransactGetItems is cancelled. The emulator's log (moto.log in
# $EMULATOR_DIR) has one "transaction conflict: ..." line per refusal. The test command
# (infra/scripts/test.sh) runs on it. To have overlapping requests wait for each other instead
# (as moto alone does; e.g. to drive an old release that did not retry them):
#
#   EMULATOR_TRANSACTION_CONFLICTS=0 source infra/scripts/emulator.sh

_emulator_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

emulator_install() {
    local venv="$_emulator_root/.venv"
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import moto.moto_server.werkzeug_app, werkzeug, importlib.metadata as m; assert m.version("moto") == "5.2.5"' 2>/dev/null; then
        return 0
    fi
    echo "==> installing moto[server] into .venv (first run only)" >&2
    # Pinned (infra/scripts/tools-venv.sh): infra/emulator/attribute_values.py, table_query.py,
    # request_id.py, host_dispatch.py, transaction_backup.py, update_validation.py,
    # expression_cache.py and limits.py replace parts of moto's internals (with tests comparing
    # answers against moto's own code); a new moto is taken on purpose.
    # shellcheck source=infra/scripts/tools-venv.sh
    VENV="$venv" source "$_emulator_root/infra/scripts/tools-venv.sh"
    VENV="$venv" tools_venv_install "moto[server]==$(tools_pin moto)" >&2
}

emulator_start() {
    emulator_install || return 1
    local started=$SECONDS
    export EMULATOR_TRANSACTION_CONFLICTS="${EMULATOR_TRANSACTION_CONFLICTS:-1}"
    EMULATOR_DIR="$(mktemp -d)"
    "$_emulator_root/.venv/bin/python" "$_emulator_root/infra/emulator/moto_server.py" \
        --host 127.0.0.1 --port 0 --port-file "$EMULATOR_DIR/port" >"$EMULATOR_DIR/moto.log" 2>&1 &
    EMULATOR_PID=$!
    local port=""
    for _ in $(seq 1 300); do
        if [ -s "$EMULATOR_DIR/port" ]; then
            port="$(cat "$EMULATOR_DIR/port")"
            if "$_emulator_root/.venv/bin/python" - "$port" <<'PY' 2>/dev/null; then break; fi
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/moto-api/data.json", timeout=2)
except urllib.error.HTTPError:
    pass  # it answered
PY
        fi
        if ! kill -0 "$EMULATOR_PID" 2>/dev/null; then
            echo "moto exited; its log:" >&2
            cat "$EMULATOR_DIR/moto.log" >&2
            return 1
        fi
        sleep 0.1
    done
    if [ -z "$port" ]; then
        echo "moto did not start within 30 s; its log:" >&2
        cat "$EMULATOR_DIR/moto.log" >&2
        return 1
    fi
    export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
    export AWS_ACCESS_KEY_ID=test
    export AWS_SECRET_ACCESS_KEY=test
    export AWS_REGION=us-east-1
    export AWS_DEFAULT_REGION=us-east-1
    export AWS_EC2_METADATA_DISABLED=true
    unset AWS_PROFILE AWS_SESSION_TOKEN
    echo "==> moto listening on $AWS_ENDPOINT_URL (pid $EMULATOR_PID, up in $((SECONDS - started)) s; $(grep -o 'transaction conflicts o[nf]*' "$EMULATOR_DIR/moto.log" | head -n 1))" >&2
}

emulator_stop() {
    if [ -n "${EMULATOR_PID:-}" ]; then
        kill "$EMULATOR_PID" 2>/dev/null || true
        wait "$EMULATOR_PID" 2>/dev/null || true
        EMULATOR_PID=""
    fi
    if [ -n "${EMULATOR_DIR:-}" ]; then
        rm -rf "$EMULATOR_DIR"
        EMULATOR_DIR=""
    fi
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
    # Sourced: start now, leave it running for the caller (EMULATOR_FUNCTIONS_ONLY=1: define the
    # functions only).
    if [ -z "${EMULATOR_FUNCTIONS_ONLY:-}" ]; then
        emulator_start
    fi
else
    # Run directly: start, print the environment, serve until interrupted.
    set -euo pipefail
    emulator_start
    trap emulator_stop EXIT
    echo "export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true"
    echo "(Ctrl-C stops the emulator)"
    wait "$EMULATOR_PID"
fi
