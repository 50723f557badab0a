#!/usr/bin/env bash
# Runs every check and test of the workspace: formatting, clippy, and all test tiers
# (unit, store contract, HTTP-level, end-to-end). This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/../.."

echo "==> cargo fmt --check"
cargo fmt --all -- --check

echo "==> cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "==> cargo test"
cargo test --workspace --locked
