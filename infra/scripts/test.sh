#!/usr/bin/env bash
# Runs every check and test of the workspace: formatting, clippy, and all test tiers
# (unit, store contract on both adapters, HTTP-level, end-to-end, DynamoDB against the emulator),
# the SAM template checks (sam validate --lint, with cfn-lint's rules; the template-check tests
# run with cargo),
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
export TEST_COMMAND_STARTED_AT=${TEST_COMMAND_STARTED_AT:-$(date +%s)}
# Each step is announced with the seconds spent so far, so a slow step shows in the CI log, and
# with the CPU seconds the whole machine has spent since the command started (user and system
# time of every process not lowered with `nice`, from /proc/stat): on two cores a step that adds
# about two CPU seconds per second keeps the machine busy, one that adds fewer waits on something.
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '/^cpu / { printf "%d", ($2 + $4 + $7 + $8) / hz }' /proc/stat 2>/dev/null || echo 0
}
cpu_started=$(cpu_seconds)
step() { echo "==> [$((SECONDS - started)) s, CPU $(($(cpu_seconds) - cpu_started)) s] $*"; }

# On CI (a fresh clone, built once) incremental compilation only costs: its caches took 8.4 GB of
# a 18 GB target/ here, and a fresh clone never reuses them. Nor are the line tables of the
# workspace's own code worth their time there (the profile's `debug = "line-tables-only"`, for
# backtraces with file and line; a panic's message names its file and line without them):
# measured, the workspace's crates built in 199-208 s without them and 219-244 s with them.
# Developers keep cargo's defaults and the profile's line tables.
if [[ -n "${CI:-}" ]]; then
  export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=0
fi

step "the repository stands alone (no tracked file refers to a path, document or tracker outside it)"
python3 infra/scripts/check-self-contained.py

step "every target built without a test harness holds no test (infra/scripts/check-test-targets.py)"
python3 infra/scripts/check-test-targets.py

step "cargo fmt --check"
cargo fmt --all -- --check

step "installing the test tools in the background, then the side checks that need only them (log: target/install-test-tools.log, target/side-checks-tools.log)"
mkdir -p target
tools_log=target/install-test-tools.log
# Exit status 3: the tools could not be installed (nothing after the build can run); 4: they were,
# and a check of the `tools` group failed (the rest runs, and the command fails at the end).
setsid bash -c 'bash infra/scripts/install-test-tools.sh >"$1" 2>&1 || exit 3
  bash infra/scripts/side-checks.sh tools >"$2" 2>&1 || exit 4' _ "$tools_log" target/side-checks-tools.log &
tools_pid=$!
trap 'kill -- "-$tools_pid" 2>/dev/null || true' EXIT

# One build of every target (libraries, binaries, tests, benches), linted by clippy as it compiles:
# cargo runs clippy-driver (clippy's compiler driver, the one `cargo clippy` runs) for the
# workspace's own crates through RUSTC_WORKSPACE_WRAPPER, with the lints `cargo clippy
# --all-targets -- -D warnings` applies (CLIPPY_ARGS, clippy's variable for its arguments) and
# the same clippy.toml; dependencies compile with plain rustc, once. A separate `cargo clippy`
# would first check every dependency again in check mode: measured on a fresh clone, clippy 355 s
# plus the test build 350 s before, this one build 485 s (docs/performance.md, "The test
# command"). The variables stay exported so that every later cargo call reuses this build.
clippy_driver="$(rustc --print sysroot)/bin/clippy-driver"
if [[ ! -x $clippy_driver ]]; then
  echo "clippy is missing: rustup component add clippy" >&2
  exit 1
fi
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver" CLIPPY_ARGS="-Dwarnings"
step "building every target (libraries, binaries, tests, benches) with clippy's lints, warnings as errors"
# One job more than the cores: a crate's front end (parsing, type checking, clippy's lints) runs on
# one core, and with one job per core the build left a core idle about a seventh of its time
# (docs/performance.md, "The test command").
cargo build --workspace --all-targets --locked --jobs "$(($(nproc) + 1))"

