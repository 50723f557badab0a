#!/usr/bin/env bash
# Cold starts of every function against an empty lambda_http binary, side by side in one run
# (issue 14 goals 2 and 3; figures in docs/performance.md):
#
#   bash infra/scripts/bench-coldstart.sh            # RUNS=11 WARM=5; package sizes for arm64 too
#   SKIP_PACKAGES=1 bash infra/scripts/bench-coldstart.sh   # cold starts only (no arm64 build)
#   VARIANTS="records-opt-s=/tmp/s/release/records" SKIP_PACKAGES=1 bash infra/scripts/bench-coldstart.sh
#       # other builds of the records function in the same rounds (profile settings compared)
#
# - Builds the five functions and the yardstick (infra/baseline: empty-lambda) with the release
#   profile for this machine, and runs each against a local stand-in of the Lambda Runtime API
#   (infra/bench/coldstart.py), interleaved, RUNS times: init, first response, first and warm
#   invocation, cold CPU, cold and warm RSS, printed with their ratios to the empty function.
#   Beside them the floor (infra/baseline: dynamodb-lambda): AWS configuration, a DynamoDB
#   client and one GetItem during init, nothing else; what the AWS SDK and TLS alone cost.
# - Production configuration: STORE_BACKEND=dynamodb on the emulator (moto, infra/scripts/
#   emulator.sh) reached through a TLS endpoint (infra/bench/tls_front.py) with a certificate
#   of a test CA made here with openssl, which the functions trust through SSL_CERT_FILE; the
#   token function reads its key from Secrets Manager (the emulator, same endpoint). The TLS
#   column counts the connections each function opened during init and during its first
#   invocation (goal 3: 1/0, the connection is made during init).
# - Then (unless SKIP_PACKAGES=1) the arm64 packages as Lambda stores them (zipped bootstrap),
#   built with cargo-lambda by infra/scripts/build-lambdas.sh (cargo-lambda and zig into .venv/),
#   against the empty function's.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS="${RUNS:-11}"
WARM="${WARM:-5}"
FUNCTIONS=(token records users routers dispatch)

echo "==> cargo build --release (functions, the empty lambda_http yardstick and the DynamoDB floor)"
bins=()
for bin in "${FUNCTIONS[@]}" empty-lambda dynamodb-lambda; do bins+=(--bin "$bin"); done
cargo build --release --locked "${bins[@]}"

# shellcheck source=infra/scripts/emulator.sh
source infra/scripts/emulator.sh
work="$(mktemp -d)"
cleanup() {
  emulator_stop
  rm -rf "$work"
}
trap cleanup EXIT

