"""Cold starts of Lambda bootstraps against a local stand-in of the Lambda Runtime API.

Run by infra/scripts/bench-coldstart.sh, which builds the binaries, starts the emulator with a TLS
endpoint in front of it and passes the configuration as JSON (see `main`). For each run, every
binary is started in turn (interleaved, so a slow moment of the shared machine hits all of them),
answers one cold invocation and then `--warm` warm ones, and is killed. Per binary it reports the
medians of:

- init: from just before the process is spawned to its first `GET .../invocation/next` (what
  Lambda bills as the Init phase);
- first response: from spawn to the first `POST .../response`;
- first invocation: from handing out the first event to its response (the cold request's own
  latency), and the median of the warm invocations for comparison;
- cold CPU: user + system time of all the process's threads when the first response arrives
  (`/proc/<pid>/task/*/schedstat`, nanoseconds); init CPU: the same when the process first asks
  for an event (the part of the cold CPU spent in init); warm CPU: what one warm invocation
  spends (the CPU after the first response, over the warm invocations);
- cold RSS: peak resident set (`VmHWM`) when the first response arrives; warm RSS: `VmRSS` after
  the warm invocations, and warm peak: `VmHWM` after them (the highest the process ever held);
- TLS connections the process opened to the DynamoDB endpoint during init and during the first
  invocation (counted by the TLS front of the emulator, `tls_front.py`).

Then ratios to the yardstick binary (the empty lambda_http function) and to the floor (the
configuration's `floor`: AWS SDK, TLS and one GetItem during init), each a median over medians of
the same interleaved runs. And each function's init + first invocation against
the floor's init + one warm invocation of the same function, in wall time and in CPU: what a cold
start costs the first caller beyond what the SDK's own start and a warm request cost.

With `--memory-warm N` it then starts each function once more and serves it N warm invocations
(peak RSS cold and after 1,000 warm invocations, against half the template's `MemorySize`), and
writes the peaks with `--memory-out` as JSON:
{label: {cold_peak_mib, warm_peak_mib, warm_invocations, statuses}}.
"""

import argparse
import glob
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tls_front  # noqa: E402


