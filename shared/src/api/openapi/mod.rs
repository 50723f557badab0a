//! The OpenAPI 3.1 description of the API, generated from the Rust types and routes (utoipa).
//!
//! Each function crate describes its operations with `#[utoipa::path]` and mounts them through
//! [`described_routes!`](crate::described_routes) (`utoipa_axum`'s `routes!`, or the same routes
//! without their description where it is never served), so a route and its description are one
//! declaration. This module holds what they share: the error responses ([`responses`]), the
//! record schemas generated from the field catalogue ([`records`]), the list parameters
//! ([`PageParams`], [`ArchivedParam`]), the security schemes and tags, and [`finish_document`],
//! which completes the merged description.

pub mod records;
pub mod responses;
pub mod routers;
pub mod users;
pub mod webhooks;

/// Whether a function's routes are built with their OpenAPI description.
///
/// Building the description (each operation, every schema it references) costs milliseconds: the
/// records function's routes took 5.5 ms with it in a release build, a third of its cold-start
/// CPU (`docs/performance.md`). The Lambda functions never build it (the token function serves
/// the committed `openapi.json` as it is), so they build their routes without it; the local server
/// (which serves `GET /openapi.json` and `/docs`) and the committed `openapi.json` build it. Both
/// come from the same `#[utoipa::path]` declarations through
/// [`described_routes!`](crate::described_routes), so the routes are the same either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Description {
    /// Routes and their OpenAPI description (`utoipa_axum::routes!`).
    Full,
    /// The same routes (each handler's path and methods from its `#[utoipa::path]`), with an
    /// empty operation in place of each description and no schemas.
    RoutesOnly,
}

/// `utoipa_axum::routes!` with a [`Description`] switch:
/// `described_routes!(description; handler, ...)` gives the same
/// `(schemas, paths, method_router)` triple for `OpenApiRouter::routes`. With
/// [`Description::Full`] it is `utoipa_axum::routes!(handler, ...)`; with
/// [`Description::RoutesOnly`] each handler is routed on the path and methods its
/// `#[utoipa::path]` declares (`utoipa::Path::path` and `methods`, which build no description),
/// every path gets an empty operation and there are no schemas. Handlers are named by identifier
/// (in scope where the macro is used), as `routes!` names them.
#[macro_export]
macro_rules! described_routes {
    ($description:expr; $($handler:ident),+ $(,)?) => {
        match $description {
            $crate::api::openapi::Description::Full => ::utoipa_axum::routes!($($handler),+),
            $crate::api::openapi::Description::RoutesOnly => {
                use ::utoipa_axum::PathItemExt as _;
                let mut paths = ::utoipa::openapi::path::Paths::new();
                let mut method_router = ::axum::routing::MethodRouter::new();
                $(
                    ::utoipa_axum::paste! {
                        let path = <[<__path_ $handler>] as ::utoipa::Path>::path();
                        let methods = <[<__path_ $handler>] as ::utoipa::Path>::methods();
                    }
                    for method in &methods {
                        method_router = method_router.on(method.to_method_filter(), $handler);
                    }
                    paths.add_path_operation(&path, methods, ::utoipa::openapi::path::Operation::new());
                )+
                (
                    ::std::vec::Vec::<(
                        ::std::string::String,
                        ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema>,
                    )>::new(),
                    paths,
                    method_router,
                )
            }
        }
    };
}

use crate::api::error::ErrorBody;
use crate::auth::scope::Scope;
use crate::model::object_type::ObjectType;
use serde::Deserialize;
use utoipa::openapi::security::{
    ClientCredentials, Flow, HttpAuthScheme, HttpBuilder, OAuth2, Scopes, SecurityScheme,
};
use utoipa::openapi::tag::{Tag, TagBuilder};
use utoipa::openapi::{InfoBuilder, OpenApi, ServerBuilder};
use utoipa::{IntoParams, PartialSchema, ToSchema};

