# Shared by the HTTP path's measurement scripts (bench-http.sh, profile-http.sh, count-http.sh),
# sourced, not run: installing a missing tool, the release builds they compare, the processes they
# start and stop, and the address a server prints when it listens.

# install_missing <command> <Debian package>: apt-get installs the package when the command is
# missing (sudo when not root).
install_missing() {
  command -v "$1" >/dev/null && return 0
  echo "==> apt-get install $2"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "$2" >/dev/null ||
    { $sudo apt-get update >/dev/null && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "$2" >/dev/null; }
}

# build_servers [cargo build args...]: the local server and the bare axum hello with the release
# profile, unless SKIP_BUILD=1 (the release binaries as they are).
build_servers() {
  [ "${SKIP_BUILD:-0}" = 1 ] && return 0
  echo "==> cargo build --release (local-server, hello-axum)"
  cargo build --release --locked "$@" --bin local-server --bin hello-axum
}

# A scratch directory in $work, and every process whose pid is added to `pids` killed on exit.
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# wait_for_address <log> [tries of 0.1 s, default 100] -> the http://127.0.0.1:port the server
# printed to its log; fails with the log when none came.
wait_for_address() {
  local addr
  for _ in $(seq 1 "${2:-100}"); do
    addr=$(grep -ao 'http://127\.0\.0\.1:[0-9]*' "$1" | head -1 || true)
    [ -n "$addr" ] && { echo "$addr"; return 0; }
    sleep 0.1
  done
  echo "error: no address in $1:" >&2
  cat "$1" >&2
  return 1
}