# About a second, no build: every member inherits the workspace's rust-version and no locked
# dependency needs a newer Rust (clippy's incompatible_msrv lint, in the build above, holds the
# code's own use of the standard library to it; docs/decisions.md, "The Rust version").
step "rust-version states what the build needs (infra/scripts/check-rust-version.py)"
python3 infra/scripts/check-rust-version.py
if cargo nextest --version >/dev/null 2>&1; then
  runner=nextest
else
  runner=cargo-test
  echo "cargo-nextest is missing: the tests run under cargo test"
fi

# The scripts below start target/debug/local-server as built here; a `cargo build -p local-server`
# of their own would compile the crates again without the tests' features.
export LOCAL_SERVER_PREBUILT=1

step "waiting for the test tools and the side checks that need only them (log: $tools_log)"
tools_status=0
wait "$tools_pid" || tools_status=$?
if [[ $tools_status != 0 && $tools_status != 4 ]]; then
  cat "$tools_log" >&2
  echo "installing the test tools failed" >&2
  exit 1
fi

# The checks that need a local server but neither the emulator nor the Rust tests (schemathesis,
# the generated clients, the /docs page in Chromium, the signed webhooks end to end: Python, Node
# and a browser, about 250 s of mostly one core) run one after another beside the Rust tests,
# which leave part of the machine idle while they wait on the emulator and on timers; their log
# is printed when they have ended, after the tests.
step "the side checks that need a local server, started in the background (infra/scripts/side-checks.sh server, log: target/side-checks.log)"
setsid bash infra/scripts/side-checks.sh server >target/side-checks.log 2>&1 &
side_checks_pid=$!
trap 'kill -- "-$side_checks_pid" "-$tools_pid" 2>/dev/null || true' EXIT

step "starting the DynamoDB/SQS emulator (moto), cancelling transactions that meet as DynamoDB does"
# Every DynamoDB test, the smoke test and the suites against the local server below run with
# DynamoDB's transaction conflicts (infra/emulator/transactions.py), whatever the caller's
# environment says.
export EMULATOR_TRANSACTION_CONFLICTS=1
# shellcheck source=infra/scripts/emulator.sh
source infra/scripts/emulator.sh
trap 'emulator_stop; kill -- "-$side_checks_pid" "-$tools_pid" 2>/dev/null || true' EXIT

if [[ $runner == nextest ]]; then
  step "cargo nextest run (every test in a process of its own, binaries in parallel; DynamoDB tests on $AWS_ENDPOINT_URL, each on a table of its own)"
  # Two tests per core: many wait on the emulator or on timers (measured on a fresh clone, 509 s
  # with nextest's default of one per core, 415 s with two). Three per core took 346 s against
  # 370 s, but starved a worker long enough that a due-work commit gave up on its deadline and a
  # webhook delivery was sent once more than it was recorded (docs/performance.md).
  cargo nextest run --workspace --locked --test-threads "$(($(nproc) * 2))"
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

step "the side checks (started before and after the build; their logs follow)"
side_checks_status=0
wait "$side_checks_pid" || side_checks_status=$?
cat target/side-checks-tools.log target/side-checks.log
if [[ $tools_status != 0 || $side_checks_status != 0 ]]; then
  echo "the side checks failed (tools group: exit $tools_status, server group: exit $side_checks_status): see their logs above" >&2
  exit 1
fi

step "mixed load against the local server (wrk, loopback, 2 x 5 s; no 5xx, no transport error, memory steady)"
bash infra/scripts/load.sh

if [[ $runner == nextest ]]; then
  step "the slowest tests"
  python3 infra/scripts/slowest-tests.py target/nextest/default/junit.xml 10
fi
echo "==> all checks passed in $((SECONDS - started)) s (CPU $(($(cpu_seconds) - cpu_started)) s, every process of the machine)"
