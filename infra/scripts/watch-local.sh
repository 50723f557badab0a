#!/usr/bin/env bash
# Runs every Lambda function locally WITHOUT Docker: `cargo lambda watch` emulates the Lambda
# runtime API on 127.0.0.1:9000 and builds / restarts a function when its code changes. Invoke
# with infra/scripts/invoke-local.sh (or `cargo lambda invoke <function> --data-file <event>`).
#
# Configuration (as the functions read it at cold start; override any of them in the environment):
#   STORE_BACKEND=memory, SEED_PATH=infra/seed/demo.json   each function loads its own embedded
#                                                          store from the demo seed (writes are not
#                                                          shared between functions)
#   JWT_SIGNING_KEY_PEM   the development key (token function), shared/dev-keys/dev-signing-key.pem
#   JWT_PUBLIC_JWKS       its public JWKS (every other function), from the `jwks` helper
#   ALLOW_DEVELOPMENT_SIGNING_KEY=true   set when either of the two above is the development
#                         key: without it the functions refuse to start with that key (it is
#                         committed, so anyone can sign tokens with it)
#   CURSOR_SECRET         (STORE_BACKEND=dynamodb only) 32+ bytes signing list cursors; the memory
#                         store uses a random key per function
# Extra arguments go to `cargo lambda watch` (e.g. --invoke-port 9001).
set -euo pipefail
cd "$(dirname "$0")/../.."
source infra/scripts/tools-venv.sh
tools_venv_require cargo-lambda
export PATH="$VENV/bin:$PATH"

export STORE_BACKEND="${STORE_BACKEND:-memory}"
export SEED_PATH="${SEED_PATH:-$PWD/infra/seed/demo.json}"
if [ -z "${JWT_SIGNING_KEY_PEM:-}" ]; then
  JWT_SIGNING_KEY_PEM="$(cat shared/dev-keys/dev-signing-key.pem)"
  export JWT_SIGNING_KEY_PEM ALLOW_DEVELOPMENT_SIGNING_KEY=true
fi
if [ -z "${JWT_PUBLIC_JWKS:-}" ]; then
  echo "==> JWT_PUBLIC_JWKS from the development key (cargo run -p local-server --bin jwks)"
  JWT_PUBLIC_JWKS="$(cargo run -q -p local-server --bin jwks)"
  export JWT_PUBLIC_JWKS ALLOW_DEVELOPMENT_SIGNING_KEY=true
fi
export RUST_LOG="${RUST_LOG:-info}"

echo "==> cargo lambda watch $* (functions: token records users routers dispatch)"
exec cargo lambda watch "$@"
