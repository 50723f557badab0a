"""`moto_server.py` as the test command starts it: its log holds the line saying it listens and no
line per request, unless started with `--access-log`.

Run: .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py' (test.sh runs it).
"""

import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def run_server_for_one_request(*flags):
    """Starts moto_server.py on a free port, sends it one request, stops it; answers its output."""
    with tempfile.TemporaryDirectory() as directory:
        port_file = os.path.join(directory, "port")
        env = {k: v for k, v in os.environ.items() if k != "EMULATOR_ACCESS_LOG"}
        server = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "moto_server.py"), "--port-file", port_file, *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(port_file):
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError("moto_server.py did not start")
                time.sleep(0.05)
            with open(port_file) as f:
                port = f.read()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/data.json", timeout=10) as answer:
                answer.read()
        finally:
            server.terminate()
            output, _ = server.communicate(timeout=30)
    return output.decode()


class ServerLog(unittest.TestCase):
    def test_no_line_per_request_by_default(self):
        log = run_server_for_one_request()
        self.assertIn("moto listening on", log)
        self.assertNotIn("/moto-api/data.json", log)

    def test_a_line_per_request_with_access_log(self):
        log = run_server_for_one_request("--access-log")
        self.assertIn("GET /moto-api/data.json", log)


if __name__ == "__main__":
    unittest.main()
