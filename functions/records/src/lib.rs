//! Handler of the records function: `/{type}` and `/{type}/{id}` for contacts, companies, deals
//! and tickets (spec "Record collection endpoints", "Record item endpoints").
//!
//! Thin: authenticate, check the route's scope (BEHAVIOR 1), parse path and query, call
//! [`shared::records::RecordService`], answer its typed view. Each operation is described by
//! `#[utoipa::path]` next to its handler and mounted with `described_routes!` (utoipa-axum's
//! `routes!`, or the same routes without their description in the Lambda function), so a route
//! and its description are one declaration.

use axum::extract::{FromRef, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use shared::api::idempotency::{self, IdempotentRequests};
use shared::api::openapi::records::*;
use shared::api::openapi::responses::*;
use shared::api::openapi::Description;
use shared::api::openapi::{
    ArchivedParam, IdempotencyParams, PageParams, TAG_HISTORY, TAG_RECORDS,
};
use shared::api::Json;
use shared::api::{
    allow_of, empty_id_route, item_properties, with_own_405, with_own_item_methods, ApiError,
    Authenticated, Body, ListQuery, PathId,
};
use shared::auth::{Scope, TokenVerifier};
use shared::deps::{ConfigError, Deps};
use shared::described_routes;
use shared::error::DomainError;
use shared::history::{DispatchEntryView, HistoryService};
use shared::model::ObjectType;
use shared::page::cursor::CursorKeySource;
use shared::page::ListView;
use shared::records::{Caller, RecordService, RecordView, RecordWrite};
use shared::types::RecordId;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;

/// What the handler needs, built once per cold start.
#[derive(Clone, FromRef)]
pub struct RecordsState {
    /// The record operations.
    pub records: Arc<RecordService>,
    /// Bearer-token verification with the configured public keys.
    pub verifier: Arc<TokenVerifier>,
    /// `Idempotency-Key` handling (BEHAVIOR 10).
    pub idempotency: Arc<IdempotentRequests>,
    /// Signs and opens the lists' `after` cursors (BEHAVIOR 11).
    pub cursors: Arc<CursorKeySource>,
    /// The routing history (BEHAVIOR 8).
    pub history: Arc<HistoryService>,
}

impl RecordsState {
    /// The state over `deps`.
    ///
    /// Errors: no token verifier configured (`JWT_PUBLIC_JWKS`), no cursor key (`CURSOR_SECRET`).
    pub fn new(deps: &Deps) -> Result<Self, ConfigError> {
        Ok(Self {
            records: Arc::new(RecordService::new(
                deps.store.clone(),
                deps.clock.clone(),
                deps.catalogues.clone(),
            )),
            verifier: deps.verifier()?,
            idempotency: Arc::new(IdempotentRequests::new(
                deps.store.clone(),
                deps.clock.clone(),
            )),
            cursors: deps.cursors()?,
            history: Arc::new(HistoryService::new(deps.store.clone(), deps.clock.clone())),
        })
    }
}

/// The routes of the function, stateful (for the local server to merge).
///
/// With [`Description::Full`] the routes carry their OpenAPI description (what `openapi.json` is
/// generated from); with [`Description::RoutesOnly`] the same routes without it (the local
/// server, which serves the committed document).
pub fn api(state: RecordsState, description: Description) -> OpenApiRouter {
    routes(state, description)
}

/// The function's routes, with their OpenAPI description or without it ([`Description`]: the
/// Lambda function never serves it and saves building it at every cold start).
fn routes(state: RecordsState, description: Description) -> OpenApiRouter {
    let mut router = OpenApiRouter::new();
    router = contacts::mount(router, description);
    router = companies::mount(router, description);
    router = deals::mount(router, description);
    router = tickets::mount(router, description);
    router.with_state(state)
}

/// The function's application: its routes, finished ([`shared::api::finish`]).
///
/// Errors: no token verifier configured.
pub fn app(deps: &Deps) -> Result<axum::Router, ConfigError> {
    let (router, _) = routes(RecordsState::new(deps)?, Description::RoutesOnly).split_for_parts();
    Ok(shared::api::finish(router))
}

type Answer<T> = Result<(StatusCode, Json<T>), ApiError>;

/// Methods of an item path, with the scope each needs (BEHAVIOR 1).
const ITEM_METHODS: &[(Method, Scope)] = &[
    (Method::GET, Scope::Read),
    (Method::PATCH, Scope::Update),
    (Method::DELETE, Scope::Delete),
];

async fn list(
    t: ObjectType, Authenticated(p): Authenticated, s: RecordsState, query: Option<String>,
) -> Answer<ListView<RecordView>> {
    p.require(Scope::Read)?;
    let q = ListQuery::parse(query.as_deref())?;
    let body = s
        .records
        .list(
            p.account_id,
            t,
            q.properties.as_deref(),
            &q.list,
            &*s.cursors.key().await?,
        )
        .await?;
    Ok((StatusCode::OK, Json(body)))
}

async fn create(
    t: ObjectType, Authenticated(p): Authenticated, s: RecordsState, headers: HeaderMap, body: Body,
) -> Result<Response, ApiError> {
    p.require(Scope::Create)?;
    let route = format!("POST /{}", t.as_str());
    let caller = Caller {
        account_id: p.account_id,
        actor: &p.client_id,
    };
    let (records, body) = (&s.records, &body);
    s.idempotency
        .run(
            p.account_id,
            &route,
            &headers,
            body.bytes(),
            move |claim| async move {
                let write = RecordWrite::from_body(body.json_object()?)?;
                let view = records
                    .create_completing(caller, t, write, claim.as_ref())
                    .await?;
                Ok(idempotency::HandlerAnswer {
                    status: StatusCode::CREATED,
                    body: view,
                    stored_with_effect: true,
                })
            },
        )
        .await
}

async fn read(
    t: ObjectType, Authenticated(p): Authenticated, s: RecordsState, id: String,
    query: Option<String>,
) -> Answer<RecordView> {
    p.require(Scope::Read)?;
    let properties = item_properties(query.as_deref())?;
    let record = s
        .records
        .get(p.account_id, t, RecordId::parse(&id), properties.as_deref())
        .await?;
    Ok((StatusCode::OK, Json(record)))
}

async fn update(
    t: ObjectType, Authenticated(p): Authenticated, s: RecordsState, id: String,
    query: Option<String>, body: Body,
) -> Answer<RecordView> {
    p.require(Scope::Update)?;
    let caller = Caller {
        account_id: p.account_id,
        actor: &p.client_id,
    };
    let properties = item_properties(query.as_deref())?;
    let write = body.json_object().and_then(RecordWrite::from_body);
    let record = s
        .records
        .update(
            caller,
            t,
            RecordId::parse(&id),
            properties.as_deref(),
            write,
        )
        .await?;
    Ok((StatusCode::OK, Json(record)))
}

async fn archive(
    t: ObjectType, Authenticated(p): Authenticated, s: RecordsState, id: String,
) -> Answer<RecordView> {
    p.require(Scope::Delete)?;
    let caller = Caller {
        account_id: p.account_id,
        actor: &p.client_id,
    };
    let record = s.records.archive(caller, t, RecordId::parse(&id)).await?;
    Ok((StatusCode::OK, Json(record)))
}

async fn dispatches(
    t: ObjectType, Authenticated(p): Authenticated, s: RecordsState, id: String,
    query: Option<String>,
) -> Answer<ListView<DispatchEntryView>> {
    p.require(Scope::Read)?;
    let q = ListQuery::parse(query.as_deref())?;
    let record_id =
        RecordId::parse(&id).ok_or_else(|| DomainError::not_found("Record not found"))?;
    let body = s
        .history
        .record_dispatches(
            p.account_id,
            t,
            record_id,
            &q.list,
            &*s.cursors.key().await?,
        )
        .await?;
    Ok((StatusCode::OK, Json(body)))
}

/// The described operations of one record type.
macro_rules! record_type {
    (
        $module:ident, $t:ident, $plural:literal, $singular:literal,
        collection = $collection:literal, item = $item:literal, empty = $empty:literal,
        history = $history:literal, id = $id:literal,
        ids = [$list_id:literal, $create_id:literal, $get_id:literal, $update_id:literal, $archive_id:literal, $history_id:literal],
        schemas = [$view:ident, $list:ident, $create:ident, $update:ident, $props:ident]
    ) => {
        #[doc = concat!("The ", $plural, " routes.")]
        pub mod $module {
            use super::*;

            #[doc = concat!("Lists the account's ", $plural, ", oldest first.")]
            #[utoipa::path(
                get,
                path = $collection,
                operation_id = $list_id,
                tag = TAG_RECORDS,
                summary = concat!("List ", $plural),
                description = concat!("The account's ", $plural, " by creation time then id (oldest first), active ones unless `archived=true`; each with the default fields plus the requested `properties`. `pagination.count` is the number of items in this page."),
                params(ArchivedParam, PageParams, $props),
                security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
                responses(
                    (status = 200, description = concat!("A page of ", $plural), body = $list),
                    BadRequest, Unauthorized, Forbidden, InternalError
                )
            )]
            pub async fn list(
                auth: Authenticated,
                State(s): State<RecordsState>,
                RawQuery(q): RawQuery,
            ) -> Answer<ListView<RecordView>> {
                super::list(ObjectType::$t, auth, s, q).await
            }

            #[doc = concat!("Creates a ", $singular, ".")]
            #[utoipa::path(
                post,
                path = $collection,
                operation_id = $create_id,
                tag = TAG_RECORDS,
                summary = concat!("Create a ", $singular),
                description = concat!("Validates every field (all-or-nothing), then creates the ", $singular, " and claims its unique keys atomically. Answers the default fields plus every field the request set, in stored form. A body with a unique key held by an active ", $singular, " is 409 with `field` (send `external_id` to make retries safe)."),
                params(IdempotencyParams),
                request_body(content = $create, content_type = "application/json"),
                security(("oauth2" = ["service-api/create"]), ("bearer" = [])),
                responses(
                    (status = 201, description = concat!("The created ", $singular, " (or, with `Idempotent-Replayed: true`, the answer first given to this `Idempotency-Key`)"), body = $view,
                        headers(("Idempotent-Replayed" = String, description = "`true` when this is the stored answer of an earlier request with the same `Idempotency-Key`"))),
                    BadRequest, Unauthorized, Forbidden, CreateConflict, PayloadTooLarge, KeyReused, InternalError
                )
            )]
            pub async fn create(
                auth: Authenticated,
                State(s): State<RecordsState>,
                headers: HeaderMap,
                body: Body,
            ) -> Result<Response, ApiError> {
                super::create(ObjectType::$t, auth, s, headers, body).await
            }

            #[doc = concat!("Reads a ", $singular, ".")]
            #[utoipa::path(
                get,
                path = $item,
                operation_id = $get_id,
                tag = TAG_RECORDS,
                summary = concat!("Read a ", $singular),
                description = concat!("The ", $singular, " (archived ones too), default fields plus the requested `properties`. An id that is not a UUID names no record (404)."),
                params(($id = String, Path, description = concat!("The ", $singular, "'s id (UUID)")), $props),
                security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
                responses(
                    (status = 200, description = concat!("The ", $singular), body = $view),
                    BadRequest, Unauthorized, Forbidden, NotFound, InternalError
                )
            )]
            pub async fn get(
                auth: Authenticated,
                State(s): State<RecordsState>,
                PathId(id): PathId,
                RawQuery(q): RawQuery,
            ) -> Answer<RecordView> {
                super::read(ObjectType::$t, auth, s, id, q).await
            }

            #[doc = concat!("Updates a ", $singular, ".")]
            #[utoipa::path(
                patch,
                path = $item,
                operation_id = $update_id,
                tag = TAG_RECORDS,
                summary = concat!("Update a ", $singular),
                description = concat!("Changes only the fields sent (null clears one) and refreshes `updated_at` / `last_modified_date`; a changed unique key moves atomically. An archived ", $singular, " is 409 `Cannot update an archived object`."),
                params(($id = String, Path, description = concat!("The ", $singular, "'s id (UUID)")), $props),
                request_body(content = $update, content_type = "application/json"),
                security(("oauth2" = ["service-api/update"]), ("bearer" = [])),
                responses(
                    (status = 200, description = concat!("The updated ", $singular), body = $view),
                    BadRequest, Unauthorized, Forbidden, NotFound, Conflict, PayloadTooLarge, InternalError
                )
            )]
            pub async fn update(
                auth: Authenticated,
                State(s): State<RecordsState>,
                PathId(id): PathId,
                RawQuery(q): RawQuery,
                body: Body,
            ) -> Answer<RecordView> {
                super::update(ObjectType::$t, auth, s, id, q, body).await
            }

            #[doc = concat!("Archives a ", $singular, ".")]
            #[utoipa::path(
                delete,
                path = $item,
                operation_id = $archive_id,
                tag = TAG_RECORDS,
                summary = concat!("Archive a ", $singular),
                description = concat!("Archives the ", $singular, " (it is kept, and its unique keys are released). Answers it with the default fields, `archived` set and `archived_by` the API client. Already archived: 404."),
                params(($id = String, Path, description = concat!("The ", $singular, "'s id (UUID)"))),
                security(("oauth2" = ["service-api/delete"]), ("bearer" = [])),
                responses(
                    (status = 200, description = concat!("The archived ", $singular), body = $view),
                    Unauthorized, Forbidden, NotFound, InternalError
                )
            )]
            pub async fn archive(
                auth: Authenticated,
                State(s): State<RecordsState>,
                PathId(id): PathId,
            ) -> Answer<RecordView> {
                super::archive(ObjectType::$t, auth, s, id).await
            }

            #[doc = concat!("Lists a ", $singular, "'s routing history, newest first.")]
            #[utoipa::path(
                get,
                path = $history,
                operation_id = $history_id,
                tag = TAG_HISTORY,
                summary = concat!("List a ", $singular, "'s routing history"),
                description = concat!("Every dispatch of the ", $singular, " (archived ones too) by any router of its type, newest first (BEHAVIOR 8): assignments with their reason, previous owner and CRM sync state, and the outcomes that assigned nothing. Offset or `after` cursor, as every list. An id that is not a UUID, or of no ", $singular, " of the account, is 404 `Record not found`."),
                params(($id = String, Path, description = concat!("The ", $singular, "'s id (UUID)")), PageParams),
                security(("oauth2" = ["service-api/read"]), ("bearer" = [])),
                responses(
                    (status = 200, description = "A page of history entries", body = ListView<DispatchEntryView>),
                    BadRequest, Unauthorized, Forbidden, NotFound, InternalError
                )
            )]
            pub async fn dispatches(
                auth: Authenticated,
                State(s): State<RecordsState>,
                PathId(id): PathId,
                RawQuery(q): RawQuery,
            ) -> Answer<ListView<DispatchEntryView>> {
                super::dispatches(ObjectType::$t, auth, s, id, q).await
            }

            pub(super) fn mount(
                router: OpenApiRouter<RecordsState>,
                description: Description,
            ) -> OpenApiRouter<RecordsState> {
                // The item path's PATCH and DELETE sent to the collection: 400 `Missing path
                // parameter` (BEHAVIOR 2), not operations of their own, so not in `Allow`.
                let collection = with_own_item_methods(
                    described_routes!(description; list, create),
                    ITEM_METHODS,
                    $id,
                );
                let item = with_own_405(described_routes!(description; get, update, archive));
                // The empty-id path allows what its item path does.
                let item_allow = allow_of(&item.1);
                router
                    .routes(collection)
                    .routes(item)
                    .routes(with_own_405(described_routes!(description; dispatches)))
                    .route($empty, empty_id_route(item_allow, ITEM_METHODS, $id))
            }
        }
    };
}

