"""Schemathesis hooks: the test data the API description cannot carry.

The document describes every account; the test runs against one, the demo seed's first account
(`infra/seed/demo.json`). Two things about that account decide whether a well-formed request
succeeds, and JSON Schema cannot say them:

* which members and roles exist: a record's owner field takes the id or e-mail of an *active
  member of the account*, a member's `role_id` a role *of the account*. `before_load_schema`
  narrows those values, in the copy of the document this run tests, to the demo account's members
  and roles, exactly as a client would pick them from `GET /users`. Values outside them stay
  negative cases (the API must refuse them, and does).
* what the account defines, and text only a parser knows: the document describes every account,
  so a record's `fields` takes any custom field name (`additionalProperties`), an enumeration any
  string (its standard options are the schema's `examples`; each field's catalogue type is its
  `x-field-type`), a datetime any text, `properties` any name and a member's `time_zone` any
  zone-shaped name. `before_load_schema` narrows them, in this run's copy, to what the demo
  account has: its custom fields (by type) and no other name, an enumeration's standard options
  plus the ones the account added, RFC 3339 instants and dates, the standard and custom property
  names, the example zones. Values outside them stay negative cases (the API must refuse them,
  and does).
* "at least one of" on create (contacts: `email`, `first_name`, `last_name`; companies:
  `company_name`, `website_url`; the spec's POST table): the document says it in words (one
  object schema cannot say it in a form client generators read), and `before_call` gives a
  positive create that holds none of them a first name or a company name.
* rules across two values of one entry: a working-hours window cannot end when it starts, an
  out-of-office range cannot end before it starts. `map_case` repairs positive cases only, so
  a request generated as valid is valid; negative cases are left as generated.

* internationalized hosts: `website_url`'s pattern describes ASCII hosts; a host with non-ASCII
  letters is valid too when IDNA accepts it (stored as its punycode A-label, BEHAVIOR 3 and 6),
  which no JSON Schema pattern can say. A negative case whose only claim to be invalid may be
  such a host (it matches the pattern once its non-ASCII characters are read as letters) is
  ambiguous, and `filter_case` leaves it out; every other negative case is kept.
* webhook URLs: a subscription's `url` must be an absolute http(s) URL whose host is not an IP
  literal of a private range (BEHAVIOR 13), which no JSON Schema string format says. A positive
  case gets a valid URL of its own (`before_call`); negative cases keep what was generated. The
  account may hold 20 subscriptions, so each one a case creates is deleted after the call
  (`after_call`), as a client cleaning up would.
* router configurations (BEHAVIOR 15): a router's users must be members of the account, its
  teams teams of the account, and its settings hold cross-field rules (`owner_field` a user field
  of the router's type, percentages only on percentage routers, summing to 100, a trigger over
  the type's fields). `before_load_schema` narrows a create's and a draft's `users[].email` to
  the account's members and `teams[].name` to its teams, in this run's copy of the document, and
  `before_call` makes a positive body's settings one valid round robin setting of contacts (or
  none) without percentages; negative cases keep what was generated.
* facts only the server knows: an `after` cursor is valid only when this list issued it (it is
  signed), and an `Idempotency-Key` is valid for one request body only (BEHAVIOR 10 and 11). A
  positive case therefore carries no made-up cursor (it reads the first page) and a fresh key of
  its own; negative cases keep what was generated (the API must refuse them, and does).

No check is switched off here and no failure is filtered: these hooks only feed the generator
facts about the account under test.

One generator setting: Hypothesis' targeting is off (`ST_TARGETING=1` turns it back on). With
it, schemathesis reports every fuzzed case's success rate to `hypothesis.target`, and after half
of an operation's examples Hypothesis hill-climbs from the best ones, mutating choice sequences
toward inputs the API accepts. Without it the whole budget of examples is plain generation: as many
cases (7,233 and 7,244 in two runs, 7,232 with it, from the fixed seed), every phase and check,
129 and 132 CPU seconds against 151 one after another (docs/performance.md, "The test command").
"""

import copy
import json
import os
import re
import uuid
from collections.abc import MutableMapping
from pathlib import Path

import hypothesis
import schemathesis


def _no_target(observation, *, label=""):
    """Stands in for `hypothesis.target`: the observation is dropped, so no optimisation runs."""


if os.environ.get("ST_TARGETING", "").strip().lower() not in ("1", "true", "yes", "on"):
    hypothesis.target = _no_target

