"""moto's server (DynamoDB and SQS on one port) with DynamoDB requests serialized, DynamoDB's
documented limits enforced and, when asked for, DynamoDB's transaction conflicts.

Serialized: moto's DynamoDB backend takes no lock, and a cancelled TransactWriteItems restores a
copy of the tables taken before it ran, which can erase a write committed concurrently by another
thread. So one lock is held around every DynamoDB request (X-Amz-Target `DynamoDB_20120810.*`):
each runs alone, as if DynamoDB applied them one after the other; SQS requests (long polls
included) stay concurrent. DynamoDB does not make a request wait for a transaction on its items,
it refuses it: see "Transaction conflicts" below.

Limits (see `limits.py`): moto checks key sizes only where an item is written, and no aggregate
size of a transaction nor the number of requests of a BatchWriteItem. DynamoDB refuses those with a
ValidationException; so does this wrapper, before moto sees the request, so a test on the emulator
fails where production would. Item sizes are counted as DynamoDB counts them (numbers by their
digits, lists and maps with their overhead), by the wrapper and, through `limits.install()`, by
moto's own check of what a put or an update stores; numbers out of DynamoDB's range and values
nested past 32 levels are refused with DynamoDB's messages.

Answers: moto's serializer spends most of a large read's time searching each attribute value for
its type under forty aliases; `attribute_values.py` takes it straight to the one it holds (the
same bytes out). Queries: moto sorts the whole table and sizes every item before the asked range
for each `Query`; `table_query.py` reads the asked partition alone (the same answers).
Every answer: moto searches its whole body with a regular expression for an XML `<RequestId>`,
a third of the time of a large `BatchGetItem`; `request_id.py` skips it where the body holds none
(the same answers). Every request: moto lists its package directory to find the backend of the
`Host` header; `host_dispatch.py` keeps each host's answer. A transaction: moto deep-copies each
table it names; `transaction_backup.py` backs up the items it names instead. An update
expression: moto's validation searches the subtree of every node of its syntax tree (quadratic
in the actions); `update_validation.py` validates it in one walk per check (the same answers).
Every expression: moto parses its text again on every request (an update's twice, then
deep-copies the tree); `expression_cache.py` parses each text once. A new item: moto sizes the
whole item again at every attribute it sets; `limits.install()` counts each attribute once. An
index query: moto sorts the whole table, comparing moto's value objects; `table_query.py` sorts by
values computed once per item. Every request: moto lists the handler class's functions
(`host_dispatch.py` keeps the list) and every transaction walks every client token of the last
10 minutes (`client_tokens.py` drops the expired ones from the front).
The server writes no line per request (werkzeug's access log, 8 % of the emulator's time in the test command) unless
asked with `--access-log` (or `EMULATOR_ACCESS_LOG=1`).

Transaction conflicts (off unless asked for; see `transactions.py`): DynamoDB refuses a request
that meets a transaction in flight on one of its items, where the lock alone would make it wait.
With `--transaction-conflicts` (or the environment variable `EMULATOR_TRANSACTION_CONFLICTS=1`),
each TransactWriteItems registers the items it names when it arrives, before it waits for the
lock, until its answer is produced; meanwhile another TransactWriteItems naming one of them is
cancelled (`TransactionCanceledException`, reason `TransactionConflict` at that item's index), a
PutItem, UpdateItem or DeleteItem of one of them fails with `TransactionConflictException`, and a
TransactGetItems that meets a write in flight is cancelled. Each refusal is logged on stderr
(`transaction conflict: ...`, with the items in conflict).

Usage: python moto_server.py [--host 127.0.0.1] [--port 0] [--port-file PATH]
                             [--transaction-conflicts] [--access-log]
Port 0 picks a free port; the port actually bound is printed ("moto listening on PORT") and
written to --port-file when given.
"""

import argparse
import io
import json
import os
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import WSGIRequestHandler, make_server

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attribute_values  # noqa: E402
import expression_cache  # noqa: E402
from client_tokens import ClientTokens  # noqa: E402
import host_dispatch  # noqa: E402
import request_id  # noqa: E402
import table_query  # noqa: E402
import transaction_backup  # noqa: E402
import update_validation  # noqa: E402
import limits  # noqa: E402
from limits import Tables, violation  # noqa: E402
from transactions import Registry  # noqa: E402

DYNAMODB_LOCK = threading.Lock()


