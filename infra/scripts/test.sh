#!/usr/bin/env bash
# Runs every check and test of the workspace: formatting, clippy, and all test tiers
# (unit, store contract on both adapters, HTTP-level, end-to-end, DynamoDB against the emulator),
# the SAM template checks (cfn-lint, sam validate --lint; the template-check tests run with cargo),
# schemathesis against the local server's OpenAPI document, clients generated from that document
# (Python and TypeScript) running a journey against it, a bounded mixed load (wrk), and the
# /docs page in headless Chromium (chromium and wrk installed from Debian's packages when missing).
# This is the README's test command; .ci/run calls it. Needs the Rust toolchain, Python 3 and pip:
# moto (the AWS emulator) is installed into .venv/ on the first run and reused afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$SECONDS
# Each step is announced with the seconds spent so far, so a slow step shows in the CI log.
step() { echo "==> [$((SECONDS - started)) s] $*"; }

step "the repository stands alone (no tracked file refers to a path outside it)"
python3 infra/scripts/check-self-contained.py

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "benchmarks build (run them with cargo bench; figures in docs/performance.md)"
cargo build --workspace --benches --locked

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

step "cargo test (DynamoDB tests on $AWS_ENDPOINT_URL, each on a table of its own)"
cargo test --workspace --locked

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

echo "==> all checks passed in $((SECONDS - started)) s"
