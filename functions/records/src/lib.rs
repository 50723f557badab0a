//! Handler of the records function: `/{type}` and `/{type}/{id}` for contacts, companies, deals
//! and tickets (spec "Record collection endpoints", "Record item endpoints").
//!
//! Thin: authenticate, check the route's scope (BEHAVIOR 1), parse path and query, call
//! [`shared::records::RecordService`], map the result.

use axum::extract::{FromRef, Path, RawQuery, State};
use axum::http::StatusCode;
use axum::routing::{get, MethodRouter};
use axum::{Json, Router};
use serde_json::Value;
use shared::api::{
    item_properties, missing_path_parameter, with_405, Authenticated, ListQuery, RawBody,
};
use shared::auth::{Scope, TokenVerifier};
use shared::model::ObjectType;
use shared::records::{Caller, RecordService};
use shared::ApiError;
use std::sync::Arc;

/// What the handler needs, built once per cold start.
#[derive(Clone)]
pub struct RecordsState {
    /// The record operations.
    pub records: Arc<RecordService>,
    /// Bearer-token verification with the configured public keys.
    pub verifier: Arc<TokenVerifier>,
}

impl FromRef<RecordsState> for Arc<TokenVerifier> {
    fn from_ref(state: &RecordsState) -> Self {
        state.verifier.clone()
    }
}

type Answer = Result<(StatusCode, Json<Value>), ApiError>;

/// The record routes for all four types, without fallback (see [`shared::api::finish`]).
pub fn routes(state: RecordsState) -> Router {
    let mut router = Router::new();
    for t in ObjectType::ALL {
        router = router
            .route(&format!("/{t}"), collection(t))
            .route(&format!("/{t}/"), empty_item(t))
            .route(&format!("/{t}/{{id}}"), item(t));
    }
    router.with_state(state)
}

fn collection(t: ObjectType) -> MethodRouter<RecordsState> {
    let missing = t.path_id_name();
    with_405(
        get(move |auth, state, query| list(t, auth, state, query))
            .post(move |auth, state, body| create(t, auth, state, body))
            .patch(move |Authenticated(p): Authenticated| async move {
                p.require(Scope::Update)?;
                Err::<(), _>(missing_path_parameter(missing))
            })
            .delete(move |Authenticated(p): Authenticated| async move {
                p.require(Scope::Delete)?;
                Err::<(), _>(missing_path_parameter(missing))
            }),
        "GET, POST",
    )
}

fn empty_item(t: ObjectType) -> MethodRouter<RecordsState> {
    let missing = t.path_id_name();
    let answer = move |scope: Scope| {
        move |Authenticated(p): Authenticated| async move {
            p.require(scope)?;
            Err::<(), _>(missing_path_parameter(missing))
        }
    };
    with_405(
        get(answer(Scope::Read))
            .patch(answer(Scope::Update))
            .delete(answer(Scope::Delete)),
        "GET, PATCH, DELETE",
    )
}

fn item(t: ObjectType) -> MethodRouter<RecordsState> {
    with_405(
        get(move |auth, state, path, query| read(t, auth, state, path, query))
            .patch(move |auth, state, path, query, body| update(t, auth, state, path, query, body))
            .delete(move |auth, state, path| archive(t, auth, state, path)),
        "GET, PATCH, DELETE",
    )
}

async fn list(
    t: ObjectType,
    Authenticated(p): Authenticated,
    State(s): State<RecordsState>,
    RawQuery(query): RawQuery,
) -> Answer {
    p.require(Scope::Read)?;
    let q = ListQuery::parse(query.as_deref())?;
    let body = s
        .records
        .list(p.account_id, t, q.properties.as_deref(), q.page)
        .await?;
    Ok((StatusCode::OK, Json(body)))
}

async fn create(
    t: ObjectType,
    Authenticated(p): Authenticated,
    State(s): State<RecordsState>,
    RawBody(body): RawBody,
) -> Answer {
    p.require(Scope::Create)?;
    let caller = Caller {
        account_id: p.account_id,
        actor: &p.client_id,
    };
    let created = s.records.create(caller, t, &body).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

async fn read(
    t: ObjectType,
    Authenticated(p): Authenticated,
    State(s): State<RecordsState>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Answer {
    p.require(Scope::Read)?;
    let properties = item_properties(query.as_deref());
    let record = s
        .records
        .get(p.account_id, t, &id, properties.as_deref())
        .await?;
    Ok((StatusCode::OK, Json(record)))
}

async fn update(
    t: ObjectType,
    Authenticated(p): Authenticated,
    State(s): State<RecordsState>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    RawBody(body): RawBody,
) -> Answer {
    p.require(Scope::Update)?;
    let caller = Caller {
        account_id: p.account_id,
        actor: &p.client_id,
    };
    let properties = item_properties(query.as_deref());
    let record = s
        .records
        .update(caller, t, &id, properties.as_deref(), &body)
        .await?;
    Ok((StatusCode::OK, Json(record)))
}

async fn archive(
    t: ObjectType,
    Authenticated(p): Authenticated,
    State(s): State<RecordsState>,
    Path(id): Path<String>,
) -> Answer {
    p.require(Scope::Delete)?;
    let caller = Caller {
        account_id: p.account_id,
        actor: &p.client_id,
    };
    let record = s.records.archive(caller, t, &id).await?;
    Ok((StatusCode::OK, Json(record)))
}
