#!/usr/bin/env bash
# Cold starts of every function against an empty lambda_http binary and the DynamoDB floor, side by
# side in one run (init, first invocation and peak memory; figures in docs/performance.md):
#
#   bash infra/scripts/bench-coldstart.sh            # RUNS=11 WARM=5 MEMORY_WARM=1000; arm64 packages too
#   SKIP_PACKAGES=1 bash infra/scripts/bench-coldstart.sh   # no arm64 build (x86_64 zips still printed)
#   MEMORY_WARM=0 SKIP_PACKAGES=1 bash infra/scripts/bench-coldstart.sh   # cold starts only
#   ONLY="dispatch" MEMORY_WARM=0 SKIP_PACKAGES=1 bash infra/scripts/bench-coldstart.sh   # one function
#   SKIP_BUILD=1 ...                                   # the release binaries as they are
#   VARIANTS="dispatch-main=/tmp/main/release/dispatch:dispatch" SKIP_PACKAGES=1 bash infra/scripts/bench-coldstart.sh
#       # other builds in the same rounds, each with the configuration of the function named after
#       # its ':' (records when none): a change compared side by side
#
# - Builds the six functions, the yardstick (infra/baseline: empty-lambda) and the floor
#   (infra/baseline: dynamodb-lambda: AWS configuration, a DynamoDB client and one GetItem during
#   init, nothing else; what the AWS SDK and TLS alone cost) with the release profile for this
#   machine, and runs each against a local stand-in of the Lambda Runtime API
#   (infra/bench/coldstart.py), interleaved, RUNS times: init, first response, first and warm
#   invocation, init CPU (the CPU spent before the first poll) and cold CPU, cold and warm RSS,
#   printed with their ratios to the empty function and to the floor, and the spreads of init,
#   init CPU and cold CPU.
# - Production configuration: each function gets the environment template.yaml gives it (read
#   from the template; a variable the bench cannot fill stops it), its resources made on the
#   emulator (moto, infra/scripts/emulator.sh): the table, the KMS key that seals secrets, the
#   dispatch and webhook queues, the cursor and signing-key secrets. Everything is reached
#   through a TLS endpoint (infra/bench/tls_front.py) with a certificate of a test CA made here
#   with openssl, which the functions trust through SSL_CERT_FILE. The TLS column counts the
#   connections each function opened during init and during its first invocation.
# - Memory (unless MEMORY_WARM=0): each function once more with MEMORY_WARM warm invocations;
#   its peak RSS cold and after them are written to infra/bench/memory.json, which the template
#   tests compare with half of each function's MemorySize (infra/template-check).
# - Package sizes: every x86_64 release binary zipped as Lambda stores it (deflate, level 9),
#   beside the floor's; then (unless SKIP_PACKAGES=1) the arm64 packages built with
#   cargo-lambda by infra/scripts/build-lambdas.sh (cargo-lambda and zig into .venv/).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS="${RUNS:-11}"
WARM="${WARM:-5}"
MEMORY_WARM="${MEMORY_WARM:-1000}"
# ONLY="dispatch records": those functions alone (with the floor and the empty function).
read -r -a FUNCTIONS <<<"${ONLY:-token records users routers dispatch webhooks}"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  echo "==> cargo build --release (functions, the empty lambda_http yardstick and the DynamoDB floor)"
  bins=()
  for bin in "${FUNCTIONS[@]}" empty-lambda dynamodb-lambda; do bins+=(--bin "$bin"); done
  cargo build --release --locked "${bins[@]}"
fi

# shellcheck source=infra/scripts/emulator.sh
source infra/scripts/emulator.sh
work="$(mktemp -d)"
cleanup() {
  emulator_stop
  rm -rf "$work"
}
trap cleanup EXIT

export TABLE_NAME="coldstart-$RANDOM" FUNCTION_NAMES="${FUNCTIONS[*]}"
# The demo seed's CRM is a local http URL: allowed for provisioning the bench's table only.
ALLOW_INSECURE_OUTBOUND=true cargo run -q --locked -p provision --bin provision -- --seed infra/seed/demo.json --create-table --development-sealing
JWKS="$(cargo run -q --locked -p local-server --bin jwks)"
# The resources of the stack that the functions' environment names, made on the emulator.
"$_emulator_root/.venv/bin/python" - "$work/resources.json" <<'PY'
import boto3, json, os, sys
endpoint = os.environ["AWS_ENDPOINT_URL"]
sm = boto3.client("secretsmanager", endpoint_url=endpoint)
signing = sm.create_secret(Name="account-routing/bench/jwt-signing-key",
                           SecretString=open("shared/dev-keys/dev-signing-key.pem").read())
