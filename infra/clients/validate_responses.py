"""Checks recorded HTTP answers against the API description: each answer's operation (method and
path template) must declare its status and content type, and its body must validate against the
declared schema (JSON Schema 2020-12 as OpenAPI 3.1 uses it, formats checked, references
resolved in the document), with `openapi-schema-validator` (PyPI).

    python infra/clients/validate_responses.py OPENAPI_JSON RESPONSES_JSONL

RESPONSES_JSONL holds one answer a line, as the journeys record them: `{client, method, path,
status, content_type, body}`. Prints one line per client and exits 1 on the first answers that do
not match (all of them listed), 0 when every answer matches.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from typing import Any

from jsonschema.exceptions import ValidationError
from openapi_schema_validator import OAS31Validator

METHODS = {"get", "put", "post", "delete", "patch", "options", "head", "trace"}


def templates(document: dict[str, Any]) -> list[tuple[re.Pattern[str], str]]:
    """Each path template as a pattern, literal segments first (`/dispatch/router/explain`
    before a template whose parameter would take `explain`)."""
    out = []
    for template in document["paths"]:
        pattern = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
        out.append((re.compile(pattern), template))
    return sorted(out, key=lambda entry: entry[1].count("{"))


def declared(operation: dict[str, Any], status: int) -> dict[str, Any] | None:
    responses = operation.get("responses", {})
    for key in (str(status), f"{str(status)[0]}XX", "default"):
        if key in responses:
            answer: dict[str, Any] = responses[key]
            return answer
    return None


def check(document: dict[str, Any], entry: dict[str, Any], paths: list[tuple[re.Pattern[str], str]]) -> str | None:
    """What is wrong with one recorded answer, or None."""
    what = f"{entry['client']}: {entry['method']} {entry['path']} -> {entry['status']}"
    template = next((t for pattern, t in paths if pattern.match(entry["path"])), None)
    if template is None:
        return f"{what}: no path of the document matches"
    operation = document["paths"][template].get(entry["method"].lower())
    if operation is None:
        return f"{what}: {template} has no {entry['method']} operation"
    answer = declared(operation, entry["status"])
    if answer is None:
        return f"{what}: status not declared by {operation['operationId']}"
    content = answer.get("content")
    if not content:
        return None if not entry["body"] else f"{what}: a body where the document declares none"
    media = (entry["content_type"] or "").split(";")[0].strip()
    if media not in content:
        return f"{what}: content type {media!r} not declared ({', '.join(content)})"
    schema = content[media].get("schema")
    if schema is None:
        return None
    try:
        body = json.loads(entry["body"])
    except json.JSONDecodeError as error:
        return f"{what}: the body is not JSON ({error})"
    # The schema inside the document, so that its references resolve.
    root = dict(document)
    root.update(schema if "$ref" not in schema else {"$ref": schema["$ref"]})
    validator = OAS31Validator(root, format_checker=OAS31Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
    if errors:
        first: ValidationError = errors[0]
        where = "/".join(str(p) for p in first.absolute_path)
        return f"{what}: {operation['operationId']} body at /{where}: {first.message[:300]}"
    return None


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as file:
        document = json.load(file)
    with open(sys.argv[2], encoding="utf-8") as file:
        entries = [json.loads(line) for line in file if line.strip()]
    paths = templates(document)
    problems = [p for p in (check(document, e, paths) for e in entries) if p]
    counts = Counter(e["client"] for e in entries)
    for client, count in sorted(counts.items()):
        bad = sum(1 for p in problems if p.startswith(f"{client}:"))
        print(f"{client}: {count} answers checked against the document, {count - bad} match, {bad} do not")
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    if not entries:
        print("no answers recorded", file=sys.stderr)
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
