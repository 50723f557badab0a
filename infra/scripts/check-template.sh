#!/usr/bin/env bash
# Checks template.yaml offline: `cfn-lint template.yaml` and `sam validate --lint`, failing on any
# error. Installs cfn-lint and aws-sam-cli into the repository's `.venv/` the first time (about a
# minute); later runs only lint (a few seconds). The Rust test crate infra/template-check checks
# what the linters miss (references, the table against infra/table.json, routes, policies).
set -euo pipefail
cd "$(dirname "$0")/../.."
source infra/scripts/tools-venv.sh
tools_venv_require cfn-lint aws-sam-cli

# Offline, no prompts, no telemetry; a region only because the SAM translator wants one.
export SAM_CLI_TELEMETRY=0 SAM_CLI_DISABLE_TELEMETRY=1 AWS_EC2_METADATA_DISABLED=true
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" AWS_REGION="${AWS_REGION:-us-east-1}"

echo "==> cfn-lint template.yaml"
"$VENV/bin/cfn-lint" template.yaml

echo "==> sam validate --lint"
"$VENV/bin/sam" validate --lint --template-file template.yaml

echo "template.yaml: cfn-lint and sam validate --lint found no errors"