/// The characters Rust's `str::trim` removes (Unicode `White_Space`), as a regular-expression
/// class body. Patterns use it instead of `\s`, whose ECMA-262 set differs (it has U+FEFF and
/// not U+0085), so a pattern and the server agree on what blank means.
pub(crate) const WHITESPACE: &str =
    "\\u0009-\\u000d \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

/// Name of the OAuth 2.0 client-credentials security scheme (RFC 6749 section 4.4).
pub const OAUTH2: &str = "oauth2";
/// Name of the HTTP Basic scheme of the token endpoint (RFC 6749 section 2.3.1).
pub const CLIENT_BASIC: &str = "client_basic";
/// Name of the HTTP bearer security scheme (RFC 6750), for a token obtained elsewhere.
pub const BEARER: &str = "bearer";

/// Tag of the token endpoint.
pub const TAG_TOKEN: &str = "Token";
/// Tag of the record routes.
pub const TAG_RECORDS: &str = "Records";
/// Tag of the user routes.
pub const TAG_USERS: &str = "Users";
/// Tag of the router routes.
pub const TAG_ROUTERS: &str = "Routers";
/// Tag of dispatch.
pub const TAG_DISPATCH: &str = "Dispatch";
/// Tag of the routing history, stats and explain routes.
pub const TAG_HISTORY: &str = "Routing history";
/// Tag of the API description itself.
pub const TAG_META: &str = "API description";
/// Tag of the webhook subscription routes (BEHAVIOR 13).
pub const TAG_WEBHOOKS: &str = "Webhooks";
/// Tag of the change log (BEHAVIOR 18).
pub const TAG_AUDIT: &str = "Audit";

/// The paging parameters of every list (spec "Limits"; BEHAVIOR 2 and 11). A list of archivable
/// items (records, users, routers) also takes [`ArchivedParam`]; history, webhook and delivery
/// lists take these alone.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Page size, 1 to 100.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100, default = 10)]
    pub limit: Option<u32>,
    /// Items to skip from the start of the list (a history list starts with its newest entry),
    /// at most 10000 (page further with `after`). Absent or 0 with `after`.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 10_000, default = 0)]
    pub offset: Option<u64>,
    /// The opaque cursor `pagination.next_after` of a previous page of the same list (with the
    /// same `archived` filter): the page starts right after that page's last item. A cursor is
    /// a position, so items created or archived during a walk make it neither skip nor repeat
    /// an item. Any other value (altered, from another list, filter or account) is 400 naming
    /// `after`.
    #[param(
        min_length = 1,
        max_length = 2048,
        pattern = "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{22}$"
    )]
    pub after: Option<String>,
}

/// The `archived` filter of a list of archivable items (records, users, routers; BEHAVIOR 2).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ArchivedParam {
    /// `true` includes archived items.
    #[param(default = false)]
    pub archived: Option<bool>,
}

/// The query parameters of `GET /routers/{routerId}/stats` (BEHAVIOR 8).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatsParams {
    /// Start of the window, included (RFC 3339); default the first instant of the current
    /// month (UTC).
    #[param(value_type = Option<String>, format = DateTime, example = "2026-11-01T00:00:00Z")]
    pub from: Option<String>,
    /// End of the window, excluded (RFC 3339); default the first instant of next month (UTC).
    /// After `from`, at most 93 days later.
    #[param(value_type = Option<String>, format = DateTime, example = "2026-12-01T00:00:00Z")]
    pub to: Option<String>,
}

/// The filters of `GET /audit-events` (BEHAVIOR 18).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditParams {
    /// Only the events about one resource: `router`, `member`, `holiday_calendar` or `webhook`,
    /// with `target_id` (both or neither; 400 naming the missing one, or an unknown type).
    #[param(value_type = Option<String>, example = "member")]
    #[param(pattern = "^(router|member|holiday_calendar|webhook)$")]
    pub target_type: Option<String>,
    /// The resource's id, with `target_type`.
    #[param(value_type = Option<String>, format = Uuid)]
    pub target_id: Option<String>,
    /// Only the events at or after this instant (RFC 3339); before `to`, else 400 naming `from`.
    #[param(value_type = Option<String>, format = DateTime, example = "2026-11-20T00:00:00Z")]
    pub from: Option<String>,
    /// Only the events before this instant (RFC 3339).
    #[param(value_type = Option<String>, format = DateTime, example = "2026-11-21T00:00:00Z")]
    pub to: Option<String>,
}

