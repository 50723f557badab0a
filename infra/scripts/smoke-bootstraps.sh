#!/usr/bin/env bash
# Smoke test of the built Lambda artifacts (target/lambda/<bin>/bootstrap from build-lambdas.sh)
# configured as template.yaml configures them in AWS, without AWS and without Docker:
#
#   - moto (infra/scripts/emulator.sh) plays DynamoDB, Secrets Manager and KMS; the table is
#     created from infra/table.json and loaded with the demo seed (provision, the CRM token sealed
#     with a KMS key); the cursor key is read from a secret (CURSOR_SECRET_ARN);
#   - the signing key is read from a Secrets Manager secret (JWT_SIGNING_KEY_SECRET_ARN), the other
#     functions verify with the public JWKS, STORE_BACKEND=dynamodb, TABLE_NAME; the key is the
#     development key, so every function gets ALLOW_DEVELOPMENT_SIGNING_KEY=true (which a
#     deployment never sets: without it the functions refuse to start with that key);
#   - `cargo lambda watch --only-lambda-apis` plays the Lambda runtime API; each bootstrap is run
#     against it in turn and invoked with files of events/.
#
# arm64 artifacts run under qemu-aarch64 on an x86_64 machine (Debian: apt-get install qemu-user
# libc6-arm64-cross). Usage: bash infra/scripts/smoke-bootstraps.sh   (PORT=9100 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
PORT="${PORT:-9100}"

for bin in token records dispatch; do
  [ -f "target/lambda/$bin/bootstrap" ] || {
    echo "error: target/lambda/$bin/bootstrap missing: run infra/scripts/build-lambdas.sh" >&2
    exit 1
  }
done
machine=$(python3 -c 'import sys; d=open(sys.argv[1],"rb").read(20); print({0xB7:"arm64",0x3E:"x86_64"}.get(int.from_bytes(d[18:20],"little"),"unknown"))' target/lambda/records/bootstrap)
runner=()
if [ "$machine" = arm64 ] && [ "$(uname -m)" != aarch64 ]; then
  command -v qemu-aarch64 >/dev/null && [ -d /usr/aarch64-linux-gnu ] || {
    echo "error: arm64 artifacts on $(uname -m): install qemu-user and libc6-arm64-cross" >&2
    exit 1
  }
  runner=(env QEMU_LD_PREFIX=/usr/aarch64-linux-gnu qemu-aarch64)
fi
echo "==> smoke test of the $machine bootstraps in target/lambda"

source infra/scripts/tools-venv.sh
tools_venv_require cargo-lambda
# shellcheck source=infra/scripts/emulator.sh
source infra/scripts/emulator.sh

work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  emulator_stop
  rm -rf "$work"
}
trap cleanup EXIT

export TABLE_NAME="smoke-$RANDOM"
read -r ARN CURSOR_ARN KEY_ID < <("$VENV/bin/python" - <<'PY'
import boto3, os
endpoint = os.environ["AWS_ENDPOINT_URL"]
sm = boto3.client("secretsmanager", endpoint_url=endpoint)
secret = sm.create_secret(Name="account-routing/smoke/jwt-signing-key")
sm.put_secret_value(SecretId=secret["ARN"], SecretString=open("shared/dev-keys/dev-signing-key.pem").read())
cursor = sm.create_secret(Name="account-routing/smoke/cursor", SecretString="smoke-test-cursor-secret-of-at-least-32-bytes")
key = boto3.client("kms", endpoint_url=endpoint).create_key()["KeyMetadata"]["KeyId"]
print(secret["ARN"], cursor["ARN"], key)
PY
)
# As in a deployment: the CRM token sealed with the KMS key; the demo's CRM is a local fake.
SEALING_KMS_KEY_ID="$KEY_ID" ALLOW_INSECURE_OUTBOUND=true \
  cargo run -q -p provision -- --seed infra/seed/demo.json --create-table --development-sealing
JWKS="$(cargo run -q -p local-server --bin jwks)"