cursor = sm.create_secret(Name="account-routing/bench/cursor-secret",
                          SecretString="bench-cursor-secret-of-at-least-32-bytes")
key = boto3.client("kms", endpoint_url=endpoint).create_key(Description="bench sealing key")
sqs = boto3.client("sqs", endpoint_url=endpoint)
resources = {
    "Table": os.environ["TABLE_NAME"],
    "SigningKeySecret": signing["ARN"],
    "CursorSecret": cursor["ARN"],
    "SealingKey": key["KeyMetadata"]["KeyId"],
    "DispatchQueue": sqs.create_queue(QueueName="bench-dispatch")["QueueUrl"],
    "WebhookQueue": sqs.create_queue(QueueName="bench-webhooks")["QueueUrl"],
}
json.dump(resources, open(sys.argv[1], "w"))
PY

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
"$_emulator_root/.venv/bin/python" - "$work" "$upstream_port" "$JWKS" <<'PY'
import json, os, sys
import yaml
work, upstream_port, jwks = sys.argv[1:]
resources = json.load(open(f"{work}/resources.json"))


class Tag:
    def __init__(self, tag, value):
        self.tag, self.value = tag, value


class TemplateLoader(yaml.SafeLoader):
    pass


TemplateLoader.add_multi_constructor(
    "!", lambda loader, suffix, node: Tag(suffix, loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else None))
template = yaml.load(open("template.yaml"), Loader=TemplateLoader)
parameters = template.get("Parameters", {})


def bench_value(name, value):
    """The bench's value of a template environment variable: literals as written, a !Ref to a
    resource made above, to JwtPublicJwks, or to a parameter with a default."""
    if isinstance(value, (str, int, float)):
        return str(value)
    if isinstance(value, Tag) and value.tag == "Ref":
        if value.value in resources:
            return resources[value.value]
        if value.value == "JwtPublicJwks":
            return jwks
        if "Default" in parameters.get(value.value, {}):
            return str(parameters[value.value]["Default"])
    sys.exit(f"bench-coldstart.sh: cannot fill {name} (from template.yaml); teach the bench its value")


globals_env = template["Globals"]["Function"]["Environment"]["Variables"]
by_binary = {r["Metadata"]["BuildProperties"]["Binary"]: r for r in template["Resources"].values()
             if r.get("Type") == "AWS::Serverless::Function"}
lambda_env = {
    "AWS_LAMBDA_FUNCTION_NAME": "bench", "AWS_LAMBDA_FUNCTION_VERSION": "1",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512", "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_SESSION_TOKEN": "test",
}
aws = dict(lambda_env, AWS_ENDPOINT_URL="https://localhost:{TLS_PORT}", SSL_CERT_FILE=f"{work}/ca.pem")


def production(binary):
    """The environment template.yaml gives `binary`'s function, on the bench's resources; the
    bench signs and verifies with the committed development key, which the functions refuse
    unless told."""
    env = dict(aws)
    variables = dict(globals_env)
    variables.update(by_binary[binary]["Properties"].get("Environment", {}).get("Variables", {}))
    for name, value in variables.items():
        env[name] = bench_value(name, value)
    env["ALLOW_DEVELOPMENT_SIGNING_KEY"] = "true"
    return env


release = os.environ.get("CARGO_TARGET_DIR", "target") + "/release"
events = {
    "token": f"{work}/token.json", "records": "events/records-get-contact.json",
    "users": "events/users-get.json", "routers": "events/routers-get.json",
    "dispatch": "events/dispatch-router.json", "webhooks": "events/webhooks-list.json",
}
floor_env = dict(aws, TABLE_NAME=resources["Table"])
functions = [
    {"label": "empty-lambda", "binary": f"{release}/empty-lambda", "env": lambda_env,
     "event": "events/records-get-contact.json"},
    {"label": "dynamodb-lambda", "binary": f"{release}/dynamodb-lambda", "env": floor_env,
     "event": "events/records-get-contact.json"},
]
missing = set(by_binary) - set(events)
if missing:
    sys.exit(f"bench-coldstart.sh: no event for {sorted(missing)}")