/// The `Idempotency-Key` request header of `POST /{type}` and `POST /dispatch/router`
/// (BEHAVIOR 10).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Header)]
pub struct IdempotencyParams {
    /// 1 to 255 printable ASCII characters, unique per request (a UUID is a good choice). A
    /// retry with the same key and a JSON-equal body within 24 h gets the first answer again
    /// (`Idempotent-Replayed: true`) and changes nothing; another body is 422; while the first
    /// request runs, 409. Answers 5xx are not kept. Keys are per account and route.
    #[serde(rename = "Idempotency-Key")]
    #[param(
        min_length = 1,
        max_length = 255,
        pattern = "^[ -~]{1,255}$",
        example = "5b0e8a8e-2f7c-4a49-9d52-0c3c1f0c8f11"
    )]
    pub idempotency_key: Option<String>,
}

fn tag(name: &str, description: &str) -> Tag {
    TagBuilder::new()
        .name(name)
        .description(Some(description))
        .build()
}

/// The links one operation's answer gets: (operation id, status, [(link name, link)]).
type LinkPlan = (
    String,
    &'static str,
    Vec<(String, utoipa::openapi::link::Link)>,
);

/// Adds the links between operations (OpenAPI 3.1 "Link Object"): a created record and a listed
/// one lead to reading and updating it; a listed user to reading and updating it. The stateful
/// tests follow them. Archiving is not linked: an archived record still reads back (200 with
/// `archived` set; the spec's "DELETE archives the record; it is retained"), which a test tool
/// following a DELETE -> GET link takes for a use after free.
fn add_links(doc: &mut OpenApi) {
    let link = |operation: &str, parameter: &str, value: &str| {
        utoipa::openapi::link::LinkBuilder::new()
            .operation_id(operation)
            .parameter(parameter, value)
            .build()
    };
    let mut plan: Vec<LinkPlan> = Vec::new();
    for object_type in ObjectType::ALL {
        let ops = object_type.operation_ids();
        let id = object_type.path_id_name();
        let targets = |from: &str| {
            [&ops.get, &ops.update]
                .iter()
                .map(|op| (op.to_string(), link(op, id, from)))
                .collect::<Vec<_>>()
        };
        plan.push((ops.create.clone(), "201", targets("$response.body#/id")));
        plan.push((
            ops.list.clone(),
            "200",
            targets("$response.body#/data/0/id"),
        ));
    }
    plan.push((
        "listUsers".to_string(),
        "200",
        ["getUser", "updateUser"]
            .iter()
            .map(|op| {
                (
                    op.to_string(),
                    link(op, "userId", "$response.body#/data/0/id"),
                )
            })
            .collect(),
    ));
    // Router management (BEHAVIOR 15): create -> draft -> publish -> revisions.
    let router_links = |targets: &[(&str, &[(&str, &str)])]| {
        targets
            .iter()
            .map(|(op, parameters)| {
                let mut builder = utoipa::openapi::link::LinkBuilder::new().operation_id(*op);
                for (name, value) in *parameters {
                    builder = builder.parameter(*name, *value);
                }
                (op.to_string(), builder.build())
            })
            .collect::<Vec<_>>()
    };
    plan.push((
        "createRouter".into(),
        "201",
        router_links(&[
            ("getRouter", &[("routerId", "$response.body#/id")]),
            ("putRouterDraft", &[("routerId", "$response.body#/id")]),
            ("listRouterRevisions", &[("routerId", "$response.body#/id")]),
        ]),
    ));
    plan.push((
        "putRouterDraft".into(),
        "200",
        router_links(&[
            (
                "getRouterDraft",
                &[("routerId", "$response.body#/router_id")],
            ),
            (
                "publishRouter",
                &[
                    ("routerId", "$response.body#/router_id"),
                    ("If-Match", "$response.header.ETag"),
                ],
            ),
        ]),
    ));
    plan.push((
        "publishRouter".into(),
        "200",
        router_links(&[
            ("listRouterRevisions", &[("routerId", "$response.body#/id")]),
            (
                "getRouterRevision",
                &[
                    ("routerId", "$response.body#/id"),
                    ("revision", "$response.body#/revision"),
                ],
            ),
        ]),
    ));
    for item in doc.paths.paths.values_mut() {
        for operation in [&mut item.get, &mut item.post, &mut item.put]
            .into_iter()
            .flatten()
        {
            let Some(id) = operation.operation_id.clone() else {
                continue;
            };
            for (from, status, links) in &plan {
                if *from != id {
                    continue;
                }
                if let Some(utoipa::openapi::RefOr::T(response)) =
                    operation.responses.responses.get_mut(*status)
                {
                    for (name, link) in links {
                        response
                            .links
                            .insert(name.clone(), utoipa::openapi::RefOr::T(link.clone()));
                    }
                }
            }
        }
    }
}

