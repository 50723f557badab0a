#!/usr/bin/env bash
# Checks the interactive API reference (Swagger UI at GET /docs/, reading GET /openapi.json) in a
# real browser, as a person would use it, because the Rust tests only see the HTTP answers, not
# whether the page renders and its "Authorize" / "Try it out" work:
#   1. starts the local server (embedded store, demo data) on a free loopback port;
#   2. headless Debian chromium renders /docs/: saves the overview screenshot to
#      docs/images/api-docs.png (1280 px wide: title and first operations) and fails when fewer
#      than MIN_OPERATIONS operations (.opblock) render;
#   3. Playwright (playwright-core from infra/docs-check/, driving /usr/bin/chromium; no browser
#      download) runs the OAuth 2.0 client-credentials flow in the UI: Authorize with the prefilled
#      demo client and the service-api/read scope, then GET /users "Try it out" -> Execute must
#      render a 200 whose body has "pagination" (infra/docs-check/check.mjs).
# Installs Debian's chromium when /usr/bin/chromium is missing; needs cargo, node >= 20 and npm.
# Run from anywhere: bash infra/scripts/check-docs-page.sh   (CI: CI=true, no stdin, as root)
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$SECONDS

MIN_OPERATIONS=${MIN_OPERATIONS:-20}
SCREENSHOT=docs/images/api-docs.png
CHROMIUM=/usr/bin/chromium
# Flags that keep headless chromium off the network and quiet in a container.
CHROMIUM_FLAGS=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync)

work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

die() {
  echo "check-docs-page: FAILED: $*" >&2
  exit 1
}

# --- tools -------------------------------------------------------------------------------------
if [[ ! -x $CHROMIUM ]]; then
  echo "==> installing Debian's chromium"
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  apt_get=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q)
  if ! "${apt_get[@]}" install -y chromium; then
    "${apt_get[@]}" update
    "${apt_get[@]}" install -y chromium
  fi
fi
[[ -x $CHROMIUM ]] || die "$CHROMIUM is still missing after installing chromium"
for tool in node npm curl; do
  command -v "$tool" >/dev/null || die "$tool is needed (Node.js >= 20 with npm, curl)"
done

echo "==> npm ci in infra/docs-check (playwright-core, no browser download)"
# Reinstall only when the lock file changed since the last install.
if [[ ! -f infra/docs-check/node_modules/.package-lock.json ||
  infra/docs-check/package-lock.json -nt infra/docs-check/node_modules/.package-lock.json ]]; then
  (cd infra/docs-check && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
else
  echo "    up to date"
fi

# --- local server ------------------------------------------------------------------------------
echo "==> cargo build -p local-server"
# Built once with the tests when infra/scripts/test.sh runs this (LOCAL_SERVER_PREBUILT=1).
[[ ${LOCAL_SERVER_PREBUILT:-} == 1 ]] || cargo build -q -p local-server
server_bin=${CARGO_TARGET_DIR:-target}/debug/local-server

# shellcheck source=infra/scripts/local-server-address.sh
source infra/scripts/local-server-address.sh
: >"$work/server.log"
"$server_bin" --addr 127.0.0.1:0 >"$work/server.log" 2>&1 </dev/null &
server_pid=$!
base=$(local_server_address "$work/server.log" "$server_pid") || die "local-server did not start"
status=
for _ in $(seq 100); do
  status=$(curl -sS -o "$work/openapi.json" -w '%{http_code}' "$base/openapi.json" 2>/dev/null || true)
  [[ $status == 200 ]] && break
  sleep 0.1
done
[[ $status == 200 ]] || die "$base/openapi.json does not answer 200 (got '${status:-no answer}')"
[[ -s $work/openapi.json ]] || die "$base/openapi.json answers an empty body (built while openapi.json was being regenerated?)"
echo "    local-server (pid $server_pid) answering on $base"
title=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).info.title)' "$work/openapi.json")

# --- overview: screenshot and operation count ---------------------------------------------------
echo "==> headless chromium: $base/docs/"
mkdir -p "$(dirname "$SCREENSHOT")"
rm -f "$SCREENSHOT"
run_chromium() { # each run gets a fresh profile; chromium's own chatter goes to a log
  timeout 90 "$CHROMIUM" "${CHROMIUM_FLAGS[@]}" --user-data-dir="$(mktemp -d -p "$work")" \
    --virtual-time-budget=20000 "$@" 2>>"$work/chromium.log"
}
run_chromium --hide-scrollbars --window-size=1280,1600 --screenshot="$SCREENSHOT" "$base/docs/" >/dev/null ||
  { cat "$work/chromium.log" >&2; die "chromium --screenshot failed"; }
[[ -s $SCREENSHOT ]] || { cat "$work/chromium.log" >&2; die "no screenshot written"; }
# PNG width and height: big-endian 32-bit integers at bytes 16 and 20.
read -r width height < <(od -An -tu1 -j16 -N8 "$SCREENSHOT" |
  awk '{ print $1*16777216 + $2*65536 + $3*256 + $4, $5*16777216 + $6*65536 + $7*256 + $8 }')
echo "    screenshot $SCREENSHOT (${width}x${height})"

run_chromium --dump-dom "$base/docs/" >"$work/docs.html" ||
  { cat "$work/chromium.log" >&2; die "chromium --dump-dom failed"; }
operations=$(grep -o 'class="opblock opblock-[a-z]*' "$work/docs.html" | wc -l)
echo "    $operations operations rendered ($(grep -o 'class="opblock opblock-[a-z]*' "$work/docs.html" |
  sed 's/.*opblock-//' | sort | uniq -c | awk '{ printf "%s%s %s", sep, $1, toupper($2); sep=", " }'))"
((operations >= MIN_OPERATIONS)) || die "only $operations operations render on /docs/ (want >= $MIN_OPERATIONS)"
grep -qF "$title" "$work/docs.html" || die "the page does not show the API title \"$title\""

# --- the client-credentials flow in the browser ---------------------------------------------------
echo "==> Playwright: Authorize (client credentials) and Try it out GET /users"
timeout 180 node infra/docs-check/check.mjs "$base" || die "browser flow (infra/docs-check/check.mjs)"

echo "docs page OK: \"$title\" with $operations operations, screenshot $SCREENSHOT (${width}x${height}), client-credentials Authorize + GET /users Try it out -> 200, in $((SECONDS - started)) s"