SEED = Path(os.environ.get("ROUTING_SEED", Path(__file__).resolve().parents[1] / "seed" / "demo.json"))


def _account():
    return json.loads(SEED.read_text())["accounts"][0]


def _members():
    """Ids and e-mails of the account's active members."""
    values = []
    for user in _account().get("users", []):
        if user.get("archived") in (None, False):
            values += [user["id"], user["email"].lower()]
    return values


def _roles():
    return [role["id"] for role in _account().get("roles", [])]


def _calendars():
    """Ids of the account's holiday calendars (BEHAVIOR 17)."""
    return [calendar["id"] for calendar in _account().get("holiday_calendars", [])]


def _narrow_owner(schema, members):
    """Replaces the UUID / e-mail alternatives of an owner field by the account's members."""
    if not isinstance(schema, dict):
        return
    alternatives = schema.get("anyOf")
    if isinstance(alternatives, list) and any(a.get("format") == "uuid" for a in alternatives if isinstance(a, dict)):
        kept = [a for a in alternatives if not (isinstance(a, dict) and a.get("format") in ("uuid", "email"))]
        schema["anyOf"] = [{"type": "string", "enum": members}] + kept


def _owner_fields(fields_schema):
    """Every owner-field property schema of a record write's `fields`, required ones included."""
    parts = fields_schema.get("allOf", [fields_schema])
    stack = list(parts)
    while stack:
        part = stack.pop()
        if not isinstance(part, dict):
            continue
        stack += part.get("anyOf", []) if isinstance(part.get("anyOf"), list) else []
        for name, prop in (part.get("properties") or {}).items():
            if name.endswith("_owner"):
                yield prop


# A blank string: the characters the server trims (shared/src/api/openapi/mod.rs, WHITESPACE).
_BLANK = "^[\\u0009-\\u000d \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*$"

# The record type of each write schema's name stem.
_TYPES = {"Contact": "contacts", "Company": "companies", "Deal": "deals", "Ticket": "tickets"}


def _definitions(object_type):
    """The demo account's field definitions of a record type (seed `fields`)."""
    return _account().get("fields", {}).get(object_type, [])


def _option_names(definition):
    return [o["internal_name"] for o in definition.get("options", [])] + [o["name"] for o in definition.get("options", [])]


# A custom field takes what a standard field of its type takes (BEHAVIOR 3): the write schema
# and field whose schema a custom field of each type borrows.
_SAME_TYPE = {
    "string": ("ContactUpdate", "phone"),
    "number": ("DealUpdate", "amount"),
    "datetime": ("DealUpdate", "close_date"),
    "enumeration": ("DealUpdate", "deal_type"),
}


def _custom_value(definition, schemas):
    """The schema of a custom field of the demo account, by field type (narrowed afterwards)."""
    kind = definition["field_type_id"]
    if kind == "bool":
        return {"x-field-type": "bool", "anyOf": [{"type": "boolean"}, {"type": "null"}]}
    if kind == "user":
        return {"x-field-type": "user", "anyOf": [{"type": "string", "enum": _members()}, {"type": "string", "pattern": _BLANK}, {"type": "null"}]}
    schema, field = _SAME_TYPE[kind]
    value = copy.deepcopy(schemas[schema]["properties"]["fields"]["properties"][field])
    if kind == "enumeration":
        value["examples"] = []
    return value


def _narrow_field(prop, definition):
    """One field of a record write, by its catalogue type (`x-field-type`): an enumeration to its
    options (the standard ones, its `examples`, and the account's), a datetime to RFC 3339
    instants and dates (the document takes any text the server reads, which no schema lists)."""
    kind = prop.get("x-field-type")
    required = "anyOf" not in prop
    clearing = [{"type": "string", "pattern": _BLANK}, {"type": "null"}]
    if kind == "enumeration":
        options = list(dict.fromkeys(list(prop.get("examples", [])) + _option_names(definition or {})))
        value = [{"type": "string", "enum": options}]
    elif kind == "datetime":
        numbers = [a for a in prop.get("anyOf", [prop]) if a.get("type") == "number"]
        value = [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}] + numbers
    else:
        return
    for key in ("anyOf", "type", "pattern", "maxLength", "enum"):
        prop.pop(key, None)
    prop["anyOf"] = value if required else value + clearing


def _narrow_fields(fields, object_type, schemas):
    """A record write's `fields`: the account's names only, each to the values it takes."""
    definitions = {d["internal_name"]: d for d in _definitions(object_type)}
    properties = fields.setdefault("properties", {})
    for name, definition in definitions.items():
        if name not in properties:
            properties[name] = _custom_value(definition, schemas)
    for name, prop in properties.items():
        _narrow_field(prop, definitions.get(name))
    fields["additionalProperties"] = False