/// Replaces every inline copy of a component's object schema (one with `properties`) by a
/// reference to the component. utoipa inlines the item schema of a generic list
/// (`ListView<User>`'s `data`); a copy makes client generators emit a second type for the same
/// object (`ListViewUserDataItem` beside `User`) and leaves the component itself unused.
///
/// Each component and path item holding a copy goes through JSON and back (utoipa's model does
/// not read back every document it writes, so only the parts that change make the trip).
fn reference_component_copies(doc: &mut OpenApi) {
    use serde_json::Value;
    fn replace(node: &mut Value, objects: &[(String, Value)]) -> bool {
        if let Some((name, _)) = objects.iter().find(|(_, schema)| schema == node) {
            *node = serde_json::json!({"$ref": format!("#/components/schemas/{name}")});
            return true;
        }
        match node {
            Value::Object(map) => map
                .values_mut()
                .fold(false, |changed, child| replace(child, objects) | changed),
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, child| replace(child, objects) | changed),
            _ => false,
        }
    }
    /// `part` with the copies in its children replaced (never `part` itself: a component is not
    /// a copy of itself).
    fn referenced<T: serde::Serialize + serde::de::DeserializeOwned>(
        part: &T, objects: &[(String, Value)],
    ) -> Option<T> {
        let mut value = serde_json::to_value(part).ok()?;
        let Value::Object(map) = &mut value else {
            return None;
        };
        let changed = map
            .values_mut()
            .fold(false, |changed, child| replace(child, objects) | changed);
        if !changed {
            return None;
        }
        serde_json::from_value(value)
            .inspect_err(|error| {
                // A part that does not read back keeps its copy (the lint of the document in
                // the test command then reports the unused component).
                tracing::error!(%error, "a part of the description does not read back");
            })
            .ok()
    }
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    let objects: Vec<(String, Value)> = components
        .schemas
        .iter()
        .filter_map(|(name, schema)| {
            let value = serde_json::to_value(schema).ok()?;
            value
                .get("properties")
                .is_some()
                .then(|| (name.clone(), value))
        })
        .collect();
    for schema in components.schemas.values_mut() {
        if let Some(changed) = referenced(schema, &objects) {
            *schema = changed;
        }
    }
    for item in doc.paths.paths.values_mut() {
        if let Some(changed) = referenced(item, &objects) {
            *item = changed;
        }
    }
}

