#!/usr/bin/env bash
# The checks of the test command (infra/scripts/test.sh) that need neither the AWS emulator nor
# the Rust tests, one after the other, in two groups:
#
# - `tools`: the emulator's own unit tests and the SAM template checks. They need only the Python
#   tools, so test.sh runs them as soon as the tools are installed, while cargo builds: they
#   fill the moments when the build leaves a core idle (one crate's front end on one core).
# - `server`: schemathesis, the generated clients' journeys, the /docs page in headless Chromium
#   and the signed-webhook end-to-end run. They start a local server of their own on the embedded
#   store (target/debug/local-server as the build made it when LOCAL_SERVER_PREBUILT=1), so
#   test.sh starts them once the build is done, beside the Rust tests, which leave part of the
#   machine idle while they wait on the emulator and on timers.
#
# Every check of the group runs even when one before it failed; the exit status is 1 when any
# failed, and the last lines name them.
#
#   bash infra/scripts/side-checks.sh          # both groups, from the repository root
#   bash infra/scripts/side-checks.sh tools    # one group
#
# Needs what the scripts it runs need (they install their tools when missing).
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

group=${1:-all}
case $group in
  tools | server | all) ;;
  *)
    echo "usage: side-checks.sh [tools|server|all]" >&2
    exit 2
    ;;
esac

if [[ $group != server ]]; then
  check "the emulator refuses what DynamoDB refuses (key sizes, item size, transaction and batch limits, transaction conflicts) and answers as moto does" \
    emulator_unit_tests
  check "SAM template checks (sam validate --lint: the SAM translation and cfn-lint's rules)" \
    bash infra/scripts/check-template.sh
fi
if [[ $group != tools ]]; then
  check "schemathesis against the local server (every operation of /openapi.json, every default check)" \
    bash infra/scripts/schemathesis.sh
  check "generated clients: redocly lint, openapi-python-client and openapi-typescript + openapi-fetch, type-checked journeys against the local server, every answer validated" \
    bash infra/scripts/generated-clients.sh
  check "the API reference page (/docs) in headless Chromium" \
    bash infra/scripts/check-docs-page.sh
  check "signed webhooks end to end, every delivery verified by the standardwebhooks package (PyPI)" \
    bash infra/scripts/webhooks-e2e.sh
fi

if [[ ${#failed[@]} -gt 0 ]]; then
  printf '==> failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "==> [$(($(date +%s) - started_at)) s] the side checks ($group) passed"
