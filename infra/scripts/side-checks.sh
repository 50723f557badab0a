#!/usr/bin/env bash
# The checks of the test command (infra/scripts/test.sh) that need neither the AWS emulator nor
# the Rust tests, one after the other: the emulator's own unit tests, the SAM template checks,
# schemathesis, the generated clients' journeys, the /docs page in headless Chromium and the
# signed-webhook end-to-end run. Each of them starts what it needs itself (a local server of its
# own on the embedded store, an in-process moto).
#
# test.sh starts this in the background once the test tools are installed and the Rust build is
# done, so that these Python, Node and browser processes fill the cores the Rust tests leave idle
# while they wait on the emulator and on timers; it prints this script's log after the tests.
# Every check runs even when one before it failed; the exit status is 1 when any failed, and the
# last lines name them.
#
#   bash infra/scripts/side-checks.sh       # on its own, from the repository root
#
# Needs what the scripts it runs need (they install their tools when missing), and a built
# target/debug/local-server when LOCAL_SERVER_PREBUILT=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
# Seconds since the test command started (TEST_COMMAND_STARTED_AT, epoch seconds), else since this
# script did, as test.sh's own step lines count them.
started_at=${TEST_COMMAND_STARTED_AT:-$(date +%s)}
failed=()

check() {
  local name=$1
  shift
  echo "==> [$(($(date +%s) - started_at)) s] $name"
  if ! "$@"; then
    echo "==> FAILED: $name" >&2
    failed+=("$name")
  fi
}

emulator_unit_tests() {
  # shellcheck source=infra/scripts/emulator.sh
  EMULATOR_FUNCTIONS_ONLY=1 source infra/scripts/emulator.sh
  emulator_install
  .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py'
}

check "the emulator refuses what DynamoDB refuses (key sizes, item size, transaction and batch limits, transaction conflicts) and answers as moto does" \
  emulator_unit_tests
check "SAM template checks (cfn-lint, sam validate --lint)" \
  bash infra/scripts/check-template.sh
check "schemathesis against the local server (every operation of /openapi.json, every default check)" \
  bash infra/scripts/schemathesis.sh
check "generated clients: redocly lint, openapi-python-client and openapi-typescript + openapi-fetch, type-checked journeys against the local server, every answer validated" \
  bash infra/scripts/generated-clients.sh
check "the API reference page (/docs) in headless Chromium" \
  bash infra/scripts/check-docs-page.sh
check "signed webhooks end to end, every delivery verified by the standardwebhooks package (PyPI)" \
  bash infra/scripts/webhooks-e2e.sh

if [[ ${#failed[@]} -gt 0 ]]; then
  printf '==> failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "==> [$(($(date +%s) - started_at)) s] the side checks passed"