def _narrow_properties_parameter(operation, object_type):
    custom = [d["internal_name"] for d in _definitions(object_type)]
    for parameter in operation.get("parameters", []):
        if parameter.get("name") == "properties" and isinstance(parameter.get("schema"), dict):
            items = parameter["schema"].get("items", {})
            names = list(dict.fromkeys(items.get("examples", []) + custom))
            parameter["schema"]["items"] = {"type": "string", "enum": names}


@schemathesis.hook
def before_load_schema(context, raw_schema):
    members = _members()
    schemas = raw_schema.get("components", {}).get("schemas", {})
    # Custom fields borrow the standard fields' schemas as the document has them.
    originals = copy.deepcopy(schemas)
    for name, schema in schemas.items():
        if name.endswith("Create") or name.endswith("Update"):
            fields = schema.get("properties", {}).get("fields", {})
            for owner in _owner_fields(fields):
                if "anyOf" in owner:
                    _narrow_owner(owner, members)
                else:
                    owner.clear()
                    owner.update({"type": "string", "enum": members})
            object_type = _TYPES.get(name.removesuffix("Create").removesuffix("Update"))
            if object_type and fields:
                _narrow_fields(fields, object_type, originals)
    for path, item in raw_schema.get("paths", {}).items():
        object_type = path.strip("/").split("/")[0]
        if object_type in _TYPES.values():
            for operation in item.values():
                if isinstance(operation, dict):
                    _narrow_properties_parameter(operation, object_type)
    patch = schemas.get("UserPatch")
    if patch:
        patch["properties"]["role_id"] = {"enum": _roles() + [None]}
        zone = patch["properties"].get("time_zone")
        if isinstance(zone, dict) and zone.get("examples"):
            patch["properties"]["time_zone"] = {"type": "string", "enum": zone["examples"]}
    if patch:
        patch["properties"]["holiday_calendar_id"] = {"enum": _calendars() + [None]}
    settings = schemas.get("RouterSettingsWrite")
    if settings and "holiday_calendar_id" in settings.get("properties", {}):
        settings["properties"]["holiday_calendar_id"] = {"enum": _calendars() + [None]}
    calendar = schemas.get("HolidayCalendarWrite")
    if calendar:
        zone = calendar["properties"].get("time_zone")
        if isinstance(zone, dict) and zone.get("examples"):
            calendar["properties"]["time_zone"] = {"type": "string", "enum": zone["examples"]}
    for name in ("RouterCreate", "RouterDraftBody"):
        body = schemas.get(name)
        if body:
            _narrow_router_config(body)
    # The router bodies refuse unknown keys (as the seed format does).
    for name in ("RouterCreate", "RouterDraftBody", "RouterSettingsWrite"):
        if name in schemas:
            schemas[name]["additionalProperties"] = False


def _teams():
    return [team["name"] for team in _account().get("teams", [])]


def _narrow_router_config(body):
    """A router body's users name the account's members and its teams the account's teams."""
    emails = [m for m in _members() if "@" in m]
    props = body.setdefault("properties", {})
    users = props.get("users", {})
    users["items"] = {"type": "object", "required": ["email"], "additionalProperties": False,
                      "properties": {"email": {"enum": emails}, "percentage": {"type": ["number", "null"]}}}
    teams = props.get("teams", {})
    teams["items"] = {"type": "object", "required": ["name"], "additionalProperties": False,
                      "properties": {"name": {"enum": _teams()}}}


_ROUTER_BODIES = ("POST /routers", "PUT /routers/{routerId}/draft")
_VALID_SETTINGS = {"owner_field": "contact_owner", "distribution_model": "round robin", "overwrite": True,
                   "ignore_working_hours": True}


_OWNER_FIELDS = {"contacts": "contact_owner", "companies": "company_owner", "deals": "deal_owner",
                 "tickets": "ticket_owner"}


