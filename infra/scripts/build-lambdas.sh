#!/usr/bin/env bash
# Builds every Lambda function's `bootstrap` with cargo-lambda, for the template's architecture:
#
#   bash infra/scripts/build-lambdas.sh            # arm64 (template default); x86_64 if arm64 cannot be had
#   bash infra/scripts/build-lambdas.sh x86_64     # x86_64 on purpose
#   REQUIRE_ARM64=1 bash infra/scripts/build-lambdas.sh   # fail instead of falling back (release builds)
#   EXTRA_BINS=empty-lambda bash infra/scripts/build-lambdas.sh  # also these binaries (benchmarks)
#
# - cargo-lambda comes from PyPI into the repository's `.venv/` (`pip install cargo-lambda`: the
#   binary and the zig linker it cross-links with; no Docker), pinned in tools-venv.sh.
# - arm64 needs the Rust target aarch64-unknown-linux-gnu: added with rustup when missing. Where it
#   cannot be had (no rustup, no network to the Rust distribution server), this says so and builds
#   x86_64 instead; deploy those with `--parameter-overrides Architecture=x86_64`.
# - Output: target/lambda/<bin>/bootstrap for token, records, users, routers, dispatch, and each
#   one's size, raw and zipped (what Lambda stores). `sam build` does the same build itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck disable=SC2206 # EXTRA_BINS is a space-separated list of binary names
BINS=(token records users routers dispatch ${EXTRA_BINS:-})
ARM_TARGET=aarch64-unknown-linux-gnu
arch="${1:-arm64}"
case "$arch" in
  arm64 | x86_64) ;;
  *) echo "usage: $0 [arm64|x86_64]" >&2; exit 2 ;;
esac

source infra/scripts/tools-venv.sh
tools_venv_require cargo-lambda
# The venv's bin first: cargo finds `cargo-lambda` there, and cargo-lambda finds zig (ziglang).
export PATH="$VENV/bin:$PATH"
echo "==> $(cargo lambda --version)"

if [ "$arch" = arm64 ]; then
  if rustc --print sysroot >/dev/null 2>&1 \
    && [ -d "$(rustc --print sysroot)/lib/rustlib/$ARM_TARGET/lib" ]; then
    echo "==> Rust target $ARM_TARGET: installed"
  elif command -v rustup >/dev/null 2>&1 && {
    echo "==> rustup target add $ARM_TARGET"
    rustup target add "$ARM_TARGET"
  }; then
    echo "==> Rust target $ARM_TARGET: added"
  else
    if [ "${REQUIRE_ARM64:-0}" = 1 ]; then
      echo "error: the Rust target $ARM_TARGET cannot be installed here (REQUIRE_ARM64=1)" >&2
      exit 1
    fi
    cat >&2 <<EOF

  ****************************************************************************************
  * arm64 NOT BUILT: the Rust target $ARM_TARGET is not installed and
  * \`rustup target add $ARM_TARGET\` failed (no rustup, or no access to the Rust
  * distribution server). Building x86_64 instead. The template defaults to arm64: deploy
  * these artifacts with   sam deploy --parameter-overrides Architecture=x86_64
  * or build on a machine that can add the target (see docs/deploy.md).
  ****************************************************************************************

EOF
    arch=x86_64
  fi
fi

flag=--arm64
[ "$arch" = x86_64 ] && flag=--x86-64
bin_args=()
for bin in "${BINS[@]}"; do bin_args+=(--bin "$bin"); done

echo "==> cargo lambda build --release $flag ${bin_args[*]}"
started=$SECONDS
cargo lambda build --release "$flag" --locked "${bin_args[@]}"
echo "==> built in $((SECONDS - started)) s"

echo
"$VENV/bin/python" - "$arch" "${BINS[@]}" <<'PY'
import io, os, sys, zipfile
arch, bins = sys.argv[1], sys.argv[2:]
print(f"{'function':<10} {'arch':<7} {'bootstrap':>12} {'zipped':>12}")
for name in bins:
    path = f"target/lambda/{name}/bootstrap"
    if not os.path.isfile(path):
        sys.exit(f"error: {path} was not built")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(path, "bootstrap")
    raw, zipped = os.path.getsize(path), len(buf.getvalue())
    print(f"{name:<10} {arch:<7} {raw / 2**20:>8.2f} MiB {zipped / 2**20:>8.2f} MiB")
PY
