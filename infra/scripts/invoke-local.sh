#!/usr/bin/env bash
# Invokes one Lambda function locally WITHOUT Docker with an event file, through the
# `cargo lambda watch` of infra/scripts/watch-local.sh (start it first, in another terminal):
#
#   bash infra/scripts/invoke-local.sh records  events/records-get-contact.json
#   bash infra/scripts/invoke-local.sh dispatch events/sqs-dispatch-valid.json
#   bash infra/scripts/invoke-local.sh token    events/token-post.json
#
# The API Gateway events in events/ carry a placeholder bearer token. For every function but the
# token function, this first mints a live token through the local token function (the demo client
# northwind-integration, all four scopes) and sends a copy of the event with it. Prints the
# function's answer (for API events: statusCode, headers, body). INVOKE_PORT selects the port.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -ne 2 ]; then
  echo "usage: $0 <token|records|users|routers|dispatch> <events/file.json>" >&2
  exit 2
fi
function="$1"
event="$2"
[ -f "$event" ] || { echo "error: no event file $event" >&2; exit 2; }
source infra/scripts/tools-venv.sh
tools_venv_require cargo-lambda
export PATH="$VENV/bin:$PATH"
invoke=(cargo lambda invoke --invoke-port "${INVOKE_PORT:-9000}" --output-format json)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

needs_token=$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print("yes" if "authorization" in (e.get("headers") or {}) else "no")' "$event")
if [ "$needs_token" = yes ] && [ "$function" != token ]; then
  # The token request of events/token-post.json, asking for every scope.
  python3 - events/token-post.json "$tmp/token-request.json" <<'PY'
import json, sys, urllib.parse
event = json.load(open(sys.argv[1]))
form = dict(urllib.parse.parse_qsl(event["body"]))
form["scope"] = "service-api/read service-api/create service-api/update service-api/delete"
event["body"] = urllib.parse.urlencode(form)
event["headers"]["content-length"] = str(len(event["body"]))
json.dump(event, open(sys.argv[2], "w"))
PY
  "${invoke[@]}" token --data-file "$tmp/token-request.json" > "$tmp/token-answer.json"
  python3 - "$tmp/token-answer.json" "$event" "$tmp/event.json" <<'PY'
import base64, json, sys
answer = json.load(open(sys.argv[1]))
body = answer.get("body") or ""
if answer.get("isBase64Encoded"):
    body = base64.b64decode(body).decode()
if answer.get("statusCode") != 200:
    sys.exit(f"the token function answered {answer.get('statusCode')}: {body}")
token = json.loads(body)["access_token"]
event = json.load(open(sys.argv[2]))
event["headers"]["authorization"] = f"Bearer {token}"
json.dump(event, open(sys.argv[3], "w"))
print(f"==> live token minted by the local token function ({len(token)} chars)", file=sys.stderr)
PY
  event="$tmp/event.json"
fi

"${invoke[@]}" "$function" --data-file "$event" > "$tmp/answer.json"
python3 - "$tmp/answer.json" <<'PY'
import base64, json, sys
answer = json.load(open(sys.argv[1]))
if isinstance(answer, dict) and "statusCode" in answer:
    body = answer.get("body") or ""
    if answer.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    try:
        answer["body"] = json.loads(body)
    except ValueError:
        answer["body"] = body
print(json.dumps(answer, indent=2))
PY