record_type!(
    contacts,
    Contacts,
    "contacts",
    "contact",
    collection = "/contacts",
    item = "/contacts/{contactId}",
    empty = "/contacts/",
    history = "/contacts/{contactId}/dispatches",
    id = "contactId",
    ids = [
        "listContacts",
        "createContact",
        "getContact",
        "updateContact",
        "archiveContact",
        "listContactDispatches"
    ],
    schemas = [
        Contact,
        ContactList,
        ContactCreate,
        ContactUpdate,
        ContactProperties
    ]
);
record_type!(
    companies,
    Companies,
    "companies",
    "company",
    collection = "/companies",
    item = "/companies/{companyId}",
    empty = "/companies/",
    history = "/companies/{companyId}/dispatches",
    id = "companyId",
    ids = [
        "listCompanies",
        "createCompany",
        "getCompany",
        "updateCompany",
        "archiveCompany",
        "listCompanyDispatches"
    ],
    schemas = [
        Company,
        CompanyList,
        CompanyCreate,
        CompanyUpdate,
        CompanyProperties
    ]
);
record_type!(
    deals,
    Deals,
    "deals",
    "deal",
    collection = "/deals",
    item = "/deals/{dealId}",
    empty = "/deals/",
    history = "/deals/{dealId}/dispatches",
    id = "dealId",
    ids = [
        "listDeals",
        "createDeal",
        "getDeal",
        "updateDeal",
        "archiveDeal",
        "listDealDispatches"
    ],
    schemas = [Deal, DealList, DealCreate, DealUpdate, DealProperties]
);
record_type!(
    tickets,
    Tickets,
    "tickets",
    "ticket",
    collection = "/tickets",
    item = "/tickets/{ticketId}",
    empty = "/tickets/",
    history = "/tickets/{ticketId}/dispatches",
    id = "ticketId",
    ids = [
        "listTickets",
        "createTicket",
        "getTicket",
        "updateTicket",
        "archiveTicket",
        "listTicketDispatches"
    ],
    schemas = [
        Ticket,
        TicketList,
        TicketCreate,
        TicketUpdate,
        TicketProperties
    ]
);