for name in os.environ["FUNCTION_NAMES"].split():
    functions.append({"label": name, "binary": f"{release}/{name}", "env": production(name), "event": events[name]})
# VARIANTS="label=binary[:function] ...": other builds run in the same interleaved rounds with the
# named function's configuration and event (records by default): a change compared side by side.
for variant in os.environ.get("VARIANTS", "").split():
    label, rest = variant.split("=", 1)
    binary, _, like = rest.partition(":")
    like = like or "records"
    functions.append({"label": label, "binary": binary, "env": production(like), "event": events[like]})
config = {
    "baseline": "empty-lambda", "floor": "dynamodb-lambda", "functions": functions,
    "tls_front": {"cert": f"{work}/server.pem", "key": f"{work}/server.key",
                  "upstream_host": "127.0.0.1", "upstream_port": int(upstream_port)},
}
if "token" in os.environ["FUNCTION_NAMES"].split():
    config["token_from"] = "token"
else:
    # No token function in this run: a token signed here with the committed development key,
    # as the token function signs it (ES256, the JWKS's kid, the demo client's account).
    import base64, time, uuid
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, utils
    key = serialization.load_pem_private_key(open("shared/dev-keys/dev-signing-key.pem", "rb").read(), None)
    b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    header = {"alg": "ES256", "typ": "JWT", "kid": json.loads(jwks)["keys"][0]["kid"]}
    now = int(time.time())
    claims = {"iss": "account-routing-api", "aud": "account-routing-api", "sub": "northwind-integration",
              "account_id": "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01",
              "scope": "service-api/read service-api/create service-api/update service-api/delete",
              "iat": now, "exp": now + 3600, "jti": str(uuid.uuid4())}
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    r, s = utils.decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    config["token"] = f"{signing_input}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"
json.dump(config, open(f"{work}/config.json", "w"), indent=1)
PY

echo "==> cold starts: $RUNS interleaved runs of ${FUNCTIONS[*]}, the floor and empty-lambda ($WARM warm invocations after each)"
memory=()
if [ "$MEMORY_WARM" -gt 0 ]; then
  memory=(--memory-warm "$MEMORY_WARM" --memory-out infra/bench/memory.json)
fi
"$_emulator_root/.venv/bin/python" infra/bench/coldstart.py "$work/config.json" --runs "$RUNS" --warm "$WARM" "${memory[@]}"

echo
echo "==> x86_64 packages: each release binary zipped as Lambda stores it (bootstrap, deflate level 9),"
echo "    and its ELF type (the functions link position-dependent, EXEC: functions/lambda-build.rs)"
"$_emulator_root/.venv/bin/python" - "${CARGO_TARGET_DIR:-target}/release" "${FUNCTIONS[@]}" dynamodb-lambda empty-lambda <<'PY'
import io, os, sys, zipfile
release, names = sys.argv[1], sys.argv[2:]
sizes, kinds = {}, {}
for name in names:
    with open(os.path.join(release, name), "rb") as binary:
        header = binary.read(18)
    # e_type, bytes 16-17 of the ELF header: 2 ET_EXEC (position-dependent), 3 ET_DYN (PIE).
    kinds[name] = {2: "EXEC", 3: "DYN (PIE)"}.get(int.from_bytes(header[16:18], "little"), "?")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.write(os.path.join(release, name), "bootstrap")
    sizes[name] = (os.path.getsize(os.path.join(release, name)), len(buffer.getvalue()))
floor = sizes["dynamodb-lambda"][1]
print(f"{'binary':<16}{'bootstrap MB':>14}{'zipped MB':>12}{'zipped / floor':>16}  ELF type")
for name, (raw, zipped) in sizes.items():
    print(f"{name:<16}{raw / 1e6:>14.2f}{zipped / 1e6:>12.2f}{zipped / floor:>15.2f}x  {kinds[name]}")
PY

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