"$VENV/bin/cargo-lambda" lambda watch --only-lambda-apis --invoke-port "$PORT" >"$work/watch.log" 2>&1 &
pids+=($!)
# Ready when its port accepts a connection (not after a guessed pause: a loaded machine starts
# it late).
for _ in $(seq 1 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  kill -0 "${pids[-1]}" 2>/dev/null || { cat "$work/watch.log" >&2; exit 1; }
  sleep 0.1
done

current=""
start() { # start <bin> <VAR=value>...: the bootstrap as the one function of the runtime API
  [ -z "$current" ] || { kill "$current"; wait "$current" 2>/dev/null || true; }
  local bin=$1
  shift
  env AWS_LAMBDA_RUNTIME_API="http://[::]:$PORT/.rt" AWS_LAMBDA_FUNCTION_NAME=_ \
    AWS_LAMBDA_FUNCTION_VERSION=1 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512 \
    STORE_BACKEND=dynamodb ALLOW_DEVELOPMENT_SIGNING_KEY=true "$@" "${runner[@]}" "target/lambda/$bin/bootstrap" >"$work/$bin.log" 2>&1 &
  current=$!
  pids+=("$current")
  sleep 2
}
invoke() { # invoke <event file> -> the answer on stdout
  "$VENV/bin/cargo-lambda" lambda invoke --invoke-port "$PORT" --output-format json --data-file "$1"
}
check() { # check <label> <python expression over `a` (the answer)> < answer
  "$VENV/bin/python" -c '
import base64, json, sys
a = json.load(sys.stdin)
if isinstance(a, dict) and isinstance(a.get("body"), str):
    body = base64.b64decode(a["body"]).decode() if a.get("isBase64Encoded") else a["body"]
    try: a["body"] = json.loads(body)
    except ValueError: a["body"] = body
ok = eval(sys.argv[2])
print(("ok    " if ok else "FAILED"), sys.argv[1])
sys.exit(0 if ok else 1)' "$1" "$2"
}
with_token() { # with_token <event> <out>: the event with a live bearer token
  "$VENV/bin/python" - "$1" "$2" "$TOKEN" <<'PY'
import json, sys
event = json.load(open(sys.argv[1]))
event["headers"]["authorization"] = "Bearer " + sys.argv[3]
json.dump(event, open(sys.argv[2], "w"))
PY
}

start token JWT_SIGNING_KEY_SECRET_ARN="$ARN"
"$VENV/bin/python" - events/token-post.json "$work/token.json" <<'PY'
import json, sys, urllib.parse
event = json.load(open(sys.argv[1]))
form = dict(urllib.parse.parse_qsl(event["body"]))
form["scope"] = "service-api/read service-api/update"
event["body"] = urllib.parse.urlencode(form)
json.dump(event, open(sys.argv[2], "w"))
PY
invoke "$work/token.json" >"$work/token-answer.json"
check "token: 200 with a key read from Secrets Manager" \
  'a["statusCode"] == 200 and a["body"]["token_type"] == "Bearer"' <"$work/token-answer.json"
TOKEN=$("$VENV/bin/python" -c 'import json,sys; print(json.loads(json.load(open(sys.argv[1]))["body"])["access_token"])' "$work/token-answer.json")

start records JWT_PUBLIC_JWKS="$JWKS" CURSOR_SECRET_ARN="$CURSOR_ARN"
with_token events/records-get-contact.json "$work/get.json"
invoke "$work/get.json" | check "records: GET /contacts/{id} from DynamoDB" \
  'a["statusCode"] == 200 and a["body"]["contact_owner"] is None'
invoke events/default-not-found.json | check "records: \$default answers the contract's 404" \
  'a["statusCode"] == 404 and a["body"] == {"message": "Not found", "error": True}'

start dispatch JWT_PUBLIC_JWKS="$JWKS" SEALING_KMS_KEY_ID="$KEY_ID"
invoke events/sqs-dispatch-valid.json | check "dispatch: SQS batch assigned" 'a["batchItemFailures"] == []'
invoke events/sqs-dispatch-valid.json | check "dispatch: redelivery is not an error" 'a["batchItemFailures"] == []'
invoke events/sqs-dispatch-invalid.json | check "dispatch: invalid bodies reported failed" \
  'len(a["batchItemFailures"]) == 2'

start records JWT_PUBLIC_JWKS="$JWKS" CURSOR_SECRET_ARN="$CURSOR_ARN"
invoke "$work/get.json" | check "records: the owner the dispatch assigned" \
  'a["statusCode"] == 200 and a["body"]["contact_owner"] == "ana.lopez@northwind.example"'

if grep -q '"key_source":"secrets-manager"' "$work/token.log"; then
  echo "ok     token: key_source secrets-manager"
else
  echo "FAILED token: key_source secrets-manager"; exit 1
fi
if [ "$(grep -c '"outcome":"assigned"' "$work/dispatch.log")" = 1 ]; then
  echo "ok     dispatch: assigned exactly once"
else
  echo "FAILED dispatch: assigned exactly once"; cat "$work/dispatch.log"; exit 1
fi
echo "==> smoke test passed"
