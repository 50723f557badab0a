# Sourced by the infra scripts: the repository's Python virtualenv `.venv/` (gitignored) with the
# deployment tools, each pinned and installed only when missing or at another version.
#
#   source infra/scripts/tools-venv.sh
#   tools_venv_require cfn-lint aws-sam-cli      # then use "$VENV/bin/cfn-lint", "$VENV/bin/sam"
#   tools_venv_require 'moto[server]'            # a name may carry extras
#
# Needs python3 (3.9+) and access to PyPI on the first run; later runs install nothing. The
# DynamoDB tests' emulator (moto) lives in the same .venv/; the two sets of tools coexist.
#
# Installs with uv (Astral's Python package installer, itself pinned and installed into .venv/ by
# pip): the test command's whole set (moto, cfn-lint, the SAM CLI, schemathesis, ...) took pip
# about 150 s of CPU, most of it beside the Rust build on a 2-core machine, and uv about 25 s, with
# the same packages at the same versions (checked with `pip freeze`). Falls back to pip when uv
# cannot be installed or fails.

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
    moto) echo 5.2.5 ;;
    uv) echo 0.13.9 ;;
    *) echo "tools-venv.sh: no pinned version for $1" >&2; return 1 ;;
  esac
}

tools_venv_create() {
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
}

# Installs the given requirement specifiers (`name==version`, `name[extra]==version`) into .venv/
# with uv, or with pip when uv is not to be had or fails.
tools_venv_install() {
  tools_venv_create
  local uv_version
  uv_version="$(tools_pin uv)"
  if [ ! -x "$VENV/bin/uv" ] || [ "$("$VENV/bin/uv" --version 2>/dev/null)" != "uv $uv_version" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$uv_version" ||
      echo "tools-venv.sh: could not install uv; pip installs instead" >&2
  fi
  echo "==> installing $* (into $VENV)"
  # --native-tls: the system's certificate store, as pip uses it (a registry behind a proxy with
  # its own certificate authority).
  if [ -x "$VENV/bin/uv" ] &&
    "$VENV/bin/uv" pip install --quiet --native-tls --python "$VENV/bin/python" "$@"; then
    return 0
  fi
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

# Installs each named tool at its pinned version unless that version is already there.
tools_venv_require() {
  tools_venv_create
  local want=() name base version installed
  for name in "$@"; do
    base="${name%%[*}"
    version="$(tools_pin "$base")"
    # `pip show` is slow; the installed distribution's metadata directory tells the version.
    installed=$(ls -d "$VENV"/lib/python3*/site-packages/"${base//-/_}"-*.dist-info 2>/dev/null | head -1 || true)
    if [ "${installed##*/}" != "${base//-/_}-${version}.dist-info" ]; then
      want+=("$name==$version")
    fi
  done
  if [ "${#want[@]}" -gt 0 ]; then
    tools_venv_install "${want[@]}"
  fi
}
