//! The error answers an operation can give, one type per status, listed in each operation's
//! `responses(...)`: all in the contract's error shape `{message, error: true, field?}`
//! ([`ErrorBody`]), but API Gateway's throttling ([`Throttled`]), which no function answers.

use crate::api::error::ErrorBody;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::{IntoResponses, ToSchema};

fn error_response(description: &str, example: Value) -> ResponseBuilder {
    ResponseBuilder::new().description(description).content(
        "application/json",
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name(ErrorBody::name())))
            .example(Some(example))
            .build(),
    )
}

fn challenge(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .description(Some(description))
        .build()
}

/// Declares one error answer type per entry (`/// doc`, then `Type = "status", "description",
/// example` and, for 401 and 403, `WWW-Authenticate` => the challenge's description).
macro_rules! error_answers {
    ($($(#[$doc:meta])* $name:ident = $status:literal, $description:literal, $example:expr
        $(, $header:literal => $challenge:expr)?;)*) => {$(
        $(#[$doc])*
        pub struct $name;

        impl IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                let response = error_response($description, $example);
                $(let response = response.header($header, challenge($challenge));)?
                BTreeMap::from([($status.to_string(), RefOr::T(response.build()))])
            }
        }
    )*};
}

error_answers! {
    /// 400: an invalid path id, query parameter, JSON body or field value.
    BadRequest = "400",
        "Invalid path, query parameter, JSON or field; `field` names the offending key",
        json!({"message": "Invalid query parameter limit: must be an integer from 1 to 100", "error": true, "field": "limit"});

    /// 401: no bearer token, an invalid or expired one, or one without account context.
    Unauthorized = "401",
        "Missing, invalid or expired bearer token, or no account context in it",
        json!({"message": "Unauthorized: missing account context", "error": true}),
        "WWW-Authenticate" => "`Bearer` (RFC 6750)";

    /// 403: a valid token without the operation's scope (RFC 6750 `insufficient_scope`).
    Forbidden = "403",
        "The token lacks the operation's scope",
        json!({"message": "Insufficient scope: requires service-api/read", "error": true}),
        "WWW-Authenticate" => "`Bearer error=\"insufficient_scope\", scope=\"...\"`";

    /// 404: no such item in the caller's account.
    NotFound = "404",
        "No such item in the caller's account",
        json!({"message": "Contact not found", "error": true});

    /// 409: an archived target, or a unique key held by another active item.
    Conflict = "409",
        "The target is archived, or a unique key is held by another active record (`field` names it)",
        json!({"message": "A contact with this email already exists", "error": true, "field": "email"});

    /// 409 of `POST /{type}`: a unique key held by another active record, or the request's
    /// `Idempotency-Key` in flight (BEHAVIOR 10).
    CreateConflict = "409",
        "A unique key is held by another active record (`field` names it), or a request with this `Idempotency-Key` is still being processed (retry later)",
        json!({"message": "A contact with this email already exists", "error": true, "field": "email"});

    /// 409: a request with the same `Idempotency-Key` is still being processed (BEHAVIOR 10).
    KeyInFlight = "409",
        "A request with this `Idempotency-Key` is still being processed (retry later)",
        json!({"message": crate::idempotency::KEY_IN_FLIGHT, "error": true});

    /// 422: the `Idempotency-Key` was used with another body (BEHAVIOR 10).
    KeyReused = "422",
        "The `Idempotency-Key` was used with a different request body",
        json!({"message": crate::idempotency::KEY_REUSED, "error": true});

    /// 412: the `If-Match` sent is not the draft's current `ETag`, or there is no draft
    /// (BEHAVIOR 15; RFC 9110 13.1.1).
    PreconditionFailed = "412",
        "`If-Match` is not the draft's current `ETag` (or there is no draft): read the draft again",
        json!({"message": crate::routers::manage::DRAFT_CHANGED, "error": true});

    /// 428: a publish of a draft without `If-Match` (BEHAVIOR 15; RFC 6585 section 3).
    PreconditionRequired = "428",
        "Publishing a draft needs `If-Match` with the draft's `ETag`",
        json!({"message": crate::routers::manage::IF_MATCH_REQUIRED, "error": true});

    /// 413: a body over 1 MiB.
    PayloadTooLarge = "413",
        "The request body is over 1 MiB",
        json!({"message": "Request body too large", "error": true});

    /// 500: anything unexpected; the body never shows the cause.
    InternalError = "500",
        "Internal server error",
        json!({"message": "Internal server error", "error": true});
}

/// 429 of API Gateway's throttling (the stage's rate and burst limits, `ThrottlingRateLimit` and
/// `ThrottlingBurstLimit` in `template.yaml`): answered before any function runs, in API
/// Gateway's shape `{message}`, not the contract's; the local server never answers it. Every
/// route can get it in AWS; `GET /openapi.json`, which takes no input and so has no client error
/// of its own, describes it.
pub struct Throttled;

impl IntoResponses for Throttled {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let schema = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("message", ObjectBuilder::new().schema_type(Type::String))
            .required("message");
        let response = ResponseBuilder::new()
            .description(
                "Too many requests: API Gateway's throttling limits were reached (retry later)",
            )
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(schema))
                    .example(Some(json!({"message": "Too Many Requests"})))
                    .build(),
            )
            .build();
        BTreeMap::from([("429".to_string(), RefOr::T(response))])
    }
}