def _owner_field_of(case, kwargs=None):
    """The owner field of the router a draft is written to: a seeded router's own type, else
    contacts (every router a positive `POST /routers` creates here assigns contacts). The
    router is read from the URL about to be called when there is one (the coverage phase can
    send a URL built before its path parameters were last generated), else from the case."""
    if case.operation.label != "PUT /routers/{routerId}/draft":
        return _OWNER_FIELDS["contacts"]
    candidates = [str((case.path_parameters or {}).get("routerId", ""))]
    url = (kwargs or {}).get("url")
    if isinstance(url, str):
        candidates.insert(0, url)
    for router in _account().get("routers", []):
        if any(router.get("id") and router["id"] in c for c in candidates):
            return _OWNER_FIELDS.get(router.get("object_type"), _OWNER_FIELDS["contacts"])
    return _OWNER_FIELDS["contacts"]


def _router_config(case, kwargs):
    """A positive router body passes the cross-field rules: contacts, round robin (no
    percentages), its settings one valid setting or none."""
    meta = case.meta
    positive = meta is None or meta.generation.mode.is_positive
    if not positive or case.operation.label not in _ROUTER_BODIES:
        return
    for body in (case.body, kwargs.get("json")):
        if not isinstance(body, dict):
            continue
        if case.operation.label == "POST /routers":
            body["object_type"] = "contacts"
        else:
            body.pop("object_type", None)
        if body.get("settings") is not None:
            body["settings"] = dict(_VALID_SETTINGS)
            body["settings"]["owner_field"] = _owner_field_of(case, kwargs)
        for user in body.get("users") or []:
            if isinstance(user, dict):
                user.pop("percentage", None)


def _draft_owner_field(case, kwargs):
    """A draft body (any mode: the coverage phase sends the documented example, a contacts
    router's, with an unexpected header as a valid case) that names the standard owner field of
    another record type gets its router's own: a router's type never changes (BEHAVIOR 15)."""
    if case.operation.label != "PUT /routers/{routerId}/draft":
        return
    own = _owner_field_of(case, kwargs)
    for body in (case.body, kwargs.get("json")):
        settings = body.get("settings") if isinstance(body, dict) else None
        if isinstance(settings, dict) and settings.get("owner_field") in _OWNER_FIELDS.values():
            settings["owner_field"] = own


def _fix_windows(body):
    for window in body.get("working_hours") or []:
        if isinstance(window, dict) and window.get("start_date") == window.get("end_date"):
            hour, minute = window["end_date"].split(":")
            window["end_date"] = "%02d:%02d" % (int(hour), (int(minute) + 1) % 60)


def _in_order(start, end):
    """Whether `start` is surely not later than `end`, read as ISO dates or timestamps."""
    from datetime import datetime

    try:
        a, b = datetime.fromisoformat(start.strip()), datetime.fromisoformat(end.strip())
    except ValueError:
        return False
    if (a.tzinfo is None) != (b.tzinfo is None):
        return False
    return a <= b


def _fix_ranges(body):
    """An entry whose end is not surely after its start ends when it starts (always valid)."""
    for entry in body.get("out_office_dates") or []:
        if isinstance(entry, dict):
            start, end = entry.get("start_date"), entry.get("end_date")
            if isinstance(start, str) and isinstance(end, str) and not _in_order(start, end):
                entry["end_date"] = start


def _stats_window_valid(query):
    """Whether the `from` / `to` of a stats query make a window the server accepts (BEHAVIOR 8:
    RFC 3339 instants, from < to, at most 93 days; each defaults to the current month's bound),
    which JSON Schema cannot say."""
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=32)).replace(day=1)

    def read(name, default):
        value = query.get(name)
        if value is None:
            return default
        try:
            at = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return at if at.tzinfo is not None else None

    a, b = read("from", start), read("to", end)
    return a is not None and b is not None and a < b and b - a <= timedelta(days=93)


def _audit_filters_valid(query):
    """Whether the filters of `GET /audit-events` are ones the server accepts (BEHAVIOR 18):
    `target_type` and `target_id` both or neither, `from` before `to` when both are given; JSON
    Schema cannot say either."""
    from datetime import datetime

    if ("target_type" in query) != ("target_id" in query):
        return False

    def read(name):
        value = query.get(name)
        if value is None:
            return None
        try:
            at = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return at if at.tzinfo is not None else None

    a, b = read("from"), read("to")
    return a is None or b is None or a < b


def _simulate_window_valid(body):
    """Whether the `from` / `to` of a replay body make a window the server accepts (BEHAVIOR 16:
    RFC 3339 instants, from < to, at most 93 days; `to` defaults to now and `from` to `to` minus
    30 days), which JSON Schema cannot say."""
    from datetime import datetime, timedelta, timezone

    def read(name):
        value = body.get(name)
        if value is None:
            return None, True
        try:
            at = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            return None, False
        return (at, True) if at.tzinfo is not None else (None, False)

    (end, end_ok), (start, start_ok) = read("to"), read("from")
    if not (end_ok and start_ok):
        return False
    end = end or datetime.now(timezone.utc)
    start = start or end - timedelta(days=30)
    return start < end and end - start <= timedelta(days=93)


