#!/usr/bin/env python3
"""Deployment smoke test: walks the README journey against a running API and fails on the first
unexpected answer. Usage (see infra/scripts/smoke.sh):

    SMOKE_CLIENT_ID=... SMOKE_CLIENT_SECRET=... python3 infra/scripts/smoke.py https://<api>

The client needs the scopes service-api/read, service-api/create and service-api/update of an
account with at least one published contacts router (or name one with SMOKE_ROUTER_ID). It creates
one contact (a unique e-mail under smoke.example) and dispatches it, then walks router management
on a router of its own (create, draft, publish, dispatch, restore, publish); with
service-api/delete too, it archives the router and the contact at the end. Only the standard library: it runs wherever Python 3 does.
"""
import base64
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid

BASE = ""
TOKEN = ""
STEPS = 0


def fail(step, detail):
    print(f"FAILED {step}: {detail}", file=sys.stderr)
    sys.exit(1)


def call(method, path, body=None, headers=None, form=None, auth=None):
    """One request; answers (status, headers, JSON body or None)."""
    url = BASE + path
    data = None
    all_headers = {"Accept": "application/json"}
    if TOKEN and auth is None:
        all_headers["Authorization"] = f"Bearer {TOKEN}"
    if auth is not None:
        all_headers["Authorization"] = auth
    if body is not None:
        data = json.dumps(body).encode()
        all_headers["Content-Type"] = "application/json"
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        all_headers["Content-Type"] = "application/x-www-form-urlencoded"
    all_headers.update(headers or {})
    request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, answer_headers, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, answer_headers, raw = error.code, error.headers, error.read()
    except (urllib.error.URLError, OSError) as error:
        fail(f"{method} {path}", f"no answer: {error}")
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw.decode(errors="replace")
    return status, answer_headers, parsed


def expect(step, condition, detail):
    global STEPS
    if not condition:
        fail(step, detail)
    STEPS += 1
    print(f"ok     {step}")


