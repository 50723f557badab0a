"""moto's server (DynamoDB and SQS on one port) with DynamoDB requests serialized.

moto's DynamoDB backend takes no lock, and a cancelled TransactWriteItems restores a copy of the
tables taken before it ran, which can erase a write committed concurrently by another thread.
DynamoDB itself serializes conflicting transactions, so holding one lock around every DynamoDB
request (X-Amz-Target `DynamoDB_20120810.*`) makes moto behave like it; SQS requests (long
polls included) stay concurrent.

Usage: python moto_server.py [--host 127.0.0.1] [--port 0] [--port-file PATH]
Port 0 picks a free port; the port actually bound is printed ("moto listening on PORT") and
written to --port-file when given.
"""

import argparse
import os
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

DYNAMODB_LOCK = threading.Lock()


class SerializeDynamoDB:
    """WSGI middleware: one DynamoDB request at a time, the whole response produced under the lock."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            with DYNAMODB_LOCK:
                result = self.app(environ, start_response)
                try:
                    return [b"".join(result)]
                finally:
                    close = getattr(result, "close", None)
                    if close is not None:
                        close()
        return self.app(environ, start_response)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    args = parser.parse_args()
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("moto_server.py serves on a loopback address only")

    app = SerializeDynamoDB(DomainDispatcherApplication(create_backend_app))
    server = make_server(args.host, args.port, app, threaded=True)
    port = server.server_port
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(args.port_file + ".tmp", args.port_file)
    print(f"moto listening on {port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
