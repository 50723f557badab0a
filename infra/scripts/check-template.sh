#!/usr/bin/env bash
# Checks template.yaml offline with `sam validate --lint`: the SAM translation, and every rule of
# cfn-lint, which `--lint` runs as a library on the same template (a property CloudFormation does
# not know fails it with cfn-lint's own E3002), failing on any match. A separate `cfn-lint
# template.yaml` ran the same rules a second time (13 s of CPU). Installs cfn-lint and
# aws-sam-cli into the repository's `.venv/` the first time (about a minute); later runs only
# lint (a few seconds). The Rust test crate infra/template-check checks
# what the linters miss (references, the table against infra/table.json, routes, policies).
set -euo pipefail
cd "$(dirname "$0")/../.."
source infra/scripts/tools-venv.sh
tools_venv_require cfn-lint aws-sam-cli

# Offline, no prompts, no telemetry; a region only because the SAM translator wants one.
export SAM_CLI_TELEMETRY=0 SAM_CLI_DISABLE_TELEMETRY=1 AWS_EC2_METADATA_DISABLED=true
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" AWS_REGION="${AWS_REGION:-us-east-1}"

echo "==> sam validate --lint"
"$VENV/bin/sam" validate --lint --template-file template.yaml

echo "template.yaml: sam validate --lint (the SAM translation and cfn-lint's rules) found no errors"
