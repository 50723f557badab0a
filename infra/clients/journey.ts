// The README journey through a TypeScript client: the types `openapi-typescript` generates from
// `openapi.json` at its default settings and the `openapi-fetch` client over them. An example of
// the generated client, and a test of the document (infra/scripts/generated-clients.sh generates
// the types, type-checks this file with `tsc --noEmit --strict`, transpiles it and runs it against
// the local server on the demo seed):
//
//   node generated/ts-build/journey.js BASE_URL RESPONSES_JSONL
//
// Every step goes through the typed client and fails (exit 1) on an answer it does not expect.
// Every HTTP answer is also appended to RESPONSES_JSONL (method, path, status, content type,
// body) for validate_responses.py, which checks each against the document.
//
// The steps are the Python journey's (journey.py): a token (HTTP Basic), a contact with a custom
// field, read back, patched, two pages of the list with cursors, a deal and a ticket, a webhook
// subscription, explain and dispatch, the routing history and stats, the entry's explanation and
// the audit log, the deliveries, and a 400 and a 404 read into the error type.

import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./generated/typescript/schema.js";

type Schemas = components["schemas"];

// The demo seed (infra/seed/demo.json): its first account's integration client, and its
// "Inbound leads" router (contacts whose region is EMEA or Americas, round robin).
const CLIENT_ID = "northwind-integration";
const CLIENT_SECRET = "dev-secret-change-me";
const SCOPES = "service-api/read service-api/create service-api/update service-api/delete";
const INBOUND_LEADS = "5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45";

class JourneyError extends Error {}

function check(condition: boolean, what: string): asserts condition {
  if (!condition) {
    throw new JourneyError(what);
  }
}

/** The body of an answer that must have `status` (and a body). */
function expect<T>(
  result: { data?: T; error?: unknown; response: Response },
  status: number,
): NonNullable<T> {
  check(
    result.response.status === status && result.data !== undefined && result.data !== null,
    `${result.response.url}: expected ${status}, got ${result.response.status} ${JSON.stringify(result.error)}`,
  );
  return result.data as NonNullable<T>;
}

/** The error body of an answer that must have `status`. */
function expectError<E>(
  result: { data?: unknown; error?: E; response: Response },
  status: number,
): NonNullable<E> {
  check(
    result.response.status === status && result.error !== undefined && result.error !== null,
    `${result.response.url}: expected ${status}, got ${result.response.status} ${JSON.stringify(result.data)}`,
  );
  return result.error as NonNullable<E>;
}

/** Middleware that appends every answer to `log` as one JSON line. */
function recorder(log: string): Middleware {
  return {
    async onResponse({ request, response }) {
      const entry = {
        client: "typescript",
        method: request.method,
        path: new URL(request.url).pathname,
        status: response.status,
        content_type: response.headers.get("content-type"),
        body: await response.clone().text(),
      };
      appendFileSync(log, JSON.stringify(entry) + "\n");
      return undefined;
    },
  };
}

