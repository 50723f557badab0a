"""The README journey through the Python client that `openapi-python-client` generates from
`openapi.json` at its default settings: an example of the generated client, and a test of the
document (infra/scripts/generated-clients.sh generates the client, runs `mypy --strict` on this
file and then this file against the local server on the demo seed).

    python infra/clients/journey.py BASE_URL RESPONSES_JSONL

Every step goes through the generated functions and models, and fails (exit 1) on an answer it
does not expect. Every HTTP answer is also appended to RESPONSES_JSONL (method, path, status,
content type, body) for `validate_responses.py`, which checks each against the document.

The steps: a token (HTTP Basic), a contact with a custom field (`region`, an enumeration the
demo account added, given by its display name), read back with `properties`, patched, the
contact list walked two pages with cursors, a deal (stage `On hold`, an option the account added)
and a ticket, a webhook subscription, explain and dispatch through the "Inbound leads" router,
the contact's routing history, the router's stats, the entry's explanation and the audit log,
the subscription's deliveries, and a 400 and a 404 read into the error model.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TextIO, TypeVar

import httpx

from account_routing_api_client import AuthenticatedClient
from account_routing_api_client.api.dispatch import dispatch_router, explain_dispatch
from account_routing_api_client.api.records import (
    create_contact,
    create_deal,
    create_ticket,
    get_contact,
    list_contacts,
    update_contact,
)
from account_routing_api_client.api.audit import get_audit_event, list_audit_events
from account_routing_api_client.api.routing_history import get_router_dispatch, get_router_stats, list_contact_dispatches
from account_routing_api_client.api.token import issue_token
from account_routing_api_client.api.webhooks import create_webhook, delete_webhook, list_webhook_deliveries
from account_routing_api_client.models import (
    AuditEvent,
    ExplainedDispatchEntry,
    ListViewAuditEvent,
    AssignedAnswer,
    Contact,
    ContactCreate,
    ContactCreateFields,
    ContactList,
    ContactUpdate,
    ContactUpdateFields,
    Deal,
    DealCreate,
    DealCreateFields,
    DispatchRequest,
    ErrorBody,
    EventType,
    ExplainAnswer,
    ExplainRequest,
    ListViewDeliveryView,
    ListViewDispatchEntryView,
    RouterStats,
    Ticket,
    TicketCreate,
    TicketCreateFields,
    TokenRequestForm,
    TokenResponse,
    WebhookCreate,
    WebhookView,
)
from account_routing_api_client.types import Response

# The demo seed (infra/seed/demo.json): its first account's integration client, and its
# "Inbound leads" router (contacts whose region is EMEA or Americas, round robin).
CLIENT_ID = "northwind-integration"
CLIENT_SECRET = "dev-secret-change-me"
SCOPES = "service-api/read service-api/create service-api/update service-api/delete"
INBOUND_LEADS = uuid.UUID("5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45")

T = TypeVar("T")
P = TypeVar("P")


class JourneyError(Exception):
    """An answer the journey did not expect."""


def expect(response: Response[P], status: int, model: type[T]) -> T:
    """The parsed answer of `response`, which must have `status` and parse as `model`."""
    parsed = response.parsed
    if response.status_code != status or not isinstance(parsed, model):
        raise JourneyError(f"expected {status} {model.__name__}, got {int(response.status_code)}: {response.content!r}")
    return parsed


def check(condition: bool, what: str) -> None:
    if not condition:
        raise JourneyError(what)


class Receiver(BaseHTTPRequestHandler):
    """A webhook receiver on loopback: answers 204 to every delivery and counts them."""

    received: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
        length = int(self.headers.get("Content-Length", "0"))
        Receiver.received.append(self.rfile.read(length))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base's name)
        pass


def recorder(log: TextIO) -> dict[str, object]:
    """httpx arguments that append every answer to `log` as one JSON line."""

    def record(response: httpx.Response) -> None:
        response.read()
        entry = {
            "client": "python",
            "method": response.request.method,
            "path": response.request.url.path,
            "status": response.status_code,
            "content_type": response.headers.get("content-type"),
            "body": response.text,
        }
        log.write(json.dumps(entry) + "\n")

    return {"event_hooks": {"response": [record]}}


def journey(base_url: str, log: TextIO) -> None:
    httpx_args = recorder(log)
    run = uuid.uuid4().hex[:12]

    # 1. A token: the client authenticates with HTTP Basic (the operation's security scheme).
    basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
    token_client = AuthenticatedClient(base_url=base_url, token=basic, prefix="Basic", httpx_args=httpx_args)
    form = TokenRequestForm(grant_type="client_credentials", scope=SCOPES)
    token = expect(issue_token.sync_detailed(client=token_client, body=form), 200, TokenResponse)
    check(token.token_type == "Bearer" and token.expires_in > 0, f"token: {token}")
    api = AuthenticatedClient(base_url=base_url, token=token.access_token, httpx_args=httpx_args)

    # 2. A contact with a custom field: `region` is an enumeration of the account, given by its
    #    display name in another case; it is stored as the option's internal name.
    fields = ContactCreateFields(email=f"jo.{run}@example.com", first_name="Jo", last_name="Journey")
    fields["region"] = "emea"
    created = expect(create_contact.sync_detailed(client=api, body=ContactCreate(fields=fields)), 201, Contact)
    contact_id = created.id
    print(f"created contact {contact_id}")

    # 3. Read back with a custom property.
    read = expect(get_contact.sync_detailed(str(contact_id), client=api, properties=["region", "job_title"]), 200, Contact)
    check(read["region"] == "emea" and read.email == f"jo.{run}@example.com", f"read: {read.to_dict()}")

    # 4. Patch: a standard field and the custom one; only these change.
    changes = ContactUpdateFields(job_title="CTO")
    changes["region"] = "Americas"
    patched = expect(
        update_contact.sync_detailed(str(contact_id), client=api, body=ContactUpdate(fields=changes), properties=["job_title", "region"]),
        200,
        Contact,
    )
    check(patched["job_title"] == "CTO" and patched["region"] == "amer", f"patch: {patched.to_dict()}")

    # 5. Two pages of the contact list, the second one after the first one's cursor.
    first = expect(list_contacts.sync_detailed(client=api, limit=2), 200, ContactList)
    cursor = first.pagination.next_after
    check(isinstance(cursor, str) and len(first.data) == 2, f"first page: {first.to_dict()}")
    assert isinstance(cursor, str)
    second = expect(list_contacts.sync_detailed(client=api, limit=2, after=cursor), 200, ContactList)
    check(len(second.data) >= 1, "second page is empty")
    check(not {c.id for c in first.data} & {c.id for c in second.data}, "the pages overlap")

    # 6. A deal in a stage the account added ("On hold"), and a ticket.
    deal_fields = DealCreateFields(deal_name=f"Journey deal {run}", pipeline="default", deal_stage="On hold")
    deal_fields["amount"] = 12500
    deal = expect(create_deal.sync_detailed(client=api, body=DealCreate(fields=deal_fields)), 201, Deal)
    check(deal.deal_stage == "on_hold", f"deal: {deal.to_dict()}")
    ticket_fields = TicketCreateFields(ticket_name=f"Journey ticket {run}", pipeline="support", ticket_stage="new")
    ticket = expect(create_ticket.sync_detailed(client=api, body=TicketCreate(fields=ticket_fields)), 201, Ticket)
    check(ticket.pipeline == "support", f"ticket: {ticket.to_dict()}")

    # 7. A webhook subscription to a receiver on loopback (the local server may call http).
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    hook_url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    subscription = WebhookCreate(url=hook_url, events=[EventType.ASSIGNMENT_CREATED], description=f"journey {run}")
    webhook = expect(create_webhook.sync_detailed(client=api, body=subscription), 201, WebhookView)

    try:
        # 8. Explain, then dispatch the contact through "Inbound leads" (its region matches).
        request = DispatchRequest(router_id=str(INBOUND_LEADS), object_id=str(contact_id))
        question = ExplainRequest(router_id=str(INBOUND_LEADS), object_id=str(contact_id))
        explained = expect(explain_dispatch.sync_detailed(client=api, body=question), 200, ExplainAnswer)
        check(explained.dry_run is True, f"explain: {explained.to_dict()}")
        assigned = expect(dispatch_router.sync_detailed(client=api, body=request), 200, AssignedAnswer)
        check(assigned.success is True, f"dispatch: {assigned.to_dict()}")
        print(f"dispatch assigned {assigned.user}")

        # 9. The contact's routing history and the router's stats.
        history = expect(list_contact_dispatches.sync_detailed(str(contact_id), client=api), 200, ListViewDispatchEntryView)
        check(len(history.data) == 1, f"history: {history.to_dict()}")
        stats = expect(get_router_stats.sync_detailed(INBOUND_LEADS, client=api), 200, RouterStats)
        check(stats.total >= 1, f"stats: {stats.to_dict()}")

        # 9b. Why the contact went where it went: the entry with its run's explanation (BEHAVIOR
        #     18), and who created the subscription, from the audit log.
        entry = expect(get_router_dispatch.sync_detailed(INBOUND_LEADS, history.data[0].id, client=api), 200, ExplainedDispatchEntry)
        check(entry.user == assigned.user and entry.explanation is not None, f"entry: {entry.to_dict()}")
        events = expect(
            list_audit_events.sync_detailed(client=api, target_type="webhook", target_id=webhook.id),
            200,
            ListViewAuditEvent,
        )
        check([e.action for e in events.data] == ["webhook.created"], f"audit events: {events.to_dict()}")
        event = expect(get_audit_event.sync_detailed(events.data[0].id, client=api), 200, AuditEvent)
        check(event.id == events.data[0].id, f"audit event: {event.to_dict()}")

        # 10. The subscription's deliveries: the assignment is delivered to the receiver.
        deliveries = ListViewDeliveryView.from_dict({"data": [], "pagination": {"limit": 10, "offset": 0, "count": 0}})
        for _ in range(100):
            deliveries = expect(list_webhook_deliveries.sync_detailed(webhook.id, client=api), 200, ListViewDeliveryView)
            if deliveries.data and Receiver.received:
                break
            time.sleep(0.1)
        check(len(deliveries.data) >= 1 and len(Receiver.received) >= 1, f"deliveries: {deliveries.to_dict()}")
    finally:
        expect(delete_webhook.sync_detailed(webhook.id, client=api), 204, type(None))
        server.shutdown()

    # 11. A 400 and a 404, read into the error model.
    bad = ContactCreateFields(email="not an address")
    refused = expect(create_contact.sync_detailed(client=api, body=ContactCreate(fields=bad)), 400, ErrorBody)
    check(refused.error is True and refused.field == "email", f"400: {refused.to_dict()}")
    missing = expect(get_contact.sync_detailed(str(uuid.uuid4()), client=api), 404, ErrorBody)
    check(missing.error is True and "not found" in missing.message, f"404: {missing.to_dict()}")
    print("python journey: every step answered as expected")


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[2], "a", encoding="utf-8") as log:
        try:
            journey(sys.argv[1].rstrip("/"), log)
        except JourneyError as error:
            print(f"python journey FAILED: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
