#!/usr/bin/env bash
# Installs every tool the test command (infra/scripts/test.sh) needs beyond the Rust toolchain,
# each only when missing, in the order and with the pins the scripts that use them ask for:
#   - moto[server] (the AWS emulator, infra/scripts/emulator.sh) and the pinned Python tools
#     (cfn-lint, aws-sam-cli, schemathesis, standardwebhooks, openapi-python-client, mypy,
#     openapi-schema-validator) into .venv/, in one resolution (infra/scripts/tools-venv.sh, with
#     uv: about 25 s of CPU where pip's four installs took 150 s beside the Rust build);
#   - the npm packages of infra/clients/ and infra/docs-check/ (npm ci, lock files);
#   - Debian's chromium and wrk (apt-get, one update at most).
# test.sh starts it in the background before clippy, so the downloads overlap the Rust build;
# every script still installs what it needs itself when run on its own. Idempotent: a second run
# installs nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=infra/scripts/tools-venv.sh
source infra/scripts/tools-venv.sh
# What each script asks for, in one resolution (they share .venv/ and coexist; the emulator's
# moto at the version infra/scripts/emulator.sh checks when it starts).
tools_venv_require 'moto[server]' cfn-lint aws-sam-cli standardwebhooks schemathesis \
  openapi-python-client mypy openapi-schema-validator

# npm ci only when the lock file changed since the last install (as the scripts do).
npm_ci() {
  local dir=$1
  if [[ ! -f $dir/node_modules/.package-lock.json ||
    $dir/package-lock.json -nt $dir/node_modules/.package-lock.json ]]; then
    echo "==> npm ci in $dir"
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
  fi
}
npm_ci infra/clients
npm_ci infra/docs-check

missing=()
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
command -v wrk >/dev/null || missing+=(wrk)
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "==> installing Debian's ${missing[*]}"
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  apt_get=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q)
  if ! "${apt_get[@]}" install -y "${missing[@]}"; then
    "${apt_get[@]}" update
    "${apt_get[@]}" install -y "${missing[@]}"
  fi
fi
echo "==> test tools installed"
