# Sourced by the infra scripts: the repository's Python virtualenv `.venv/` (gitignored) with the
# deployment tools, each pinned and installed only when missing or at another version.
#
#   source infra/scripts/tools-venv.sh
#   tools_venv_require cfn-lint aws-sam-cli      # then use "$VENV/bin/cfn-lint", "$VENV/bin/sam"
#
# Needs python3 (3.9+) and access to PyPI on the first run; later runs install nothing. The
# DynamoDB tests' emulator (moto) lives in the same .venv/; the two sets of tools coexist.

VENV="${VENV:-$(pwd)/.venv}"

# Pinned versions: a new release of a linter must not turn the build red by itself. Bump on purpose.
# (A function rather than an associative array: macOS still ships bash 3.2.)
tools_pin() {
  case "$1" in
    cfn-lint) echo 1.58.0 ;;
    aws-sam-cli) echo 1.170.0 ;;
    cargo-lambda) echo 1.9.2 ;;
    schemathesis) echo 4.32.5 ;;
    standardwebhooks) echo 1.1.0 ;;
    openapi-python-client) echo 0.29.1 ;;
    mypy) echo 2.4.1 ;;
    openapi-schema-validator) echo 0.9.0 ;;
    *) echo "tools-venv.sh: no pinned version for $1" >&2; return 1 ;;
  esac
}

tools_venv_require() {
  if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV (python3 -m venv)"
    if ! python3 -m venv "$VENV"; then
      # Some distributions ship Python without the venv module: fall back to virtualenv (as
      # infra/scripts/emulator.sh does; both share this .venv/).
      rm -rf "$VENV"
      python3 -m pip install --quiet --user virtualenv
      python3 -m virtualenv --quiet "$VENV"
    fi
  fi
  local want=() name version installed
  for name in "$@"; do
    version="$(tools_pin "$name")"
    # `pip show` is slow; the installed distribution's metadata directory tells the version.
    installed=$(ls -d "$VENV"/lib/python3*/site-packages/"${name//-/_}"-*.dist-info 2>/dev/null | head -1 || true)
    if [ "${installed##*/}" != "${name//-/_}-${version}.dist-info" ]; then
      want+=("$name==$version")
    fi
  done
  if [ "${#want[@]}" -gt 0 ]; then
    echo "==> pip install ${want[*]} (into $VENV)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${want[@]}"
  fi
}