async function journey(baseUrl: string, log: string): Promise<void> {
  const run = randomUUID().slice(0, 12);
  // `properties` is a comma-separated list (`style: form, explode: false` in the document).
  const querySerializer = { array: { style: "form", explode: false } } as const;
  const tokenClient = createClient<paths>({ baseUrl, querySerializer });
  tokenClient.use(recorder(log));

  // 1. A token: HTTP Basic, and the form the token endpoint takes (RFC 6749 section 4.4.2);
  //    openapi-fetch encodes a body as a form when the request says so.
  const basic = Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64");
  const token = expect(
    await tokenClient.POST("/oauth2/token", {
      body: { grant_type: "client_credentials", scope: SCOPES },
      headers: {
        Authorization: `Basic ${basic}`,
        "Content-Type": "application/x-www-form-urlencoded",
      },
    }),
    200,
  );
  check(token.token_type === "Bearer" && token.expires_in > 0, `token: ${JSON.stringify(token)}`);
  const api = createClient<paths>({
    baseUrl,
    querySerializer,
    headers: { Authorization: `Bearer ${token.access_token}` },
  });
  api.use(recorder(log));

  // 2. A contact with a custom field (`region`, an enumeration of the account, by display name).
  const email = `jo.${run}@example.com`;
  const contactFields: Schemas["ContactCreate"]["fields"] = {
    email,
    first_name: "Jo",
    last_name: "Journey",
    region: "EMEA",
  };
  const created = expect(await api.POST("/contacts", { body: { fields: contactFields } }), 201);
  const contactId = created.id;
  console.log(`created contact ${contactId}`);

  // 3. Read back with a custom property.
  const read = expect(
    await api.GET("/contacts/{contactId}", {
      params: { path: { contactId }, query: { properties: ["region", "job_title"] } },
    }),
    200,
  );
  check(read["region"] === "emea" && read.email === email, `read: ${JSON.stringify(read)}`);

  // A record as a typed literal: the declared keys (`archived: false` among them) and requested
  // properties in one object.
  const expected: Schemas["Contact"] = { ...read, archived: false, region: "emea" };
  check(expected.id === contactId, "the typed literal keeps the id");

  // 4. Patch a standard field and the custom one.
  const patched = expect(
    await api.PATCH("/contacts/{contactId}", {
      params: { path: { contactId }, query: { properties: ["job_title", "region"] } },
      body: { fields: { job_title: "CTO", region: "amer" } },
    }),
    200,
  );
  check(patched["job_title"] === "CTO" && patched["region"] === "amer", `patch: ${JSON.stringify(patched)}`);

  // 5. Two pages of the contact list, the second one after the first one's cursor.
  const first = expect(await api.GET("/contacts", { params: { query: { limit: 2 } } }), 200);
  const cursor = first.pagination.next_after;
  check(typeof cursor === "string" && first.data.length === 2, `first page: ${JSON.stringify(first)}`);
  const second = expect(
    await api.GET("/contacts", { params: { query: { limit: 2, after: cursor } } }),
    200,
  );
  const firstIds = new Set(first.data.map((contact) => contact.id));
  check(second.data.length >= 1, "second page is empty");
  check(second.data.every((contact) => !firstIds.has(contact.id)), "the pages overlap");

  // 6. A deal in a stage the account added ("On hold", any case), and a ticket.
  const deal = expect(
    await api.POST("/deals", {
      body: {
        fields: { deal_name: `Journey deal ${run}`, pipeline: "default", deal_stage: "on HOLD", amount: 12500 },
      },
    }),
    201,
  );
  check(deal.deal_stage === "on_hold", `deal: ${JSON.stringify(deal)}`);
  const ticket = expect(
    await api.POST("/tickets", {
      body: { fields: { ticket_name: `Journey ticket ${run}`, pipeline: "support", ticket_stage: "new" } },
    }),
    201,
  );
  check(ticket.pipeline === "support", `ticket: ${JSON.stringify(ticket)}`);

  // 7. A webhook subscription to a receiver on loopback (the local server may call http).
  let received = 0;
  const receiver = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      received += 1;
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const port = (receiver.address() as AddressInfo).port;
  const webhook = expect(
    await api.POST("/webhooks", {
      body: {
        url: `http://127.0.0.1:${port}/hooks`,
        events: ["assignment.created"],
        description: `journey ${run}`,
      },
    }),
    201,
  );
  const webhookId = webhook.id;

  try {
    // 8. Explain, then dispatch the contact through "Inbound leads" (its region matches).
    const request = { router_id: INBOUND_LEADS, object_id: contactId };
    const explained = expect(await api.POST("/dispatch/router/explain", { body: request }), 200);
    check(explained.dry_run === true, `explain: ${JSON.stringify(explained)}`);
    const dispatched = expect(await api.POST("/dispatch/router", { body: request }), 200);
    check("success" in dispatched && dispatched.success === true, `dispatch: ${JSON.stringify(dispatched)}`);
    console.log(`dispatch assigned ${dispatched.user}`);

    // 9. The contact's routing history and the router's stats.
    const history = expect(
      await api.GET("/contacts/{contactId}/dispatches", { params: { path: { contactId } } }),
      200,
    );
    check(history.data.length === 1, `history: ${JSON.stringify(history)}`);
    const stats = expect(
      await api.GET("/routers/{routerId}/stats", { params: { path: { routerId: INBOUND_LEADS } } }),
      200,
    );
    check(stats.total >= 1, `stats: ${JSON.stringify(stats)}`);

    // 9b. Why the contact went where it went: the entry with its run's explanation (BEHAVIOR 18),
    //     and who created the subscription, from the audit log.
    const listed = history.data[0];
    if (listed === undefined) {
      throw new Error("the history has no entry");
    }
    const entry = expect(
      await api.GET("/routers/{routerId}/dispatches/{entryId}", {
        params: { path: { routerId: INBOUND_LEADS, entryId: listed.id } },
      }),
      200,
    );
    check(entry.user === dispatched.user && entry.explanation != null, `entry: ${JSON.stringify(entry)}`);
    const events = expect(
      await api.GET("/audit-events", { params: { query: { target_type: "webhook", target_id: webhookId } } }),
      200,
    );
    const created = events.data[0];
    if (created === undefined || events.data.length !== 1) {
      throw new Error(`audit events: ${JSON.stringify(events)}`);
    }
    check(created.action === "webhook.created", `audit events: ${JSON.stringify(events)}`);
    const event = expect(
      await api.GET("/audit-events/{id}", { params: { path: { id: created.id } } }),
      200,
    );
    check(event.id === created.id, `audit event: ${JSON.stringify(event)}`);

    // 10. The subscription's deliveries: the assignment is delivered to the receiver.
    let deliveries: Schemas["ListView_DeliveryView"]["data"] = [];
    for (let attempt = 0; attempt < 100; attempt += 1) {
      deliveries = expect(
        await api.GET("/webhooks/{webhookId}/deliveries", { params: { path: { webhookId } } }),
        200,
      ).data;
      if (deliveries.length > 0 && received > 0) {
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    check(deliveries.length >= 1 && received >= 1, `deliveries: ${JSON.stringify(deliveries)}`);
  } finally {
    const deleted = await api.DELETE("/webhooks/{webhookId}", { params: { path: { webhookId } } });
    check(deleted.response.status === 204, `delete webhook: ${deleted.response.status}`);
    receiver.close();
  }

  // 11. A 400 and a 404, read into the error type.
  const refused = expectError(
    await api.POST("/contacts", { body: { fields: { email: "not an address" } } }),
    400,
  );
  check(refused.error === true && refused.field === "email", `400: ${JSON.stringify(refused)}`);
  const missing = expectError(
    await api.GET("/contacts/{contactId}", { params: { path: { contactId: randomUUID() } } }),
    404,
  );
  check(missing.error === true && missing.message.includes("not found"), `404: ${JSON.stringify(missing)}`);
  console.log("typescript journey: every step answered as expected");
}

const [baseUrl, log] = process.argv.slice(2);
if (baseUrl === undefined || log === undefined) {
  console.error("usage: node journey.js BASE_URL RESPONSES_JSONL");
  process.exit(2);
}
journey(baseUrl.replace(/\/$/, ""), log).catch((error: unknown) => {
  console.error(`typescript journey FAILED: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
