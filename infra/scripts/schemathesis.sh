#!/usr/bin/env bash
# Runs schemathesis (PyPI) against the local server on the demo seed with a token of every scope:
# every operation of /openapi.json, the examples, coverage, fuzzing and stateful phases, every
# default check, bounded in time. Part of the README's test command (infra/scripts/test.sh).
#
#   bash infra/scripts/schemathesis.sh            # from the repository root
#   ST_MAX_TIME=600 bash infra/scripts/schemathesis.sh   # a longer run: fuzzing and stateful
#                                                        # testing repeat until 600 s are spent
#   ST_TARGETING=1 bash infra/scripts/schemathesis.sh    # with Hypothesis' targeting (off by
#                                                        # default: infra/schemathesis/hooks.py)
#
# Needs python3 and PyPI on the first run (schemathesis goes into .venv/), and cargo.
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=infra/scripts/tools-venv.sh
source infra/scripts/tools-venv.sh
tools_venv_require schemathesis

# Built once with the tests when infra/scripts/test.sh runs this (LOCAL_SERVER_PREBUILT=1).
[[ ${LOCAL_SERVER_PREBUILT:-} == 1 ]] || cargo build -q -p local-server
# shellcheck source=infra/scripts/local-server-address.sh
source infra/scripts/local-server-address.sh
log="$(mktemp)"
./target/debug/local-server --addr 127.0.0.1:0 >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -f "$log"' EXIT
base=$(local_server_address "$log" "$server")

token="$(curl -sf -X POST "$base/oauth2/token" -u 'northwind-integration:dev-secret-change-me' \
  -d grant_type=client_credentials \
  -d 'scope=service-api/read service-api/create service-api/update service-api/delete' |
  "$VENV/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')"

# The examples database lives in memory for one run: a `.hypothesis/` kept between runs made
# the same seed replay a saved example and fail hypothesis' health check on `POST /companies`
# ("minimum possible example is too large") where a fresh clone passes; every run is now the
# run CI makes.
# One worker: with two, the coverage phase once failed inside schemathesis itself (a KeyError in
# its generation caches shared between worker threads), not on the API.
# One pass of each phase, the same cases on every run (the seed above): `--max-time` is not a cap
# but a budget that fuzzing and stateful testing repeat until it is spent (schemathesis's own
# help), so a 240 s budget made the test command's single busiest CPU user run its fuzzing a
# second, partial time, a different partial pass on every machine. One pass took 135 s here
# (7,232 cases, all four phases; docs/performance.md, "The test command"); `timeout` ends a run
# that hangs, as a failure, not a pass. ST_MAX_TIME asks for a longer, repeating run.
export SCHEMATHESIS_HOOKS=hooks
# The hooks clean up what a case creates (webhook subscriptions) with the same token.
export ST_AUTHORIZATION="Bearer $token" ST_BASE_URL="$base"
export PYTHONPATH="$PWD/infra/schemathesis${PYTHONPATH:+:$PYTHONPATH}"
budget=()
[[ -n ${ST_MAX_TIME:-} ]] && budget=(--max-time "$ST_MAX_TIME")
timeout "${ST_TIMEOUT:-900}" "$VENV/bin/schemathesis" --config-file infra/schemathesis/schemathesis.toml run "$base/openapi.json" \
  --header "Authorization: Bearer $token" \
  --phases examples,coverage,fuzzing,stateful \
  --max-examples "${ST_MAX_EXAMPLES:-40}" \
  "${budget[@]}" \
  --workers 1 \
  --seed "${ST_SEED:-20261123}" \
  --generation-database ':memory:' \
  --report junit --report-dir target/schemathesis \
  --no-color
