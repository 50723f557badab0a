#!/usr/bin/env bash
# Runs every check and test of the workspace: formatting, clippy, and all test tiers
# (unit, store contract on both adapters, HTTP-level, end-to-end, DynamoDB against the emulator),
# the SAM template checks (cfn-lint, sam validate --lint; the template-check tests run with cargo),
# schemathesis against the local server's OpenAPI document, clients generated from that document
# (Python and TypeScript) running a journey against it, a bounded mixed load (wrk), and the
# /docs page in headless Chromium (chromium and wrk installed from Debian's packages when missing).
# This is the README's test command; .ci/run calls it. Needs the Rust toolchain with cargo-nextest
# (`cargo test` when nextest is missing), Python 3 with pip, Node.js with npm: the tools are
# installed on the first run (infra/scripts/install-test-tools.sh, in the background while cargo
# builds) and reused afterwards. Ends with the ten slowest tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$SECONDS
# Each step is announced with the seconds spent so far, so a slow step shows in the CI log.
step() { echo "==> [$((SECONDS - started)) s] $*"; }

# On CI (a fresh clone, built once) incremental compilation only costs: its caches took 8.4 GB of
# a 18 GB target/ here, and a fresh clone never reuses them. Developers keep cargo's default.
if [[ -n "${CI:-}" ]]; then
  export CARGO_INCREMENTAL=0
fi

step "the repository stands alone (no tracked file refers to a path outside it)"
python3 infra/scripts/check-self-contained.py

step "cargo fmt --check"
cargo fmt --all -- --check

step "installing the test tools in the background (moto, linters, schemathesis, client generators, npm packages, chromium, wrk)"
mkdir -p target
tools_log=target/install-test-tools.log
bash infra/scripts/install-test-tools.sh >"$tools_log" 2>&1 &
tools_pid=$!

# clippy --all-targets checks the benches too; `cargo bench` builds them when they are run.
step "cargo clippy (every target, benches included)"
cargo clippy --workspace --all-targets --locked -- -D warnings

# One build of the test binaries and of local-server (with the features the tests unify), used by
# every later step.
if cargo nextest --version >/dev/null 2>&1; then
  runner=nextest
  step "building the tests (cargo nextest run --no-run)"
  cargo nextest run --workspace --locked --no-run
else
  runner=cargo-test
  step "building the tests (cargo test --no-run; cargo-nextest is missing)"
  cargo test --workspace --locked --no-run
fi

# The scripts below start target/debug/local-server as built here; a `cargo build -p local-server`
# of their own would compile the crates again without the tests' features.
export LOCAL_SERVER_PREBUILT=1

step "waiting for the test tools (log: $tools_log)"
if ! wait "$tools_pid"; then
  cat "$tools_log" >&2
  echo "installing the test tools failed" >&2
  exit 1
fi

step "SAM template checks (cfn-lint, sam validate --lint)"
bash infra/scripts/check-template.sh

step "starting the DynamoDB/SQS emulator (moto), cancelling transactions that meet as DynamoDB does"
# Every DynamoDB test, the smoke test and the suites against the local server below run with
# DynamoDB's transaction conflicts (infra/emulator/transactions.py), whatever the caller's
# environment says.
export EMULATOR_TRANSACTION_CONFLICTS=1
# shellcheck source=infra/scripts/emulator.sh
source infra/scripts/emulator.sh
trap emulator_stop EXIT

step "the emulator refuses what DynamoDB refuses (key sizes, item size, transaction and batch limits, transaction conflicts) and answers as moto does"
"$_emulator_root/.venv/bin/python" -m unittest discover -s infra/emulator -p 'test_*.py'

if [[ $runner == nextest ]]; then
  step "cargo nextest run (every test in a process of its own, binaries in parallel; DynamoDB tests on $AWS_ENDPOINT_URL, each on a table of its own)"
  cargo nextest run --workspace --locked
  # nextest does not run doctests; the workspace's doc comments hold no Rust examples, and this
  # keeps it so (a Rust example added to a doc comment runs here).
  step "doctests (cargo test --doc)"
  cargo test --workspace --locked --doc
else
  step "cargo test (DynamoDB tests on $AWS_ENDPOINT_URL, each on a table of its own)"
  cargo test --workspace --locked
fi

step "deployment smoke test (infra/scripts/smoke.sh) against the local server on DynamoDB (emulator)"
bash infra/scripts/smoke-local.sh

step "signed webhooks end to end, every delivery verified by the standardwebhooks package (PyPI)"
bash infra/scripts/webhooks-e2e.sh

step "schemathesis against the local server (every operation of /openapi.json, every default check)"
bash infra/scripts/schemathesis.sh

step "generated clients: redocly lint, openapi-python-client and openapi-typescript + openapi-fetch, type-checked journeys against the local server, every answer validated"
bash infra/scripts/generated-clients.sh

step "mixed load against the local server (wrk, loopback, 2 x 5 s; no 5xx, no transport error, memory steady)"
bash infra/scripts/load.sh

step "the API reference page (/docs) in headless Chromium"
bash infra/scripts/check-docs-page.sh

if [[ $runner == nextest ]]; then
  step "the slowest tests"
  python3 infra/scripts/slowest-tests.py target/nextest/default/junit.xml 10
fi
echo "==> all checks passed in $((SECONDS - started)) s"