class RuntimeApi:
    """The Runtime API (2018-06-01) for one function process at a time."""

    def __init__(self):
        self.cond = threading.Condition()
        self.events = []  # events waiting to be handed out
        self.generation = 0  # one per process: a killed process's pending poll gets nothing
        self.log = []  # (kind, perf_counter, payload)
        self.on_response = None  # called in the server thread when a response arrives
        self.on_next = None  # called in the server thread when the process asks for an event
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body are written separately: without this, Nagle's algorithm holds the
            # body until the delayed ACK of the headers (40 ms).
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_GET(self):
                if not self.path.endswith("/runtime/invocation/next"):
                    self.send_error(404)
                    return
                now = time.perf_counter()
                if api.on_next is not None:
                    api.on_next()
                with api.cond:
                    generation = api.generation
                    api.log.append(("next", now, None))
                    api.cond.notify_all()
                    while not api.events and api.generation == generation:
                        api.cond.wait()
                    if api.generation != generation:
                        self.close_connection = True
                        return
                    event = api.events.pop(0)
                    request_id = str(uuid.uuid4())
                    api.log.append(("event", time.perf_counter(), request_id))
                body = json.dumps(event).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Lambda-Runtime-Aws-Request-Id", request_id)
                self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 30000))
                self.send_header(
                    "Lambda-Runtime-Invoked-Function-Arn",
                    "arn:aws:lambda:us-east-1:123456789012:function:bench",
                )
                self.send_header("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000")
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                now = time.perf_counter()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = read_chunked(self.rfile)
                kind = "response" if self.path.endswith("/response") else "error"
                if api.on_response is not None:
                    api.on_response(kind)
                with api.cond:
                    api.log.append((kind, now, body))
                    api.cond.notify_all()
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a killed function resets its connection: expected

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reset(self, events):
        with self.cond:
            self.generation += 1
            self.events = list(events)
            self.log = []
            self.cond.notify_all()

    def wait_for(self, kind, count, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while sum(1 for k, _, _ in self.log if k in kind) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True


def read_chunked(rfile):
    body = b""
    while True:
        size = int(rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            rfile.readline()
            return body
        body += rfile.read(size)
        rfile.readline()


def status_of(body):
    """The statusCode of a function's answer (an API Gateway response), else its kind."""
    try:
        answer = json.loads(body or b"null")
    except ValueError:
        return "not-json"
    if isinstance(answer, dict) and "statusCode" in answer:
        return str(answer["statusCode"])
    return "other"


def cpu_ns(pid):
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def one_cold_start(api, front, binary, env, event, warm, logdir, label, run):
    """Starts `binary`, serves it `event` once cold and `warm` times warm; returns the figures."""
    api.reset([event] * (1 + warm))
    snapshot = {}
    proc_box = {}

    def on_response(kind):
        # In the server thread, before the process can do anything else: the figures at the
        # moment the first response arrives.
        if "cpu" not in snapshot and "pid" in proc_box:
            pid = proc_box["pid"]
            snapshot["cpu"] = cpu_ns(pid)
            snapshot["hwm"] = status_kib(pid, "VmHWM")
            snapshot["kind"] = kind

    def on_next():
        # The first poll ends init: the CPU spent until then (the rest of the cold CPU is the
        # first invocation's).
        if "init_cpu" not in snapshot and "pid" in proc_box:
            snapshot["init_cpu"] = cpu_ns(proc_box["pid"])

    api.on_response = on_response
    api.on_next = on_next
    full_env = dict(env)
    full_env["AWS_LAMBDA_RUNTIME_API"] = f"127.0.0.1:{api.port}"
    log_path = os.path.join(logdir, f"{label}-{run}.log")
    front_mark = front.mark() if front else None
    with open(log_path, "wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen([binary], env=full_env, stdout=log, stderr=subprocess.STDOUT)
        proc_box["pid"] = proc.pid
        try:
            limit = 60 + warm * 0.5  # a long memory run is given half a second per invocation
            deadline = time.monotonic() + limit
            while not api.wait_for({"response", "error"}, 1 + warm, 0.2):
                if proc.poll() is not None:
                    with open(log_path, errors="replace") as f:
                        tail = f.read()[-2000:]
                    raise RuntimeError(f"{label}: exited with {proc.returncode} before answering:\n{tail}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{label}: no answer within {limit:.0f} s; log: {log_path}")
            warm_rss = status_kib(proc.pid, "VmRSS")
            warm_hwm = status_kib(proc.pid, "VmHWM")
            end_cpu = cpu_ns(proc.pid)
        finally:
            proc.kill()
            proc.wait()
    log_entries = list(api.log)
    nexts = [t for k, t, _ in log_entries if k == "next"]
    events = [t for k, t, _ in log_entries if k == "event"]
    answers = [(k, t, b) for k, t, b in log_entries if k in ("response", "error")]
    if answers[0][0] != "response":
        raise RuntimeError(f"{label}: the first invocation failed: {answers[0][2][:500]!r}; log: {log_path}")
    first = json.loads(answers[0][2] or b"null")
    durations = [answers[i][1] - events[i] for i in range(len(answers))]
    figures = {
        "init_ms": (nexts[0] - t0) * 1e3,
        "first_response_ms": (answers[0][1] - t0) * 1e3,
        "first_invocation_ms": durations[0] * 1e3,
        "warm_invocation_ms": statistics.median(durations[1:]) * 1e3 if warm else float("nan"),
        "cold_cpu_ms": snapshot.get("cpu", 0) / 1e6,
        "init_cpu_ms": snapshot.get("init_cpu", 0) / 1e6,
        # The CPU of one warm invocation: what the warm ones spent after the first response.
        "warm_cpu_ms": (end_cpu - snapshot.get("cpu", 0)) / 1e6 / warm if warm else float("nan"),
        "cold_rss_mib": snapshot.get("hwm", 0) / 1024,
        "warm_rss_mib": warm_rss / 1024,
        "warm_peak_rss_mib": warm_hwm / 1024,
        "statuses": sorted({status_of(b) for k, _, b in answers}),
        "status": first.get("statusCode") if isinstance(first, dict) else None,
    }
    if front is not None:
        accepted = front.accepted_since(front_mark)
        figures["tls_in_init"] = sum(1 for t in accepted if t0 <= t < nexts[0])
        figures["tls_in_first_invocation"] = sum(1 for t in accepted if events[0] <= t <= answers[0][1])
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="JSON: {baseline, functions: [{label, binary, env, event}], tls_front?}")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--memory-warm", type=int, default=0, help="warm invocations of the memory run (0: none)")
    parser.add_argument("--memory-out", help="where the memory run's peaks are written (JSON)")
    args = parser.parse_args()
    with open(args.config) as f:
        config = json.load(f)

    api = RuntimeApi()
    front = None
    if config.get("tls_front"):
        tf = config["tls_front"]
        front = tls_front.TlsFront(tf["cert"], tf["key"], tf["upstream_host"], tf["upstream_port"], tf.get("port", 0))
    logdir = tempfile.mkdtemp(prefix="coldstart-")
    functions = config["functions"]

    def substitute(value, token=None):
        value = value.replace("{TLS_PORT}", str(front.port if front else 0))
        return value.replace("{TOKEN}", token) if token else value

    for function in functions:
        function["env"] = {k: substitute(v) for k, v in function.get("env", {}).items()}
    token = config.get("token")
    if config.get("token_from") and not token:
        # One invocation of the token function gives the bearer token of the other events.
        label = config["token_from"]
        function = next(f for f in functions if f["label"] == label)
        with open(function["event"]) as f:
            event = json.load(f)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        env.update(function["env"])
        one_cold_start(api, front, function["binary"], env, event, 0, logdir, label, "token")
        answer = json.loads(next(b for k, _, b in api.log if k == "response"))
        token = json.loads(answer["body"])["access_token"]
    results = {f["label"]: [] for f in functions}
    for run in range(args.runs):
        for function in functions:
            with open(function["event"]) as f:
                event = json.load(f)
            if token and "authorization" in event.get("headers", {}):
                event["headers"]["authorization"] = f"Bearer {token}"
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
            env.update(function.get("env", {}))
            figures = one_cold_start(
                api, front, function["binary"], env, event, args.warm, logdir, function["label"], run
            )
            results[function["label"]].append(figures)
        print(f"  run {run + 1}/{args.runs} done", file=sys.stderr)

    def med(label, key):
        values = [r[key] for r in results[label] if key in r]
        return statistics.median(values) if values else float("nan")

    baseline = config["baseline"]
    keys = [
        ("init_ms", "init ms"),
        ("first_response_ms", "1st resp ms"),
        ("first_invocation_ms", "1st inv ms"),
        ("warm_invocation_ms", "warm inv ms"),
        ("init_cpu_ms", "init CPU ms"),
        ("cold_cpu_ms", "cold CPU ms"),
        ("warm_cpu_ms", "warm CPU ms"),
        ("cold_rss_mib", "cold RSS MiB"),
        ("warm_rss_mib", "warm RSS MiB"),
        ("warm_peak_rss_mib", "warm peak MiB"),
    ]
    print(f"\nmedians of {args.runs} interleaved cold starts each ({args.warm} warm invocations after each)")
    header = f"{'function':<14}" + "".join(f"{title:>14}" for _, title in keys) + f"{'TLS init/1st':>14}{'status':>8}"
    print(header)
    for function in functions:
        label = function["label"]
        row = f"{label:<14}" + "".join(f"{med(label, key):>14.2f}" for key, _ in keys)
        tls = f"{med(label, 'tls_in_init'):.0f}/{med(label, 'tls_in_first_invocation'):.0f}" if front and label != baseline else "-"
        statuses = sorted({str(r['status']) for r in results[label]})
        row += f"{tls:>14}{','.join(statuses):>8}"
        print(row)
    print(f"\nratios to {baseline} (median / median)")
    ratio_keys = [("init_ms", "init"), ("first_response_ms", "1st resp"), ("init_cpu_ms", "init CPU"), ("cold_cpu_ms", "cold CPU"), ("cold_rss_mib", "cold RSS"), ("warm_rss_mib", "warm RSS")]
    print(f"{'function':<14}" + "".join(f"{title:>12}" for _, title in ratio_keys))
    for function in functions:
        label = function["label"]
        if label == baseline:
            continue
        print(f"{label:<14}" + "".join(f"{med(label, key) / med(baseline, key):>11.2f}x" for key, _ in ratio_keys))
    floor = config.get("floor")
    if floor:
        print(f"\nratios to the floor, {floor} (median / median)")
        print(f"{'function':<14}" + "".join(f"{title:>12}" for _, title in ratio_keys))
        for function in functions:
            label = function["label"]
            if label in (baseline, floor):
                continue
            print(f"{label:<14}" + "".join(f"{med(label, key) / med(floor, key):>11.2f}x" for key, _ in ratio_keys))
        # What the first caller waits for (init + the first invocation) against
        # what it would wait for if the function started as the floor does and its first request
        # cost what a warm one does (the floor's init + this function's warm invocation), in wall
        # time and in CPU; each round's own figures paired, then the median of the rounds' ratios.
        if args.warm > 0:
            print(f"\ninit + 1st invocation against the floor's init + one warm invocation of the same function")
            print(f"{'function':<14}{'cold ms':>12}{'floor+warm ms':>15}{'ratio':>9}{'cold CPU ms':>13}{'floor+warm CPU':>16}{'ratio':>9}")
            for function in functions:
                label = function["label"]
                if label in (baseline, floor):
                    continue
                rounds = list(zip(results[label], results[floor]))
                wall = [(r["init_ms"] + r["first_invocation_ms"], f["init_ms"] + r["warm_invocation_ms"]) for r, f in rounds]
                cpu = [(r["cold_cpu_ms"], f["init_cpu_ms"] + r["warm_cpu_ms"]) for r, f in rounds]
                med_of = lambda pairs, i: statistics.median(p[i] for p in pairs)
                ratio = lambda pairs: statistics.median(a / b for a, b in pairs)
                print(f"{label:<14}{med_of(wall, 0):>12.2f}{med_of(wall, 1):>15.2f}{ratio(wall):>8.2f}x"
                      f"{med_of(cpu, 0):>13.2f}{med_of(cpu, 1):>16.2f}{ratio(cpu):>8.2f}x")
        spread_keys = [("init_ms", "init ms"), ("init_cpu_ms", "init CPU ms"), ("cold_cpu_ms", "cold CPU ms")]
        print("\nspreads (min - max over the runs)")
        print(f"{'function':<14}" + "".join(f"{title:>20}" for _, title in spread_keys))
        for function in functions:
            label = function["label"]
            cells = []
            for key, _ in spread_keys:
                values = [r[key] for r in results[label]]
                cells.append(f"{min(values):.2f} - {max(values):.2f}")
            print(f"{label:<14}" + "".join(f"{cell:>20}" for cell in cells))
    if args.memory_warm > 0:
        print(f"\nmemory: each function once more, {args.memory_warm} warm invocations after the cold one")
        memory = {}
        for function in functions:
            with open(function["event"]) as f:
                event = json.load(f)
            if token and "authorization" in event.get("headers", {}):
                event["headers"]["authorization"] = f"Bearer {token}"
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
            env.update(function.get("env", {}))
            figures = one_cold_start(
                api, front, function["binary"], env, event, args.memory_warm, logdir, function["label"], "memory"
            )
            memory[function["label"]] = {
                "cold_peak_mib": round(figures["cold_rss_mib"], 2),
                "warm_peak_mib": round(figures["warm_peak_rss_mib"], 2),
                "warm_invocations": args.memory_warm,
                "statuses": figures["statuses"],
            }
            print(f"  {function['label']:<14} cold peak {figures['cold_rss_mib']:8.2f} MiB   peak after "
                  f"{args.memory_warm} warm {figures['warm_peak_rss_mib']:8.2f} MiB   answers {','.join(figures['statuses'])}")
        if args.memory_out:
            with open(args.memory_out, "w") as f:
                json.dump(memory, f, indent=1, sort_keys=True)
                f.write("\n")
    if config.get("json_out"):
        with open(config["json_out"], "w") as f:
            json.dump(results, f, indent=1)
    if front is not None:
        front.close()


if __name__ == "__main__":
    main()