# Create operations whose `fields` need at least one of these to hold a value, and the value a
# positive case that holds none of them gets.
_AT_LEAST_ONE = {
    "POST /contacts": (("email", "first_name", "last_name"), ("first_name", "Jo")),
    "POST /companies": (("company_name", "website_url"), ("company_name", "Contoso")),
}


def _holds_value(value):
    return value is not None and not (isinstance(value, str) and value.strip() == "")


def _fix_at_least_one(case, kwargs):
    """A positive create (any phase) holding none of its type's "at least one of" fields gets one."""
    meta = case.meta
    positive = meta is None or meta.generation.mode.is_positive
    rule = _AT_LEAST_ONE.get(case.operation.label)
    if not positive or not rule:
        return
    names, (name, value) = rule
    for body in (case.body, kwargs.get("json")):
        fields = body.get("fields") if isinstance(body, dict) else None
        if isinstance(fields, dict) and not any(_holds_value(fields.get(n)) for n in names):
            fields[name] = value


@schemathesis.hook
def map_case(context, case):
    meta = case.meta
    positive = meta is not None and meta.generation.mode.is_positive
    if positive and case.operation.label == "PATCH /users/{userId}" and isinstance(case.body, dict):
        _fix_windows(case.body)
        _fix_ranges(case.body)
    if positive and isinstance(case.query, dict):
        case.query.pop("after", None)
        if case.operation.label == "GET /routers/{routerId}/stats" and not _stats_window_valid(case.query):
            case.query.pop("from", None)
            case.query.pop("to", None)
        if case.operation.label == "GET /audit-events" and not _audit_filters_valid(case.query):
            for name in ("target_type", "target_id", "from", "to"):
                case.query.pop(name, None)
    return case


