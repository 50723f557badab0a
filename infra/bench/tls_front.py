"""A TLS endpoint in front of a plain-HTTP server (the emulator), for the cold-start benchmark.

Terminates TLS with a certificate of a test CA (made by bench-coldstart.sh with openssl; the
functions trust it through SSL_CERT_FILE) and forwards the bytes to the upstream port. It records
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
            self.loop.run_until_complete(start())

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)

    async def serve(self, reader, writer):
        # The handshake is complete when this is called.
        with self.lock:
            self.accepted.append(time.perf_counter())
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return

        async def pump(src, dst):
            try:
                while True:
                    data = await src.read(65536)
                    if not data:
                        break
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                try:
                    dst.close()
                except Exception:
                    pass

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))

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
