"""Makes the data of the compatibility fixture through a running release's HTTP API (see README.md
beside this file; `make-fixture.sh` runs it). Two commands:

    drive_release.py seed DEMO_SEED CRM_PORT > seed.json
        the release's demo seed plus two contacts routers with an SLA ("SLA leads", and one with
        a single member) in the Northwind account, and the Initech account's CRM pointed at the fake CRM on CRM_PORT;

    drive_release.py drive BASE_URL CRM_PORT QUEUE_URL
        against the local server at BASE_URL (started on that seed, with the dispatch queue
        QUEUE_URL polled, SQS at AWS_ENDPOINT_URL): records of each type created (one with an
        Idempotency-Key and its replay), patched and archived; webhook subscriptions created,
        patched, secret-rotated and deleted, with a receiver on loopback that accepts, answers 410
        or fails; dispatches by API (assignments, unassigned outcomes, an idempotent replay) and
        by queue; SLA checks that end met, cancelled, reassigned and expired; CRM syncs that succeed and
        fail; a member patched; every router's stats read. It waits until webhooks, syncs and SLA
        checks have settled, so the table holds no work in progress.

Only the standard library and boto3 (for SQS). Exits non-zero on the first unexpected answer.
"""

import base64
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NORTHWIND = ("northwind-integration", "dev-secret-change-me")
INITECH = ("initech-integration", "initech-dev-secret")
SCOPES = "service-api/read service-api/create service-api/update service-api/delete"
NORTHWIND_ID = "0f3c6d3e-2a8b-4c55-9d61-5f1c2b7a9e01"
INITECH_ID = "c3e4f5a6-b7c8-4d9e-8f01-a2b3c4d5e6f7"
INBOUND = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45"  # contacts, round robin, region in emea/amer
DEALS = "7e3f4a56-b7c8-4d93-8ea5-b02b3c4d5e78"  # deals, percentage, amount >= 1000
TICKETS = "8f4a5b67-c8d9-4ea4-9fb6-c13c4d5e6f89"  # tickets, teams, unpublished
ARCHIVED = "9a5b6c78-d9ea-4fb5-a0c7-d24d5e6f7a90"  # companies, archived
CRM_ROUTER = "f6b7c8d9-e0f1-4a2b-9c34-d5e6f7a8b920"  # Initech contacts, synced to the CRM
SLA_ROUTER = "5e1a5e1a-0c0d-4e0f-8a10-000000000514"  # added by `seed`: contacts with an SLA
SOLO_ROUTER = "5e1a5e1a-0c0d-4e0f-8a10-000000000515"  # added by `seed`: the same, one member
DANA = "01936b2a-7c00-7a00-8000-000000000002"  # seeded Northwind contact, region emea
LEE = "01936b2a-7c00-7a00-8000-000000000004"  # seeded Northwind contact, region amer
INITECH_CONTACTS = [f"01936b2a-7c00-7a00-8000-0000000000{n}" for n in (21, 22, 23)]
CHEN = "3f9a0b12-c3d4-4e5f-a061-7c8d9e0f1a23"


def fail(message):
    print(f"drive_release: {message}", file=sys.stderr)
    sys.exit(1)


def seed(demo_path, crm_port):
    """The demo seed with two SLA routers added and the CRM on `crm_port`."""
    with open(demo_path) as f:
        document = json.load(f)
    accounts = {a["id"]: a for a in document["accounts"]}
    northwind = accounts[NORTHWIND_ID]
    northwind["routers"].append(sla_router(SLA_ROUTER, "SLA leads", ["ana", "ben"]))
    # One member: its reassignment finds nobody, so its check ends `expired`.
    northwind["routers"].append(sla_router(SOLO_ROUTER, "SLA leads, one member", ["dora"]))
    accounts[INITECH_ID]["crm"]["base_url"] = f"http://127.0.0.1:{crm_port}"
    json.dump(document, sys.stdout, indent=2)
    print()


def sla_router(router_id, name, members):
    """A published contacts router for leads with a 10-minute SLA, worked once `lead_status` is
    in progress or connected."""
    emails = {
        "ana": "ana.lopez@northwind.example",
        "ben": "ben.okafor@northwind.example",
        "dora": "dora.maier@northwind.example",
    }
    return {
        "id": router_id,
        "name": name,
        "object_type": "contacts",
        "is_published": True,
        "has_integration": False,
        "settings": {
            "overwrite": False,
            "owner_field": "contact_owner",
            "distribution_model": "round robin",
            "disable_default_assignment": True,
            "ignore_working_hours": True,
            "account_matching": False,
            "rotation_type": "users",
            "sla": {
                "minutes": 10,
                "worked_field": "lead_status",
                "worked_values": ["in_progress", "connected"],
            },
            "trigger": {
                "groups": [
                    {"conditions": [{"field": "lifecycle_stage", "operator": "in", "value": ["lead"]}]}
                ]
            },
        },
        "users": [{"email": emails[m]} for m in members],
        "teams": [],
    }