/// Completes a merged description: info, servers, tags, security schemes, links, and references
/// in place of inline copies of components.
pub fn finish_document(mut doc: OpenApi) -> OpenApi {
    reference_component_copies(&mut doc);
    add_links(&mut doc);
    doc.info = InfoBuilder::new()
        .title("Account routing API")
        .version("1.0.0")
        .description(Some(
            "The backend of a lead/work-routing product for CRM data: contacts, companies, \
             deals and tickets per account, the account's members, routers, and dispatch, which \
             assigns a record's owner.\n\n\
             Authenticate with the OAuth 2.0 client-credentials grant at `POST /oauth2/token` \
             and send the access token as `Authorization: Bearer <token>`. Every error but the \
             token endpoint's is `{message, error: true, field?}`.",
        ))
        .build();
    doc.servers = Some(vec![ServerBuilder::new()
        .url("/")
        .description(Some("This deployment"))
        .build()]);
    doc.tags = Some(vec![
        tag(TAG_TOKEN, "OAuth 2.0 client credentials (RFC 6749 section 4.4)."),
        tag(TAG_RECORDS, "Contacts, companies, deals and tickets of the token's account."),
        tag(TAG_USERS, "The account's members."),
        tag(TAG_ROUTERS, "Assignment configurations: create, edit a draft, publish, list and restore revisions, archive (BEHAVIOR 15)."),
        tag(TAG_DISPATCH, "Runs a router for one record and assigns its owner."),
        tag(TAG_HISTORY, "Every dispatch decision recorded, fairness stats, and dispatch explained before it happens."),
        tag(
            TAG_WEBHOOKS,
            "Signed events (Standard Webhooks v1) of every routing decision, with retries and a delivery log.",
        ),
        tag(
            TAG_AUDIT,
            "Who changed the routing configuration, and what: one event per successful write to routers, members, holiday calendars and webhook subscriptions (BEHAVIOR 18).",
        ),
        tag(TAG_META, "This description."),
    ]);
    let components = doc.components.get_or_insert_with(Default::default);
    // Every error response refers to the error body; the records' schemas to these two.
    components
        .schemas
        .insert(ErrorBody::name().into_owned(), ErrorBody::schema());
    components.schemas.insert(
        crate::timefmt::Archived::name().into_owned(),
        crate::timefmt::Archived::schema(),
    );
    components.schemas.insert(
        crate::timefmt::Timestamp::name().into_owned(),
        crate::timefmt::Timestamp::schema(),
    );
    let scopes = Scopes::from_iter(Scope::ALL.iter().map(|s| {
        let what = match s {
            Scope::Read => "read: every GET",
            Scope::Create => "create records",
            Scope::Update => "update records and users, dispatch",
            Scope::Delete => "archive records",
        };
        (s.as_str().to_string(), what.to_string())
    }));
    components.add_security_scheme(
        OAUTH2,
        SecurityScheme::OAuth2(OAuth2::with_description(
            [Flow::ClientCredentials(ClientCredentials::new(
                "/oauth2/token",
                scopes,
            ))],
            "OAuth 2.0 client credentials: the token endpoint issues an ES256 JWT bearer token \
             carrying the client's account. Request only the scopes the calls need.",
        )),
    );
    components.add_security_scheme(
        CLIENT_BASIC,
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Basic)
                .description(Some(
                    "The token endpoint's alternative client authentication: HTTP Basic with the \
                     client id and secret (RFC 6749 section 2.3.1).",
                ))
                .build(),
        ),
    );
    components.add_security_scheme(
        BEARER,
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("JWT")
                .description(Some("An access token from `POST /oauth2/token`."))
                .build(),
        ),
    );
    doc
}

/// The paths an axum router serves, read from its `Debug` output (axum prints its path table;
/// there is no other way to list a router's routes). For tests that check every route is
/// described.
pub fn router_paths<S>(router: &axum::Router<S>) -> Vec<String> {
    let text = format!("{router:?}");
    let mut paths = Vec::new();
    // `Node { paths: {RouteId(0): "/contacts", ...} }`
    for part in text.split("RouteId(").skip(1) {
        if let Some(start) = part.find(": \"") {
            let rest = &part[start + 3..];
            if let Some(end) = rest.find('"') {
                let path = rest[..end].to_string();
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
        }
    }
    paths
}
