"""A TLS endpoint in front of a plain-HTTP server (the emulator), for the cold-start benchmark.

Terminates TLS with a certificate of a test CA (made by bench-coldstart.sh with openssl; the
functions trust it through SSL_CERT_FILE) and forwards each HTTP/1.1 request to the upstream port,
keeping the client's connection open as DynamoDB's endpoint does (the emulator's own server
closes every connection after one answer, which would make every request a new handshake). It records
when each connection's handshake completed, so the benchmark can count the TLS connections a
function opens during init and during its first invocation.
"""

import asyncio
import ssl
import threading
import time


class TlsFront:
    def __init__(self, cert, key, upstream_host, upstream_port, port=0):
        self.upstream = (upstream_host, upstream_port)
        self.accepted = []
        self.lock = threading.Lock()
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert, key)
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.port = None

        async def start():
            server = await asyncio.start_server(self.serve, "127.0.0.1", port, ssl=self.context)
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            await server.serve_forever()

        def run():
            asyncio.set_event_loop(self.loop)
            try:
                self.loop.run_until_complete(start())
            except RuntimeError:
                pass  # stopped by close()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)

    async def serve(self, reader, writer):
        # The handshake is complete when this is called.
        with self.lock:
            self.accepted.append(time.perf_counter())
        # HTTP/1.1 with keep-alive towards the client, as DynamoDB's endpoint keeps connections
        # open; one upstream connection per request, because the emulator's server closes each.
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = [l for l in lines[1:] if l and not l.lower().startswith("connection:")]
                length = next((int(l.split(":", 1)[1]) for l in headers if l.lower().startswith("content-length:")), 0)
                body = await reader.readexactly(length) if length else b""
                up_reader, up_writer = await asyncio.open_connection(*self.upstream)
                request = "\r\n".join([lines[0], *headers, "Connection: close", "", ""]).encode("latin-1")
                up_writer.write(request + body)
                await up_writer.drain()
                answer = await up_reader.read()
                up_writer.close()
                answer_head, _, answer_body = answer.partition(b"\r\n\r\n")
                answer_lines = answer_head.decode("latin-1").split("\r\n")
                kept = [
                    l for l in answer_lines[1:]
                    if not l.lower().startswith(("connection:", "content-length:", "transfer-encoding:"))
                ]
                status = answer_lines[0].replace("HTTP/1.0", "HTTP/1.1", 1)
                out = "\r\n".join([status, *kept, f"Content-Length: {len(answer_body)}", "Connection: keep-alive", "", ""])
                writer.write(out.encode("latin-1") + answer_body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, OSError, ssl.SSLError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    def mark(self):
        with self.lock:
            return len(self.accepted)

    def accepted_since(self, mark):
        with self.lock:
            return list(self.accepted[mark:])

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    front = TlsFront(args.cert, args.key, "127.0.0.1", args.upstream_port, args.port)
    print(f"TLS front listening on https://localhost:{front.port}", flush=True)
    threading.Event().wait()