def main():
    global BASE, TOKEN
    if len(sys.argv) != 2:
        fail("usage", "smoke.py BASE_URL (SMOKE_CLIENT_ID and SMOKE_CLIENT_SECRET in the environment)")
    BASE = sys.argv[1].rstrip("/")
    client_id = os.environ.get("SMOKE_CLIENT_ID")
    secret = os.environ.get("SMOKE_CLIENT_SECRET")
    if not client_id or not secret:
        fail("configuration", "set SMOKE_CLIENT_ID and SMOKE_CLIENT_SECRET")

    # 1. A token (client credentials, HTTP Basic).
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    scopes = os.environ.get("SMOKE_SCOPES", "service-api/read service-api/create service-api/update")
    status, _, body = call("POST", "/oauth2/token", form={"grant_type": "client_credentials", "scope": scopes},
                           auth=f"Basic {basic}")
    expect("token", status == 200 and body.get("token_type") == "Bearer" and body.get("access_token"),
           f"{status} {body}")
    TOKEN = body["access_token"]
    granted = body.get("scope", "").split()

    # 2. A contact, created with an Idempotency-Key, then the same request again: a replay.
    email = f"smoke-{uuid.uuid4().hex[:12]}@smoke.example"
    key = f"smoke-{uuid.uuid4()}"
    new = {"fields": {"email": email, "first_name": "Smoke"}}
    status, _, created = call("POST", "/contacts", new, {"Idempotency-Key": key})
    expect("create a contact", status == 201 and created.get("email") == email, f"{status} {created}")
    contact = created["id"]
    status, headers, again = call("POST", "/contacts", new, {"Idempotency-Key": key})
    expect("idempotent retry answers the first answer",
           status == 201 and again == created and headers.get("Idempotent-Replayed") == "true",
           f"{status} {dict(headers)} {again}")

    # 3. A patch.
    status, _, patched = call("PATCH", f"/contacts/{contact}?properties=job_title",
                              {"fields": {"job_title": "Smoke tester"}})
    expect("patch the contact", status == 200 and patched.get("job_title") == "Smoke tester", f"{status} {patched}")

    # 4. A list walked with a cursor.
    status, _, first = call("GET", "/contacts?limit=1")
    expect("list a first page", status == 200 and first["pagination"]["count"] == 1, f"{status} {first}")
    after = first["pagination"].get("next_after")
    if after:
        status, _, second = call("GET", f"/contacts?limit=1&after={urllib.parse.quote(after)}")
        expect("list the next page with the cursor",
               status == 200 and second["data"] and second["data"][0]["id"] != first["data"][0]["id"],
               f"{status} {second}")

    # 5. A router to dispatch through.
    router = os.environ.get("SMOKE_ROUTER_ID")
    if not router:
        status, _, routers = call("GET", "/routers?limit=100")
        expect("list the routers", status == 200, f"{status} {routers}")
        candidates = [r for r in routers["data"] if r["object_type"] == "contacts" and r["is_published"]]
        if not candidates:
            fail("pick a router", "no published contacts router: set SMOKE_ROUTER_ID")
        router = candidates[0]["id"]
    request = {"router_id": router, "object_id": contact}

    # 6. Explain, then dispatch: the same outcome.
    status, _, explained = call("POST", "/dispatch/router/explain", request)
    expect("explain", status == 200 and explained.get("dry_run") is True and "explanation" in explained,
           f"{status} {explained}")
    status, _, dispatched = call("POST", "/dispatch/router", request)
    expect("dispatch", status == 200 and "message" in dispatched, f"{status} {dispatched}")
    expect("dispatch answers what explain said", dispatched["message"] == explained["message"]
           and dispatched.get("user") == explained.get("user"), f"{explained} / {dispatched}")

    # 7. The history of the contact shows the dispatch.
    status, _, history = call("GET", f"/contacts/{contact}/dispatches?limit=5")
    expect("routing history", status == 200 and history["data"] and history["data"][0]["router_id"] == router
           and history["data"][0]["message"] == dispatched["message"], f"{status} {history}")

    # 8. Router management (BEHAVIOR 15): create -> draft -> publish -> dispatch -> restore ->
    # publish, through a router of its own over the member the dispatch above assigned (or any).
    member = dispatched.get("user")
    if not member:
        status, _, users = call("GET", "/users?limit=1")
        member = users["data"][0]["email"] if status == 200 and users.get("data") else None
    if member:
        settings = {"owner_field": "contact_owner", "distribution_model": "round robin",
                    "ignore_working_hours": True, "overwrite": True}
        config = {"name": "Smoke router", "object_type": "contacts", "settings": settings,
                  "users": [{"email": member}], "teams": []}
        status, _, made = call("POST", "/routers", config, {"Idempotency-Key": f"smoke-{uuid.uuid4()}"})
        expect("create a router", status == 201 and made.get("revision") == 1
               and made.get("is_published") is False, f"{status} {made}")
        smoke_router = made["id"]
        draft = dict(config, name="Smoke router v2")
        status, headers, drafted = call("PUT", f"/routers/{smoke_router}/draft", draft)
        etag = headers.get("ETag")
        expect("write its draft", status == 200 and drafted.get("based_on_revision") == 1 and etag,
               f"{status} {drafted}")
        status, _, refused = call("POST", f"/routers/{smoke_router}/publish")
        expect("publishing a draft needs If-Match", status == 428, f"{status} {refused}")
        status, _, published = call("POST", f"/routers/{smoke_router}/publish", headers={"If-Match": etag})
        expect("publish the draft", status == 200 and published.get("revision") == 2
               and published.get("is_published") is True, f"{status} {published}")
        status, _, assigned = call("POST", "/dispatch/router", {"router_id": smoke_router, "object_id": contact})
        expect("dispatch through it", status == 200 and assigned.get("user") == member, f"{status} {assigned}")
        status, _, history = call("GET", f"/routers/{smoke_router}/dispatches?limit=1")
        expect("the entry names the revision", status == 200
               and history["data"][0].get("router_revision") == 2, f"{status} {history}")
        status, headers, restored = call("POST", f"/routers/{smoke_router}/revisions/1/restore")
        expect("restore revision 1", status == 200 and restored.get("based_on_revision") == 1
               and headers.get("ETag"), f"{status} {restored}")
        status, _, rolled_back = call("POST", f"/routers/{smoke_router}/publish",
                                      headers={"If-Match": headers.get("ETag")})
        expect("publish it again", status == 200 and rolled_back.get("revision") == 3
               and rolled_back.get("name") == "Smoke router", f"{status} {rolled_back}")
        if "service-api/delete" in granted:
            status, _, archived = call("DELETE", f"/routers/{smoke_router}")
            expect("archive the router", status == 200 and archived.get("archived"), f"{status} {archived}")

    # 9. Clean up when the client may.
    if "service-api/delete" in granted:
        status, _, archived = call("DELETE", f"/contacts/{contact}")
        expect("archive the contact", status == 200 and archived.get("archived"), f"{status} {archived}")
    print(f"==> smoke test passed: {STEPS} checks against {BASE}")


if __name__ == "__main__":
    main()