class DynamoDBFront:
    """WSGI middleware for DynamoDB requests: refuses what DynamoDB's limits refuse (answering its
    ValidationException), then runs the request with the lock held, the whole response produced
    under it. Other requests pass through untouched. With `conflicts`, a request that meets a
    transaction in flight on one of its items is refused as DynamoDB refuses it, before it waits
    for the lock (`transactions.Registry`)."""

    def __init__(self, app, conflicts=False):
        attribute_values.install()
        expression_cache.install()
        host_dispatch.install()
        request_id.install()
        table_query.install()
        transaction_backup.install()
        update_validation.install()
        limits.install()
        self.app = app
        self.tables = Tables()
        self.registry = Registry(self.tables) if conflicts else None
        self.client_tokens = ClientTokens()

    def __call__(self, environ, start_response):
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if environ.get("PATH_INFO", "") == "/moto-api/reset":
            self.tables.clear()
            self.client_tokens.clear()
        if not target.startswith("DynamoDB"):
            return self.app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        operation = target.split(".", 1)[-1]
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            request = None
        if self.registry is None or not isinstance(request, dict):
            return self.run(environ, start_response, operation, request)
        try:
            ticket = self.registry.enter(operation, request)
        except (AttributeError, TypeError, ValueError):
            # A malformed request: moto answers its ValidationException; nothing to register.
            return self.run(environ, start_response, operation, request)
        if ticket.refused is not None:
            return refuse(start_response, ticket.refused, operation)
        try:
            return self.run(environ, start_response, operation, request, ticket)
        finally:
            ticket.leave()

    def run(self, environ, start_response, operation, request, ticket=None):
        """Runs one DynamoDB request under the lock; answers the whole response body."""
        with DYNAMODB_LOCK:
            if isinstance(request, dict):
                refused = violation(operation, request, self.tables)
                if refused is not None:
                    return validation_exception(start_response, refused)
            doomed = ticket.doomed() if ticket is not None else None
            if doomed is not None:
                return refuse(start_response, doomed, operation)
            tokened = operation == "TransactWriteItems" and isinstance(request, dict)
            if tokened:
                repeated = self.client_tokens.repeat(request)
                if repeated is not None:
                    return answer_with(start_response, *repeated)
            status = []

            def recording_start_response(line, headers, exc_info=None):
                status.append(line)
                return start_response(line, headers, exc_info)

            result = self.app(environ, recording_start_response)
            try:
                answer = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
            if isinstance(request, dict):
                self.tables.observe(operation, request, answer)
            if tokened and status:
                self.client_tokens.remember(request, status[0], answer)
            return [answer]


def answer_with(start_response, status, body):
    """An answer of DynamoDB's JSON protocol with `status` and `body`."""
    start_response(
        status,
        [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(body)))],
    )
    return [body]


def validation_exception(start_response, message):
    """DynamoDB's answer to a request that breaks a limit: HTTP 400, ValidationException."""
    body = json.dumps(
        {"__type": "com.amazonaws.dynamodb.v20120810#ValidationException", "message": message}
    ).encode()
    start_response(
        "400 Bad Request",
        [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(body)))],
    )
    return [body]


def refuse(start_response, refusal, operation):
    """A transaction conflict's answer (`transactions.Refusal`), logged with the items in
    conflict (one line on stderr, `transaction conflict: ...`)."""
    held = ", ".join(f"{table} {key}" for table, key in refusal.items)
    sys.stderr.write(f"transaction conflict: {operation} refused ({held})\n")  # one write a line
    sys.stderr.flush()
    start_response(
        refusal.status,
        [
            ("Content-Type", "application/x-amz-json-1.0"),
            ("Content-Length", str(len(refusal.body))),
        ],
    )
    return [refusal.body]


class QuietRequestHandler(WSGIRequestHandler):
    """werkzeug's request handler without its line per request (errors are still logged)."""

    def log_request(self, code="-", size="-"):
        pass


def env_flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument(
        "--transaction-conflicts",
        action="store_true",
        default=env_flag("EMULATOR_TRANSACTION_CONFLICTS"),
        help="refuse requests that meet a transaction in flight, as DynamoDB does",
    )
    parser.add_argument(
        "--access-log",
        action="store_true",
        default=env_flag("EMULATOR_ACCESS_LOG"),
        help="log one line per request (werkzeug's access log)",
    )
    args = parser.parse_args()
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("moto_server.py serves on a loopback address only")

    app = DynamoDBFront(
        DomainDispatcherApplication(create_backend_app), conflicts=args.transaction_conflicts
    )
    handler = WSGIRequestHandler if args.access_log else QuietRequestHandler
    server = make_server(args.host, args.port, app, threaded=True, request_handler=handler)
    port = server.server_port
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(args.port_file + ".tmp", args.port_file)
    conflicts = "on" if args.transaction_conflicts else "off"
    print(f"moto listening on {port}; transaction conflicts {conflicts}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