# `website_url`'s pattern (shared/src/api/openapi/records.rs), surrounding whitespace stripped.
_ASCII_HOST = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)?([A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*(:[0-9]{1,4})?([/?#]\S*)?")


def _maybe_international_host(value):
    """Whether `value` has non-ASCII characters and is a host of the pattern if they were letters."""
    if not isinstance(value, str) or value.isascii():
        return False
    folded = "".join(c if c.isascii() else "a" for c in value.strip())
    return _ASCII_HOST.fullmatch(folded) is not None


@schemathesis.hook
def filter_case(context, case):
    meta = case.meta
    negative = meta is not None and not meta.generation.mode.is_positive
    if negative and isinstance(case.body, dict) and isinstance(case.body.get("fields"), dict):
        if _maybe_international_host(case.body["fields"].get("website_url")):
            return False
    return True


@schemathesis.hook
def before_call(context, case, kwargs):
    """A valid Idempotency-Key (any phase, any mode) becomes a fresh one: a key names one request.

    Here rather than in `map_case`, which the examples phase does not run. A positive webhook
    body gets a valid URL here for the same reason."""
    _webhook_url(context, case, kwargs)
    _fix_at_least_one(case, kwargs)
    _router_config(case, kwargs)
    _draft_owner_field(case, kwargs)
    _no_precondition_on_a_bad_draft(case, kwargs)
    _simulate_window(case, kwargs)
    _audit_filters(case, kwargs)
    _calendar_holidays(case, kwargs)
    _keep_demo_calendars(case)
    for headers in (case.headers, kwargs.get("headers")):
        if isinstance(headers, MutableMapping):
            for name, value in list(headers.items()):
                if name.lower() == "idempotency-key" and _valid_key(value):
                    headers[name] = str(uuid.uuid4())


_CALENDAR_BODIES = ("POST /holiday-calendars", "PUT /holiday-calendars/{id}")


def _calendar_holidays(case, kwargs):
    """A positive calendar body passes the rules across a holiday's keys (BEHAVIOR 17): `start`
    and `end` both or neither, `start` before `end`; 29 February only in a leap year."""
    meta = case.meta
    positive = meta is None or meta.generation.mode.is_positive
    if not positive or case.operation.label not in _CALENDAR_BODIES:
        return
    import calendar

    for body in (case.body, kwargs.get("json")):
        if not isinstance(body, dict):
            continue
        for holiday in body.get("holidays") or []:
            if not isinstance(holiday, dict):
                continue
            start, end = holiday.get("start"), holiday.get("end")
            if start is None or end is None or not start < end:
                holiday.pop("start", None)
                holiday.pop("end", None)
            date = holiday.get("date")
            if isinstance(date, str) and date[5:] == "02-29" and not calendar.isleap(int(date[:4])):
                holiday["date"] = date[:5] + "02-28"


def _keep_demo_calendars(case):
    """The demo account's holiday calendars stay for the whole run: other operations name them
    (`holiday_calendar_id` is narrowed to them), and a PATCH may first have let go of one, so a
    DELETE of one goes to an id of no calendar instead (404), whatever the mode."""
    if case.operation.label != "DELETE /holiday-calendars/{id}":
        return
    params = case.path_parameters
    if isinstance(params, MutableMapping) and str(params.get("id")) in _calendars():
        params["id"] = str(uuid.uuid4())


def _audit_filters(case, kwargs):
    """A positive `GET /audit-events` (any phase: the coverage phase's queries do not pass
    `map_case`) whose filters the server refuses (a target half given, `from` not before `to`)
    goes without them."""
    meta = case.meta
    positive = meta is None or meta.generation.mode.is_positive
    if not positive or case.operation.label != "GET /audit-events":
        return
    for query in (case.query, kwargs.get("params")):
        if isinstance(query, dict) and not _audit_filters_valid(query):
            for name in ("target_type", "target_id", "from", "to"):
                query.pop(name, None)


def _simulate_window(case, kwargs):
    """A positive replay body (any phase, stateful links included) whose window the server
    refuses (from not before to, or longer than 93 days) goes with the default window."""
    meta = case.meta
    positive = meta is None or meta.generation.mode.is_positive
    if not positive or case.operation.label != "POST /routers/{routerId}/simulate":
        return
    for body in (case.body, kwargs.get("json")):
        if isinstance(body, dict) and not _simulate_window_valid(body):
            body.pop("from", None)
            body.pop("to", None)


def _no_precondition_on_a_bad_draft(case, kwargs):
    """A negative draft `PUT` goes without `If-Match`: RFC 9110 13.2.1 evaluates preconditions
    before the request content is processed, so a stale tag answers 412 whatever the body, and
    schemathesis would read that 412 as a malformed body accepted. `If-Match` itself takes any
    string (a value outside the grammar never matches: 412), so a negative case of this
    operation is about its body or path, which the server then answers with 400 or 404."""
    meta = case.meta
    negative = meta is not None and not meta.generation.mode.is_positive
    if not negative or case.operation.label != "PUT /routers/{routerId}/draft":
        return
    for headers in (case.headers, kwargs.get("headers")):
        if isinstance(headers, MutableMapping):
            for name in list(headers):
                if name.lower() == "if-match":
                    del headers[name]


_WEBHOOK_BODIES = ("POST /webhooks", "PATCH /webhooks/{webhookId}")


def _webhook_url(context, case, kwargs):
    """A positive webhook body gets a valid URL (its host is never called: nothing resolves)."""
    meta = case.meta
    positive = meta is None or meta.generation.mode.is_positive
    if not positive or case.operation.label not in _WEBHOOK_BODIES:
        return
    for body in (case.body, kwargs.get("json")):
        if isinstance(body, dict) and isinstance(body.get("url"), str):
            body["url"] = f"https://hooks.example.com/{uuid.uuid4()}"


_DELETED_AFTER_CREATE = {"POST /webhooks": "webhooks", "POST /holiday-calendars": "holiday-calendars"}


@schemathesis.hook
def after_call(context, case, response):
    """A subscription or a holiday calendar a case created is deleted at once: the account may
    hold 20 of each."""
    collection = _DELETED_AFTER_CREATE.get(case.operation.label)
    if collection is None or response.status_code != 201:
        return
    try:
        created = response.json()
    except ValueError:
        return
    import urllib.request

    base = os.environ["ST_BASE_URL"]
    auth = os.environ["ST_AUTHORIZATION"]
    request = urllib.request.Request(f"{base}/{collection}/{created['id']}", method="DELETE", headers={"Authorization": auth})
    urllib.request.urlopen(request, timeout=10).read()


def _valid_key(value):
    """Whether `value` is a valid Idempotency-Key: 1 to 255 printable ASCII characters."""
    return isinstance(value, str) and 1 <= len(value) <= 255 and all(" " <= c <= "~" for c in value)