export TABLE_NAME="coldstart-$RANDOM"
cargo run -q --locked -p provision -- --seed infra/seed/demo.json --create-table
JWKS="$(cargo run -q --locked -p local-server --bin jwks)"
SECRET_ARN=$("$_emulator_root/.venv/bin/python" - <<'PY'
import boto3, os
sm = boto3.client("secretsmanager", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
secret = sm.create_secret(Name="account-routing/bench/jwt-signing-key")
sm.put_secret_value(SecretId=secret["ARN"], SecretString=open("shared/dev-keys/dev-signing-key.pem").read())
print(secret["ARN"])
PY
)

# A test CA and a certificate for localhost signed by it: the TLS endpoint in front of moto.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench test CA" \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
  -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' >"$work/ext.cnf"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
  -days 2 -extfile "$work/ext.cnf" -out "$work/server.pem" 2>/dev/null

# The token request of the benchmark asks for every scope (dispatch needs update).
"$_emulator_root/.venv/bin/python" - events/token-post.json "$work/token.json" <<'PY'
import json, sys, urllib.parse
event = json.load(open(sys.argv[1]))
form = dict(urllib.parse.parse_qsl(event["body"]))
form["scope"] = "service-api/read service-api/create service-api/update service-api/delete"
event["body"] = urllib.parse.urlencode(form)
json.dump(event, open(sys.argv[2], "w"))
PY

upstream_port="${AWS_ENDPOINT_URL##*:}"
"$_emulator_root/.venv/bin/python" - "$work" "$upstream_port" "$JWKS" "$SECRET_ARN" <<'PY'
import json, os, sys
work, upstream_port, jwks, secret_arn = sys.argv[1:]
lambda_env = {
    "AWS_LAMBDA_FUNCTION_NAME": "bench", "AWS_LAMBDA_FUNCTION_VERSION": "1",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512", "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_SESSION_TOKEN": "test",
}
aws = dict(lambda_env, AWS_ENDPOINT_URL="https://localhost:{TLS_PORT}",
           SSL_CERT_FILE=f"{work}/ca.pem", STORE_BACKEND="dynamodb",
           TABLE_NAME=os.environ["TABLE_NAME"])
# The benchmark signs with the committed development key: the functions refuse it unless told.
verifying = dict(aws, JWT_PUBLIC_JWKS=jwks, ALLOW_DEVELOPMENT_SIGNING_KEY="true",
                 CURSOR_SECRET="bench-cursor-secret-of-at-least-32-bytes")
release = os.environ.get("CARGO_TARGET_DIR", "target") + "/release"
functions = [
    {"label": "empty-lambda", "binary": f"{release}/empty-lambda", "env": lambda_env,
     "event": "events/records-get-contact.json"},
    {"label": "dynamodb-lambda", "binary": f"{release}/dynamodb-lambda", "env": aws,
     "event": "events/records-get-contact.json"},
    {"label": "token", "binary": f"{release}/token", "event": f"{work}/token.json",
     "env": dict(aws, JWT_SIGNING_KEY_SECRET_ARN=secret_arn, ALLOW_DEVELOPMENT_SIGNING_KEY="true")},
    {"label": "records", "binary": f"{release}/records", "env": verifying,
     "event": "events/records-get-contact.json"},
    {"label": "users", "binary": f"{release}/users", "env": verifying, "event": "events/users-get.json"},
    {"label": "routers", "binary": f"{release}/routers", "env": verifying, "event": "events/routers-get.json"},
    {"label": "dispatch", "binary": f"{release}/dispatch", "env": verifying,
     "event": "events/dispatch-router.json"},
]
# VARIANTS="label=binary ...": other builds of the records function, run in the same interleaved
# rounds with the records function's configuration (build settings compared side by side).
for variant in os.environ.get("VARIANTS", "").split():
    label, binary = variant.split("=", 1)
    functions.append({"label": label, "binary": binary, "env": verifying,
                      "event": "events/records-get-contact.json"})
config = {
    "baseline": "empty-lambda", "functions": functions, "token_from": "token",
    "tls_front": {"cert": f"{work}/server.pem", "key": f"{work}/server.key",
                  "upstream_host": "127.0.0.1", "upstream_port": int(upstream_port)},
}
json.dump(config, open(f"{work}/config.json", "w"), indent=1)
PY

echo "==> cold starts: $RUNS interleaved runs of ${FUNCTIONS[*]} and empty-lambda ($WARM warm invocations after each)"
"$_emulator_root/.venv/bin/python" infra/bench/coldstart.py "$work/config.json" --runs "$RUNS" --warm "$WARM"

if [ "${SKIP_PACKAGES:-0}" = 1 ]; then
  exit 0
fi
echo
echo "==> arm64 packages (cargo-lambda, release profile)"
EXTRA_BINS="empty-lambda dynamodb-lambda" bash infra/scripts/build-lambdas.sh arm64 | tee "$work/packages.txt"
"$_emulator_root/.venv/bin/python" - "$work/packages.txt" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 6 and parts[2] != "bootstrap" and parts[3] == "MiB":
        rows[parts[0]] = (float(parts[2]), float(parts[4]))
base = rows.get("empty-lambda")
if base:
    print(f"\n{'function':<14}{'unpacked/empty':>16}{'zipped/empty':>14}{'zipped MB':>11}  (goal: at most 3 MB zipped)")
    for name, (raw, zipped) in rows.items():
        if name != "empty-lambda":
            print(f"{name:<14}{raw / base[0]:>15.2f}x{zipped / base[1]:>13.2f}x{zipped * 2**20 / 1e6:>11.2f}")
PY