class Receiver:
    """Webhook receiver on loopback: `/ok/...` answers 204, `/gone` 410, `/failing` 500."""

    def __init__(self):
        self.received = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.received.append((self.path, json.loads(body or b"null")))
                status = 410 if self.path == "/gone" else 500 if self.path == "/failing" else 204
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


class Api:
    def __init__(self, base, client):
        self.base = base
        basic = base64.b64encode(f"{client[0]}:{client[1]}".encode()).decode()
        status, token = self.call(
            "POST",
            "/oauth2/token",
            form={"grant_type": "client_credentials", "scope": SCOPES},
            auth=f"Basic {basic}",
        )
        if status != 200:
            fail(f"token for {client[0]}: {status} {token}")
        self.token = token["access_token"]

    def call(self, method, path, body=None, form=None, auth=None, headers=None):
        all_headers = {"Accept": "application/json", **(headers or {})}
        data = None
        if auth is not None:
            all_headers["Authorization"] = auth
        elif getattr(self, "token", None):
            all_headers["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            data = json.dumps(body).encode()
            all_headers["Content-Type"] = "application/json"
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            all_headers["Content-Type"] = "application/x-www-form-urlencoded"
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers=all_headers
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        return status, (json.loads(raw) if raw else None)

    def expect(self, status, method, path, body=None, headers=None):
        got, answer = self.call(method, path, body, headers=headers)
        if got != status:
            fail(f"{method} {path}: expected {status}, got {got} {answer}")
        print(f"ok {got} {method} {path}", flush=True)
        return answer


def wait_until(what, condition, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            fail(f"timed out waiting until {what}")
        time.sleep(0.5)


def history(api, object_type, record):
    return api.expect(200, "GET", f"/{object_type}/{record}/dispatches?limit=100")["data"]


def send_to_queue(queue_url, router, record):
    import boto3

    sqs = boto3.client(
        "sqs",
        endpoint_url=os.environ["AWS_ENDPOINT_URL"],
        region_name=os.environ.get("AWS_REGION", "us-east-1"),
    )
    sqs.send_message(
        QueueUrl=queue_url, MessageBody=json.dumps({"router_id": router, "object_id": record})
    )
    print(f"ok sent {record} to the queue for router {router}", flush=True)


def crm_script(crm_port, body):
    request = urllib.request.Request(
        f"http://127.0.0.1:{crm_port}/_fake/script",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


def drive(base, crm_port, queue_url):
    receiver = Receiver()
    nw = Api(base, NORTHWIND)
    it = Api(base, INITECH)

    # Webhook subscriptions: one takes everything, one is gone (410 disables it), one fails.
    every = ["assignment.created", "dispatch.unassigned", "crm_sync.failed"]
    all_events = nw.expect(
        201,
        "POST",
        "/webhooks",
        {"url": receiver.base + "/ok/northwind", "events": every, "description": "everything"},
    )
    gone = nw.expect(
        201, "POST", "/webhooks", {"url": receiver.base + "/gone", "events": ["assignment.created"]}
    )
    failing = nw.expect(
        201,
        "POST",
        "/webhooks",
        {"url": receiver.base + "/failing", "events": ["dispatch.unassigned"]},
    )
    dropped = nw.expect(
        201, "POST", "/webhooks", {"url": receiver.base + "/ok/dropped", "events": every}
    )
    nw.expect(204, "DELETE", f"/webhooks/{dropped['id']}")
    nw.expect(200, "PATCH", f"/webhooks/{all_events['id']}", {"description": "every event"})
    nw.expect(200, "POST", f"/webhooks/{all_events['id']}/rotate-secret")
    crm_hook = it.expect(
        201,
        "POST",
        "/webhooks",
        {"url": receiver.base + "/ok/initech", "events": ["crm_sync.failed", "assignment.created"]},
    )

    # Records of each type: created (one with an Idempotency-Key, sent twice), patched, archived.
    def create(api, object_type, fields, headers=None):
        return api.expect(201, "POST", f"/{object_type}", {"fields": fields}, headers)["id"]

    key = {"Idempotency-Key": "compat-contact-1"}
    first = create(nw, "contacts", {"first_name": "Ivy", "email": "ivy@compat.example", "region": "emea"}, key)
    replay = create(nw, "contacts", {"first_name": "Ivy", "email": "ivy@compat.example", "region": "emea"}, key)
    if replay != first:
        fail("the idempotent replay answered another contact")
    apac = create(nw, "contacts", {"first_name": "Aki", "email": "aki@compat.example", "region": "apac"})
    queued = [
        create(nw, "contacts", {"first_name": f"Quinn {n}", "email": f"quinn{n}@compat.example", "region": "amer"})
        for n in (1, 2)
    ]
    untouched = create(
        nw,
        "contacts",
        {"first_name": "Uma", "email": "uma@compat.example", "lifecycle_stage": "lead", "lead_status": "new"},
    )
    worked = create(
        nw,
        "contacts",
        {"first_name": "Wes", "email": "wes@compat.example", "lifecycle_stage": "lead", "lead_status": "new"},
    )
    handed_over = create(
        nw,
        "contacts",
        {"first_name": "Hal", "email": "hal@compat.example", "lifecycle_stage": "lead"},
    )
    alone = create(
        nw,
        "contacts",
        {"first_name": "Ola", "email": "ola@compat.example", "lifecycle_stage": "lead"},
    )
    archived_contact = create(nw, "contacts", {"first_name": "Ava", "email": "ava@compat.example"})
    company = create(nw, "companies", {"company_name": "Compat Labs", "website_url": "https://compat.example"})
    archived_company = create(nw, "companies", {"company_name": "Gone Ltd"})
    big_deal = create(nw, "deals", {"deal_name": "Compat expansion", "amount": 5000, "pipeline": "default", "deal_stage": "qualified_to_buy"})
    small_deal = create(nw, "deals", {"deal_name": "Compat trial", "amount": 10, "pipeline": "default", "deal_stage": "appointment_scheduled"})
    ticket = create(nw, "tickets", {"ticket_name": "Export broken", "priority": "urgent", "pipeline": "support", "ticket_stage": "new"})
    nw.expect(200, "PATCH", f"/contacts/{apac}", {"fields": {"job_title": "CTO", "city": "Osaka"}})
    nw.expect(200, "PATCH", f"/companies/{company}", {"fields": {"industry": "Software"}})
    nw.expect(200, "PATCH", f"/deals/{big_deal}", {"fields": {"close_date": "2027-01-31"}})
    nw.expect(200, "PATCH", f"/tickets/{ticket}", {"fields": {"ticket_stage": "waiting_on_us"}})
    nw.expect(200, "DELETE", f"/contacts/{archived_contact}")
    nw.expect(200, "DELETE", f"/companies/{archived_company}")

    # Dispatches by API: assignments, unassigned outcomes, an idempotent replay, explain.
    def dispatch(api, router, record, headers=None):
        return api.expect(
            200, "POST", "/dispatch/router", {"router_id": router, "object_id": record}, headers
        )

    dispatch(nw, INBOUND, first)
    dispatch(nw, INBOUND, apac)  # the trigger does not match: unassigned
    replayed = {"Idempotency-Key": "compat-dispatch-dana"}
    answer = dispatch(nw, INBOUND, DANA, replayed)
    if dispatch(nw, INBOUND, DANA, replayed) != answer:
        fail("the idempotent dispatch replay answered differently")
    dispatch(nw, DEALS, big_deal)
    dispatch(nw, DEALS, small_deal)  # under the trigger's amount: unassigned
    got, _ = nw.call("POST", "/dispatch/router", {"router_id": TICKETS, "object_id": ticket})
    print(f"ok {got} dispatch through the unpublished tickets router", flush=True)
    got, _ = nw.call("POST", "/dispatch/router", {"router_id": ARCHIVED, "object_id": company})
    print(f"ok {got} dispatch through the archived companies router", flush=True)
    nw.expect(200, "POST", "/dispatch/router/explain", {"router_id": INBOUND, "object_id": LEE})

    # Dispatches by queue.
    for record in queued:
        send_to_queue(queue_url, INBOUND, record)
    for record in queued:
        wait_until(
            f"{record} was dispatched from the queue",
            lambda r=record: any(e["source"] == "queue" for e in history(nw, "contacts", r)),
        )

    # Volume: more records of each type, dispatched by API and by queue, so lists page and
    # rotations and tallies move.
    regions = ["emea", "amer", "apac"]
    more = [
        create(
            nw,
            "contacts",
            {"first_name": f"Vol {n}", "email": f"vol{n}@compat.example", "region": regions[n % 3]},
        )
        for n in range(24)
    ]
    for n, record in enumerate(more):
        if n % 2:
            send_to_queue(queue_url, INBOUND, record)
        else:
            dispatch(nw, INBOUND, record)
    for n in range(8):
        deal = create(
            nw,
            "deals",
            {
                "deal_name": f"Volume deal {n}",
                "amount": 500 * (n + 1),
                "pipeline": "default",
                "deal_stage": "qualified_to_buy",
            },
        )
        dispatch(nw, DEALS, deal)
    for n in range(6):
        create(nw, "companies", {"company_name": f"Volume {n}", "website_url": f"https://v{n}.compat.example"})
        create(
            nw,
            "tickets",
            {"ticket_name": f"Volume ticket {n}", "pipeline": "support", "ticket_stage": "new"},
        )
    for record in more[1::2]:
        wait_until(
            f"{record} was dispatched from the queue",
            lambda r=record: any(e["source"] == "queue" for e in history(nw, "contacts", r)),
        )

    # SLA checks: one record worked before its check (met), one given to another owner (cancelled),
    # one left alone (reassigned, again and again until the fifth reassignment in a row, which
    # starts no check), one on the one-member router (nobody else to take it: expired).
    dispatch(nw, SLA_ROUTER, worked)
    dispatch(nw, SLA_ROUTER, untouched)
    dispatch(nw, SLA_ROUTER, handed_over)
    dispatch(nw, SOLO_ROUTER, alone)
    nw.expect(200, "PATCH", f"/contacts/{worked}", {"fields": {"lead_status": "in_progress"}})
    nw.expect(
        200,
        "PATCH",
        f"/contacts/{handed_over}",
        {"fields": {"contact_owner": "chen.wei@northwind.example"}},
    )

    def sla_settled(record):
        entries = history(nw, "contacts", record)
        statuses = [(e.get("sla") or {}).get("status") for e in entries]
        return entries if entries and "pending" not in statuses else None

    for record in (worked, untouched, handed_over, alone):
        entries = wait_until(f"the SLA checks of {record} ended", lambda r=record: sla_settled(r), 180)
        print(f"ok SLA of {record}: {[(e['source'], (e.get('sla') or {}).get('status')) for e in entries]}")

    # CRM syncs: one succeeds, one fails after its retries (a crm_sync.failed event).
    dispatch(it, CRM_ROUTER, INITECH_CONTACTS[0])
    crm_script(crm_port, {"status": 503, "body": {"message": "Service Unavailable"}, "times": 20})
    dispatch(it, CRM_ROUTER, INITECH_CONTACTS[1])
    wait_until(
        "a crm_sync.failed delivery",
        lambda: any(
            p == "/ok/initech" and body.get("type") == "crm_sync.failed" for p, body in receiver.received
        ),
    )
    crm_script(crm_port, {"status": 200, "times": 0})
    dispatch(it, CRM_ROUTER, INITECH_CONTACTS[2])

    # A member patched.
    nw.expect(200, "PATCH", f"/users/{CHEN}", {"full_name": "Chen Wei"})

    # Webhook deliveries settle: delivered, the gone one disabled, the failing ones failed.
    def settled(api, hook):
        log = api.expect(200, "GET", f"/webhooks/{hook}/deliveries?limit=100")["data"]
        return log if log and all(d["status"] in ("delivered", "failed") for d in log) else None

    delivered = wait_until("the deliveries settled", lambda: settled(nw, all_events["id"]))
    wait_until("the failing deliveries ended", lambda: settled(nw, failing["id"]))
    wait_until("the CRM deliveries settled", lambda: settled(it, crm_hook["id"]))
    wait_until(
        "the gone subscription was disabled",
        lambda: not nw.expect(200, "GET", f"/webhooks/{gone['id']}")["enabled"],
    )
    nw.expect(202, "POST", f"/webhooks/{all_events['id']}/deliveries/{delivered[-1]['id']}/retry")
    wait_until("the manual retry settled", lambda: settled(nw, all_events["id"]))

    # Stats of every router (reads), then a last look at the CRM syncs settling.
    for router in (INBOUND, DEALS, TICKETS, SLA_ROUTER):
        nw.expect(200, "GET", f"/routers/{router}/stats")
    it.expect(200, "GET", f"/routers/{CRM_ROUTER}/stats")
    wait_until(
        "every CRM sync ended",
        lambda: all(
            (e.get("crm_sync") or {}).get("status") not in ("pending", "retrying")
            for record in INITECH_CONTACTS
            for e in history(it, "contacts", record)
        ),
    )
    print(f"==> done: {len(receiver.received)} webhook requests received")
    receiver.server.shutdown()


def main():
    if sys.argv[1:2] == ["seed"] and len(sys.argv) == 4:
        seed(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["drive"] and len(sys.argv) == 5:
        drive(sys.argv[2].rstrip("/"), int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
