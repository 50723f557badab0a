#!/usr/bin/env bash
# Generated clients work from openapi.json, as an integrator would use them
# (docs/decisions.md, "API description"):
#   1. `@redocly/cli lint` with its recommended rules, every problem an error
#      (infra/clients/redocly.yaml: `info-license` alone off, with its reason);
#   2. starts the local server (embedded store, demo seed) on a free loopback port;
#   3. generates a Python client from its GET /openapi.json with `openapi-python-client` at its
#      default settings, and TypeScript types with `openapi-typescript` (for `openapi-fetch`),
#      both into infra/clients/generated/ (gitignored); fails when either prints a warning;
#   4. type-checks the journeys: `mypy --strict` on infra/clients/journey.py, `tsc --noEmit
#      --strict` on infra/clients/journey.ts (then transpiled for node);
#   5. runs both journeys against the server (token, a contact with a custom field, read, patch,
#      two pages with cursors, a deal and a ticket, a webhook, explain, dispatch, history, stats,
#      deliveries, a 400 and a 404 read into the error model);
#   6. checks every answer the journeys received against the document
#      (infra/clients/validate_responses.py, openapi-schema-validator).
# Part of the README's test command (infra/scripts/test.sh), after schemathesis. Installs
# openapi-python-client, mypy and openapi-schema-validator into .venv/ (infra/scripts/tools-venv.sh)
# and the npm packages of infra/clients/ (package-lock.json) on the first run; needs cargo,
# python3 with pip, and Node.js >= 20.19 with npm.
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$SECONDS
clients=infra/clients
generated=$clients/generated

die() {
  echo "generated-clients: FAILED: $*" >&2
  exit 1
}

# Fails when a generator's output ($1, a file) says "warning" about the document.
no_warning() {
  if grep -qi 'warn' "$1"; then
    cat "$1" >&2
    die "$2 printed a warning"
  fi
}

# --- tools -------------------------------------------------------------------------------------
# shellcheck source=infra/scripts/tools-venv.sh
source infra/scripts/tools-venv.sh
tools_venv_require openapi-python-client mypy openapi-schema-validator
# openapi-python-client formats what it generates with ruff, which it installs beside itself.
export PATH="$VENV/bin:$PATH"
for tool in node npm curl; do
  command -v "$tool" >/dev/null || die "$tool is needed (Node.js >= 20.19 with npm, curl)"
done
echo "==> npm ci in $clients (openapi-typescript, openapi-fetch, typescript, @redocly/cli)"
# Reinstall only when the lock file changed since the last install.
if [[ ! -f $clients/node_modules/.package-lock.json ||
  $clients/package-lock.json -nt $clients/node_modules/.package-lock.json ]]; then
  (cd "$clients" && npm ci --no-audit --no-fund --loglevel=error)
else
  echo "    up to date"
fi
bin=$clients/node_modules/.bin

# --- 1. lint -----------------------------------------------------------------------------------
echo "==> redocly lint openapi.json (recommended rules as errors, $clients/redocly.yaml)"
"$bin/redocly" lint openapi.json --config "$clients/redocly.yaml" 2>&1 |
  grep -v '║\|╔\|╚' || die "redocly lint found problems in openapi.json"

# --- 2. local server ---------------------------------------------------------------------------
# Built once with the tests when infra/scripts/test.sh runs this (LOCAL_SERVER_PREBUILT=1).
[[ ${LOCAL_SERVER_PREBUILT:-} == 1 ]] || cargo build -q -p local-server
work=$(mktemp -d)
server=
cleanup() {
  if [[ -n $server ]]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=infra/scripts/local-server-address.sh
source infra/scripts/local-server-address.sh
: >"$work/server.log"
"${CARGO_TARGET_DIR:-target}/debug/local-server" --addr 127.0.0.1:0 >"$work/server.log" 2>&1 </dev/null &
server=$!
base=$(local_server_address "$work/server.log" "$server") || die "the local server did not start"
curl -sf "$base/openapi.json" -o "$work/openapi.json" || die "$base/openapi.json does not answer"
echo "    local server on $base"

# --- 3. generate -------------------------------------------------------------------------------
rm -rf "$generated"
mkdir -p "$generated/typescript"
echo "==> openapi-python-client generate --url $base/openapi.json (default settings)"
(cd "$generated" && openapi-python-client generate --url "$base/openapi.json" --output-path python) \
  >"$work/python-generator.log" 2>&1 || { cat "$work/python-generator.log" >&2; die "openapi-python-client"; }
no_warning "$work/python-generator.log" openapi-python-client
echo "==> openapi-typescript $base/openapi.json (default settings)"
"$bin/openapi-typescript" "$base/openapi.json" -o "$generated/typescript/schema.d.ts" \
  >"$work/typescript-generator.log" 2>&1 || { cat "$work/typescript-generator.log" >&2; die "openapi-typescript"; }
no_warning "$work/typescript-generator.log" openapi-typescript

# --- 4. type-check -----------------------------------------------------------------------------
echo "==> mypy --strict $clients/journey.py"
MYPYPATH="$generated/python" mypy --strict --cache-dir "$generated/.mypy_cache" "$clients/journey.py" ||
  die "mypy --strict on the Python journey"
echo "==> tsc --noEmit --strict ($clients/journey.ts)"
"$bin/tsc" --noEmit --strict -p "$clients/tsconfig.json" || die "tsc --noEmit --strict on the TypeScript journey"
# Node 20 runs no TypeScript: the checked file is transpiled alone (types erased, no second check).
(cd "$clients" && node -e '
  const ts = require("typescript"), fs = require("node:fs");
  const out = ts.transpileModule(fs.readFileSync("journey.ts", "utf8"), {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
  });
  fs.mkdirSync("generated/ts-build", { recursive: true });
  fs.writeFileSync("generated/ts-build/journey.js", out.outputText);
') || die "transpiling the TypeScript journey"

# --- 5. journeys -------------------------------------------------------------------------------
answers=$generated/answers.jsonl
: >"$answers"
echo "==> the Python journey (infra/clients/journey.py) against $base"
PYTHONPATH="$generated/python" timeout 120 "$VENV/bin/python" "$clients/journey.py" "$base" "$answers" ||
  die "the Python journey"
echo "==> the TypeScript journey (infra/clients/journey.ts) against $base"
timeout 120 node "$generated/ts-build/journey.js" "$base" "$answers" || die "the TypeScript journey"

# --- 6. every answer against the document -------------------------------------------------------
echo "==> every answer the journeys received, validated against the served openapi.json"
"$VENV/bin/python" "$clients/validate_responses.py" "$work/openapi.json" "$answers" ||
  die "answers that do not match the document"
if grep -q panicked "$work/server.log"; then
  grep -B2 -A10 panicked "$work/server.log" >&2
  die "the local server panicked"
fi

echo "generated clients OK: redocly lint clean, both generators without a warning, both journeys type-checked and passed, every answer matches the document, in $((SECONDS - started)) s"
