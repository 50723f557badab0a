#!/usr/bin/env bash
# Signed webhooks end to end, verified by a receiver no one here wrote: the `standardwebhooks`
# package from PyPI (pinned in tools-venv.sh, installed into .venv/) checks every delivery the
# local server sends (infra/scripts/webhooks_e2e.py says what is asserted). Part of the test
# command.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=infra/scripts/tools-venv.sh
source infra/scripts/tools-venv.sh
tools_venv_require standardwebhooks
# Built once with the tests when infra/scripts/test.sh runs this (LOCAL_SERVER_PREBUILT=1).
[[ ${LOCAL_SERVER_PREBUILT:-} == 1 ]] || cargo build -q -p local-server
"$VENV/bin/python" infra/scripts/webhooks_e2e.py target/debug/local-server
