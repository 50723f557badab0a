"""Writes and loads the table fixtures of `infra/compat/` (see README.md beside this file).

    fixture.py dump TABLE RELEASE > release-RELEASE.json
        every item of TABLE (a Scan, all pages, consistent reads) as DynamoDB JSON, the wire format
        (`{"PK": {"S": "..."}, "n": {"N": "5"}, "b": {"B": "<base64>"}, ...}`), sorted by PK then
        SK, one item a line with its attributes in name order, so two dumps diff line by line;

    fixture.py load FILE TABLE
        creates TABLE from `infra/table.json` (it must not exist) and writes every item of FILE
        into it with BatchWriteItem (25 a request, unprocessed items sent again).

Endpoint, region and credentials from the standard AWS environment (AWS_ENDPOINT_URL for the
emulator). Needs boto3 (in the emulator's .venv).
"""

import base64
import json
import os
import sys

import boto3

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE_DEFINITION = os.path.join(ROOT, "infra", "table.json")
BATCH_WRITE_LIMIT = 25


def client():
    return boto3.client("dynamodb", region_name=os.environ.get("AWS_REGION", "us-east-1"))


def to_wire(value):
    """A boto3 client's attribute value (binaries as bytes) as DynamoDB JSON (base64)."""
    (kind, content), = value.items()
    if kind == "B":
        return {"B": base64.b64encode(content).decode()}
    if kind == "BS":
        return {"BS": [base64.b64encode(b).decode() for b in content]}
    if kind == "L":
        return {"L": [to_wire(v) for v in content]}
    if kind == "M":
        return {"M": {k: to_wire(v) for k, v in content.items()}}
    return {kind: content}


def from_wire(value):
    """DynamoDB JSON as a boto3 client takes it (binaries as bytes)."""
    (kind, content), = value.items()
    if kind == "B":
        return {"B": base64.b64decode(content)}
    if kind == "BS":
        return {"BS": [base64.b64decode(b) for b in content]}
    if kind == "L":
        return {"L": [from_wire(v) for v in content]}
    if kind == "M":
        return {"M": {k: from_wire(v) for k, v in content.items()}}
    return {kind: content}


def sort_key(item):
    return (item["PK"]["S"], item["SK"]["S"])


def dump(table, release):
    db = client()
    items, start = [], None
    while True:
        page = db.scan(
            TableName=table, ConsistentRead=True, **({"ExclusiveStartKey": start} if start else {})
        )
        items += [{name: to_wire(v) for name, v in item.items()} for item in page["Items"]]
        start = page.get("LastEvaluatedKey")
        if not start:
            break
    items.sort(key=sort_key)
    lines = [json.dumps(item, sort_keys=True, ensure_ascii=False) for item in items]
    sys.stdout.write(f'{{"Release": {json.dumps(release)}, "Count": {len(items)}, "Items": [\n')
    sys.stdout.write(",\n".join(lines))
    sys.stdout.write("\n]}\n")


def load(path, table):
    with open(path, encoding="utf-8") as f:
        items = json.load(f)["Items"]
    with open(TABLE_DEFINITION) as f:
        definition = json.load(f)
    db = client()
    db.create_table(TableName=table, **definition)
    db.get_waiter("table_exists").wait(TableName=table)
    for i in range(0, len(items), BATCH_WRITE_LIMIT):
        requests = [
            {"PutRequest": {"Item": {k: from_wire(v) for k, v in item.items()}}}
            for item in items[i : i + BATCH_WRITE_LIMIT]
        ]
        pending = {table: requests}
        while pending:
            pending = db.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
    print(f"loaded {len(items)} items into {table}", file=sys.stderr)


def main():
    if sys.argv[1:2] == ["dump"] and len(sys.argv) == 4:
        dump(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["load"] and len(sys.argv) == 4:
        load(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
