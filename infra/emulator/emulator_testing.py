"""What the emulator's own tests (`test_*.py`) share: the wrapper served on a free loopback port in
a thread of its own, a boto3 client of it, the raw answers it gave, and the project's table shape
(string `PK`/`SK`, index `GSI1` on `GSI1PK`/`GSI1SK`) and a table with a numeric sort key.
"""

import threading

import boto3
import botocore
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

from moto_server import DynamoDBFront


def serve(conflicts=False):
    """Starts the wrapper (`moto_server.DynamoDBFront` over moto, with transaction conflicts when
    `conflicts`) on a free loopback port; returns the server (call `shutdown()` when done; its
    front is `server.app`) and a DynamoDB client of it that never retries."""
    app = DynamoDBFront(DomainDispatcherApplication(create_backend_app), conflicts=conflicts)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, client_of(server)


def client_of(server):
    """A DynamoDB client of `server` that never retries (one per thread that sends)."""
    return boto3.client(
        "dynamodb",
        endpoint_url=f"http://127.0.0.1:{server.server_port}",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=botocore.config.Config(retries={"max_attempts": 1}),
    )


def record_raw_answers(client):
    """A list that receives the raw body of every answer `client` gets from now on."""
    raw = []
    client.meta.events.register(
        "after-call.dynamodb", lambda http_response, **_: raw.append(http_response.content)
    )
    return raw


def create_single_table(client, name):
    """Creates table `name` with the project's keys: `PK`/`SK` and index `GSI1` (all strings)."""
    client.create_table(
        TableName=name,
        KeySchema=[
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": attribute, "AttributeType": "S"}
            for attribute in ("PK", "SK", "GSI1PK", "GSI1SK")
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "GSI1",
                "KeySchema": [
                    {"AttributeName": "GSI1PK", "KeyType": "HASH"},
                    {"AttributeName": "GSI1SK", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def answer_with_shortcut(module, gate, raw, call, shortcut):
    """Makes `call` with the shortcut of `module` on or off (`module.enabled`) while spying on
    `module.<gate>`, the function that decides whether the shortcut applies to a request; returns
    the raw answers `call` got (an error's body included) and whether the gate let the shortcut
    through. `raw` is the list of `record_raw_answers`; the module is left enabled."""
    taken = []
    applies = getattr(module, gate)

    def spy(*args):
        ok = applies(*args)
        taken.append(ok)
        return ok

    setattr(module, gate, spy)
    module.enabled = shortcut
    raw.clear()
    try:
        try:
            call()
        except botocore.exceptions.ClientError:
            pass  # the error's body is compared too
    finally:
        module.enabled = True
        setattr(module, gate, applies)
    return list(raw), any(taken)


def create_numbered_table(client, name):
    """Creates table `name` keyed by a string `PK` and a numeric sort key `n`."""
    client.create_table(
        TableName=name,
        KeySchema=[
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "n", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "n", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
