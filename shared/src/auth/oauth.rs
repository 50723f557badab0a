//! The token endpoint `POST /oauth2/token`: the OAuth 2.0 client-credentials grant
//! (RFC 6749 section 4.4), independent of any HTTP framework.
//!
//! Checks, in this order (BEHAVIOR 1); the first failure answers:
//!
//! 1. The body is `application/x-www-form-urlencoded` (parameters such as `; charset=utf-8` are
//!    allowed) and valid UTF-8, and none of `grant_type`, `client_id`, `client_secret`, `scope`
//!    is repeated (RFC 6749 section 3.1) -> else 400 `invalid_request`. Parameters with an empty
//!    value count as omitted (section 3.1); unknown parameters are ignored (section 3.2).
//! 2. `grant_type`: missing -> 400 `invalid_request`; other than `client_credentials` -> 400
//!    `unsupported_grant_type`.
//! 3. Client authentication (RFC 6749 section 2.3.1): HTTP Basic with the form-urlencoded id and
//!    secret, or the `client_id` and `client_secret` form parameters. Both at once -> 400
//!    `invalid_request` (section 2.3), as is a form `client_id` that differs from the Basic one.
//!    No credentials, a malformed or non-Basic `Authorization` header, an unknown or disabled
//!    client or a wrong secret -> 401 `invalid_client`, with `WWW-Authenticate: Basic` when an
//!    `Authorization` header was sent (section 5.2). A `client_id` that failed to authenticate
//!    [`MAX_FAILURES`] times from the request's source within [`WINDOW`] -> 429
//!    `temporarily_unavailable` with `Retry-After`, before its secret is checked
//!    ([`crate::auth::attempts`]); each failure is counted in the store.
//! 4. `scope`: missing or blank -> 400 `invalid_request`; a name that does not exist or that the
//!    client may not request -> 400 `invalid_scope`.
//!
//! Error bodies are RFC 6749 section 5.2's `{error, error_description}`; descriptions never echo
//! request input other than known parameter and scope names.

use crate::auth::attempts::{shut_out_for, SourceAddress, MAX_FAILURES, WINDOW};
use crate::auth::scope::Scope;
use crate::auth::secret::HashingLimit;
use crate::auth::token::issue::TokenIssuer;
use crate::clock::Clock;
use crate::error::ErrorChain;
use crate::model::account::ApiClient;
use crate::store::{AccountStore, AuthAttemptStore};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The only grant type served.
const CLIENT_CREDENTIALS: &str = "client_credentials";

/// Client ids longer than this are treated as unknown without asking the store.
const MAX_CLIENT_ID_LEN: usize = 256;

/// A successful token response (RFC 6749 section 5.1); serializes to exactly
/// `{access_token, expires_in, token_type, scope}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"access_token": "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6Ii4uLiJ9.eyJpc3MiOiIuLi4ifQ.c2lnbmF0dXJl", "expires_in": 3600, "token_type": "Bearer", "scope": "service-api/read service-api/update"}))]
pub struct TokenResponse {
    /// The JWT access token.
    pub access_token: String,
    /// Lifetime in seconds.
    pub expires_in: u64,
    /// Always `Bearer` (RFC 6750).
    pub token_type: String,
    /// The granted scopes, space-separated, without duplicates, in the order requested.
    pub scope: String,
}

/// An error answer of the token endpoint (RFC 6749 section 5.2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}: {error_description}")]
pub struct OAuthError {
    /// HTTP status: 400, 401, 429 or 500.
    pub status: u16,
    /// `invalid_request`, `invalid_client`, `unsupported_grant_type`, `invalid_scope`,
    /// `temporarily_unavailable` (429) or `server_error`.
    pub error: &'static str,
    /// Human-readable ASCII text, no quotes or backslashes.
    pub error_description: String,
    /// Whether the answer must carry `WWW-Authenticate: Basic` (a 401 to a client that sent an
    /// `Authorization` header, RFC 6749 section 5.2).
    pub www_authenticate_basic: bool,
    /// Seconds for `Retry-After` (a 429: until the failure window ends).
    pub retry_after: Option<u64>,
}

impl OAuthError {
    fn new(status: u16, error: &'static str, description: impl Into<String>) -> Self {
        Self {
            status,
            error,
            error_description: description.into(),
            www_authenticate_basic: false,
            retry_after: None,
        }
    }

    /// 429 `temporarily_unavailable` (RFC 6749 5.2 names it for the authorization endpoint;
    /// the status and `Retry-After` are RFC 6585's): too many failed authentications of this
    /// client from this source; try again in `retry_after` seconds.
    pub fn too_many_failures(retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(429, "temporarily_unavailable", "Too many failed attempts")
        }
    }

    fn invalid_request(description: impl Into<String>) -> Self {
        Self::new(400, "invalid_request", description)
    }

    fn invalid_client(used_authorization_header: bool) -> Self {
        Self {
            www_authenticate_basic: used_authorization_header,
            ..Self::new(401, "invalid_client", "Client authentication failed")
        }
    }

    fn invalid_scope(description: impl Into<String>) -> Self {
        Self::new(400, "invalid_scope", description)
    }

    fn server_error() -> Self {
        Self::new(500, "server_error", "Internal server error")
    }

    /// The body `{error, error_description}`.
    pub fn body(&self) -> OAuthErrorBody {
        OAuthErrorBody {
            error: self.error,
            error_description: self.error_description.clone(),
        }
    }
}

/// The error body of the token endpoint (RFC 6749 section 5.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(example = json!({"error": "invalid_client", "error_description": "Client authentication failed"}))]
pub struct OAuthErrorBody {
    /// `invalid_request`, `invalid_client`, `unsupported_grant_type`, `invalid_scope` or
    /// `server_error`.
    #[schema(value_type = String)]
    pub error: &'static str,
    /// Human-readable text.
    pub error_description: String,
}

/// The form of a token request (RFC 6749 section 4.4.2, `application/x-www-form-urlencoded`).
/// The client authenticates with these fields or with HTTP Basic (section 2.3.1), not both.
#[derive(Debug, Clone, utoipa::ToSchema)]
#[schema(example = json!({"grant_type": "client_credentials", "client_id": "northwind-integration", "client_secret": "dev-secret-change-me", "scope": "service-api/read service-api/update"}))]
pub struct TokenRequestForm {
    /// `client_credentials`.
    #[schema(pattern = "^client_credentials$")]
    pub grant_type: String,
    /// The client id, when not sent with HTTP Basic.
    pub client_id: Option<String>,
    /// The client secret, when not sent with HTTP Basic.
    pub client_secret: Option<String>,
    /// Space-separated scope names: `service-api/read`, `service-api/create`,
    /// `service-api/update`, `service-api/delete`.
    #[schema(
        pattern = "^ *service-api/(read|create|update|delete)( +service-api/(read|create|update|delete))* *$"
    )]
    pub scope: String,
}

/// The recognised parameters of a token request, each at most once and non-empty.
#[derive(Debug, Default)]
struct TokenForm {
    grant_type: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    scope: Option<String>,
}

/// Handles one token request.
///
/// - `content_type`, `authorization`: the `Content-Type` and `Authorization` header values, if
///   sent; callers pass a header that is not UTF-8 lossily decoded, not as absent.
/// - `body`: the raw request body.
/// - `source`: where the request came from, for the limit on failed authentications.
///
/// Returns the token response, or the error answer per the module docs. Store and signing
/// failures are logged and answered 500 `server_error`. Secret verification (argon2, CPU-bound)
/// runs on tokio's blocking pool, at most [`HashingLimit::global`]'s limit at once (a burst of
/// requests waits for a permit), so this must be called inside a tokio runtime.
pub async fn token_endpoint(
    store: &(impl AccountStore + AuthAttemptStore + ?Sized), issuer: &TokenIssuer,
    clock: &dyn Clock, content_type: Option<&str>, authorization: Option<&str>, body: &[u8],
    source: &SourceAddress,
) -> Result<TokenResponse, OAuthError> {
    if !is_form_encoded(content_type) {
        return Err(OAuthError::invalid_request(
            "The request body must be application/x-www-form-urlencoded",
        ));
    }
    let form = parse_form(body)?;

    match form.grant_type.as_deref() {
        None => return Err(OAuthError::invalid_request("Missing grant_type")),
        Some(CLIENT_CREDENTIALS) => {}
        Some(_) => {
            return Err(OAuthError::new(
                400,
                "unsupported_grant_type",
                "Only the client_credentials grant type is supported",
            ))
        }
    }

    let credentials = client_credentials(authorization, &form)?;
    let client = authenticate(store, clock, credentials, source).await?;

    let requested = form.scope.as_deref().map(str::trim).unwrap_or_default();
    if requested.is_empty() {
        return Err(OAuthError::invalid_request("Missing scope"));
    }
    let mut granted: Vec<Scope> = Vec::new();
    for name in requested.split(' ').filter(|name| !name.is_empty()) {
        let scope =
            Scope::parse(name).map_err(|_| OAuthError::invalid_scope("Unknown scope requested"))?;
        if !client.scopes.contains(&scope) {
            return Err(OAuthError::invalid_scope(format!(
                "Scope not allowed for this client: {scope}"
            )));
        }
        granted.push(scope);
    }

    // The issuer drops duplicates, keeping the requested order.
    let issued = issuer
        .issue_at_generation(
            &client.client_id,
            client.account_id,
            &granted,
            client.generation,
            clock.now(),
        )
        .map_err(|e| {
            tracing::error!(error = %e, client_id = %client.client_id, "could not issue a token");
            OAuthError::server_error()
        })?;
    tracing::info!(client_id = %client.client_id, scope = %issued.scope, "access token issued");
    Ok(TokenResponse {
        access_token: issued.access_token,
        expires_in: issued.expires_in,
        token_type: "Bearer".to_owned(),
        scope: issued.scope,
    })
}

/// Whether the media type is `application/x-www-form-urlencoded` (case-insensitive, parameters
/// ignored).
fn is_form_encoded(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| {
            media
                .trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

/// Parses the form body into the recognised parameters.
fn parse_form(body: &[u8]) -> Result<TokenForm, OAuthError> {
    if std::str::from_utf8(body).is_err() {
        return Err(OAuthError::invalid_request(
            "The request body must be application/x-www-form-urlencoded",
        ));
    }
    let mut form = TokenForm::default();
    for (name, value) in form_urlencoded::parse(body) {
        let slot = match name.as_ref() {
            "grant_type" => &mut form.grant_type,
            "client_id" => &mut form.client_id,
            "client_secret" => &mut form.client_secret,
            "scope" => &mut form.scope,
            _ => continue,
        };
        if value.is_empty() {
            continue;
        }
        if slot.is_some() {
            return Err(OAuthError::invalid_request(format!(
                "Parameter included more than once: {name}"
            )));
        }
        *slot = Some(value.into_owned());
    }
    Ok(form)
}

/// The client id and secret a request presents.
struct Credentials {
    client_id: String,
    secret: String,
    /// Whether they came in an `Authorization` header.
    header: bool,
}

/// The client's credentials from the `Authorization: Basic` header or the form (RFC 6749
/// section 2.3.1).
fn client_credentials(
    authorization: Option<&str>, form: &TokenForm,
) -> Result<Credentials, OAuthError> {
    let authorization = authorization
        .map(str::trim)
        .filter(|value| !value.is_empty());
    let Some(header) = authorization else {
        return match (&form.client_id, &form.client_secret) {
            (Some(client_id), Some(secret)) => Ok(Credentials {
                client_id: client_id.clone(),
                secret: secret.clone(),
                header: false,
            }),
            _ => Err(OAuthError::invalid_client(false)),
        };
    };
    if form.client_secret.is_some() {
        return Err(OAuthError::invalid_request(
            "Use only one client authentication method: the Authorization header or the form",
        ));
    }
    let (client_id, secret) =
        parse_basic(header).ok_or_else(|| OAuthError::invalid_client(true))?;
    if form
        .client_id
        .as_ref()
        .is_some_and(|form_id| *form_id != client_id)
    {
        return Err(OAuthError::invalid_request(
            "client_id in the body does not match the Authorization header",
        ));
    }
    Ok(Credentials {
        client_id,
        secret,
        header: true,
    })
}

/// `(client_id, client_secret)` of an `Authorization: Basic base64(id:secret)` value, each
/// form-urldecoded (RFC 6749 section 2.3.1, RFC 7617); `None` when malformed or another scheme.
fn parse_basic(value: &str) -> Option<(String, String)> {
    let (scheme, encoded) = value.split_once([' ', '\t'])?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = STANDARD.decode(encoded.trim()).ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    Some((form_urldecode(id)?, form_urldecode(secret)?))
}

/// Decodes one `application/x-www-form-urlencoded` value: `+` is a space, `%XX` a byte; the
/// result must be UTF-8. `None` for a `%` not followed by two hex digits or invalid UTF-8.
fn form_urldecode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b'+' => out.push(b' '),
            b'%' => {
                // Two hex digits exactly (`from_str_radix` alone would accept a sign).
                let hex = bytes
                    .get(i + 1..i + 3)
                    .filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
                out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                i += 2;
            }
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The client the credentials prove, or `invalid_client`. Unknown ids cost the same time as a
/// wrong secret ([`HashingLimit::burn`]). A pair of `client_id` and `source` with
/// [`MAX_FAILURES`] failures in its open window is refused with 429 before anything is checked;
/// every failure of a `client_id` the store can hold (1 to 256 bytes) is counted.
async fn authenticate(
    store: &(impl AccountStore + AuthAttemptStore + ?Sized), clock: &dyn Clock,
    credentials: Credentials, source: &SourceAddress,
) -> Result<ApiClient, OAuthError> {
    let Credentials {
        client_id,
        secret,
        header,
    } = credentials;
    let store_failure = |e: crate::store::StoreError| {
        tracing::error!(error = %ErrorChain(&e), "store failure while authenticating a client");
        OAuthError::server_error()
    };
    let countable = !client_id.is_empty() && client_id.len() <= MAX_CLIENT_ID_LEN;
    let key = source.key(&client_id);
    let now = clock.now();
    let (client, failures) = if countable {
        tokio::try_join!(
            store.get_client(&client_id),
            store.failed_authentications(&key, now)
        )
        .map_err(store_failure)?
    } else {
        (None, None)
    };
    if let Some(retry_after) = shut_out_for(failures.as_ref(), now) {
        tracing::info!(
            client_id = ?client_id,
            source = source.as_str(),
            retry_after,
            "token request refused: too many failed attempts"
        );
        return Err(OAuthError::too_many_failures(retry_after));
    }
    let failed = |why: &'static str| async move {
        if countable {
            let counted = store
                .count_failed_authentication(&key, now, WINDOW)
                .await
                .map_err(store_failure)?;
            tracing::info!(
                client_id = ?client_id,
                source = source.as_str(),
                failures = counted.count,
                limit = MAX_FAILURES,
                "{why}"
            );
        }
        Err(OAuthError::invalid_client(header))
    };
    // A disabled client authenticates no more, exactly as an unknown one (BEHAVIOR 1).
    let Some(client) = client.filter(|c| !c.disabled) else {
        HashingLimit::global().burn().await.map_err(task_failed)?;
        return failed("token request for an unknown or disabled client id").await;
    };
    let matched = HashingLimit::global()
        .verify(secret, client.secret_hash.clone())
        .await
        .map_err(task_failed)?;
    if !matched {
        return failed("token request with a wrong client secret").await;
    }
    Ok(client)
}

/// A verification task that panicked or was cancelled: logged, answered `server_error`.
fn task_failed(error: crate::auth::secret::HashingTaskFailed) -> OAuthError {
    tracing::error!(%error, "secret verification task failed");
    OAuthError::server_error()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{
        AuthError, SigningKey, TokenVerifier, DEFAULT_AUDIENCE, DEFAULT_ISSUER, DEV_SIGNING_KEY_PEM,
    };
    use crate::clock::FixedClock;
    use crate::store::faulty::FaultyStore;
    use crate::store::memory::MemoryStore;
    use crate::store::ProvisionStore;
    use chrono::{DateTime, TimeZone, Utc};
    use serde_json::json;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use uuid::Uuid;

    const CLIENT_ID: &str = "northwind-integration";
    const SECRET: &str = "dev-secret-change-me";
    const ACCOUNT: crate::types::ids::AccountId = crate::types::ids::AccountId::from_uuid(
        Uuid::from_u128(0x5b1c_0000_0000_4000_8000_0000_0000_0001),
    );
    const FORM: &str = "application/x-www-form-urlencoded";

    /// The embedded store holding two clients: `northwind-integration` may read, create and
    /// update (not delete); `team a` has a secret full of characters that Basic auth must
    /// form-urlencode. Wrapped so a test can take the backend down.
    async fn store() -> FaultyStore {
        let seed = serde_json::json!({"accounts": [
            {"id": ACCOUNT, "name": "Northwind", "clients": [{"client_id": CLIENT_ID, "client_secret": SECRET,
              "scopes": ["service-api/read", "service-api/create", "service-api/update"]}]},
            {"id": Uuid::from_u128(2), "name": "Team A", "clients": [{"client_id": "team a",
              "client_secret": "p@ss:w%rd & more", "scopes": ["service-api/read"]}]}
        ]});
        let memory = MemoryStore::new();
        let plan = crate::seed::load(
            &seed.to_string(),
            t0(),
            crate::outbound::OutboundPolicy::LOCAL,
        )
        .expect("valid test seed");
        memory.provision(&plan).await.expect("provisioned");
        FaultyStore::new(Arc::new(memory))
    }

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 22, 9, 30, 0)
            .single()
            .expect("a valid instant")
    }

    fn issuer() -> TokenIssuer {
        let key = SigningKey::from_pem(DEV_SIGNING_KEY_PEM).expect("the dev key parses");
        TokenIssuer::new(key, DEFAULT_ISSUER, DEFAULT_AUDIENCE, 3600)
    }

    fn basic(id_and_secret: &str) -> String {
        format!("Basic {}", STANDARD.encode(id_and_secret))
    }

    async fn call(
        store: &FaultyStore, content_type: Option<&str>, authorization: Option<&str>, body: &str,
    ) -> Result<TokenResponse, OAuthError> {
        let clock = FixedClock::new(t0());
        token_endpoint(
            store,
            &issuer(),
            &clock,
            content_type,
            authorization,
            body.as_bytes(),
            &SourceAddress::unknown(),
        )
        .await
    }

    /// (case, content type, Authorization, body, status, error, `WWW-Authenticate: Basic`)
    type Case<'a> = (
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
        &'a str,
        u16,
        &'a str,
        bool,
    );

    const GOOD: &str = "grant_type=client_credentials&client_id=northwind-integration&client_secret=dev-secret-change-me&scope=service-api%2Fread";

    #[tokio::test]
    async fn each_failed_check_gives_its_rfc_6749_error_in_the_documented_order() {
        let good_basic = basic("northwind-integration:dev-secret-change-me");
        let bad_basic = basic("northwind-integration:wrong");
        let repeated_grant = format!("{GOOD}&grant_type=client_credentials");
        let repeated_scope = format!("{GOOD}&scope=service-api%2Fcreate");
        let repeated_id = format!("{GOOD}&client_id=other");
        let unknown_basic = basic("nobody:dev-secret-change-me");
        let empty_id_basic = basic(":dev-secret-change-me");
        let no_colon_basic = basic("northwind-integration");
        let broken_escape_basic = basic("northwind-integration:dev-secret-change-me%zz");
        let cases: Vec<Case> = vec![
            // 1. body encoding
            ("no content type", None, None, GOOD, 400, "invalid_request", false),
            ("JSON body", Some("application/json"), None, r#"{"grant_type":"client_credentials"}"#, 400, "invalid_request", false),
            ("text body", Some("text/plain"), None, GOOD, 400, "invalid_request", false),
            ("multipart", Some("multipart/form-data; boundary=x"), None, GOOD, 400, "invalid_request", false),
            ("repeated grant_type", Some(FORM), None, &repeated_grant, 400, "invalid_request", false),
            ("repeated scope", Some(FORM), None, &repeated_scope, 400, "invalid_request", false),
            ("repeated client_id", Some(FORM), None, &repeated_id, 400, "invalid_request", false),
            ("repeat beats a wrong grant type", Some(FORM), None, "grant_type=password&grant_type=password", 400, "invalid_request", false),
            // 2. grant_type
            ("empty body", Some(FORM), None, "", 400, "invalid_request", false),
            ("grant_type missing", Some(FORM), None, "client_id=northwind-integration&client_secret=dev-secret-change-me&scope=service-api%2Fread", 400, "invalid_request", false),
            ("grant_type empty", Some(FORM), None, "grant_type=&client_id=northwind-integration&client_secret=dev-secret-change-me&scope=service-api%2Fread", 400, "invalid_request", false),
            ("grant_type missing and bad credentials", Some(FORM), Some(&bad_basic), "scope=service-api%2Fread", 400, "invalid_request", false),
            ("password grant", Some(FORM), None, "grant_type=password&client_id=northwind-integration&client_secret=dev-secret-change-me&scope=service-api%2Fread", 400, "unsupported_grant_type", false),
            ("grant type is case-sensitive", Some(FORM), Some(&good_basic), "grant_type=Client_Credentials&scope=service-api%2Fread", 400, "unsupported_grant_type", false),
            ("wrong grant type and bad credentials", Some(FORM), Some(&bad_basic), "grant_type=authorization_code", 400, "unsupported_grant_type", false),
            // 3. client authentication
            ("Basic and form secret", Some(FORM), Some(&good_basic), "grant_type=client_credentials&client_secret=dev-secret-change-me&scope=service-api%2Fread", 400, "invalid_request", false),
            ("Basic and another form client_id", Some(FORM), Some(&good_basic), "grant_type=client_credentials&client_id=someone-else&scope=service-api%2Fread", 400, "invalid_request", false),
            ("no credentials", Some(FORM), None, "grant_type=client_credentials&scope=service-api%2Fread", 401, "invalid_client", false),
            ("form client_id without secret", Some(FORM), None, "grant_type=client_credentials&client_id=northwind-integration&scope=service-api%2Fread", 401, "invalid_client", false),
            ("form secret without client_id", Some(FORM), None, "grant_type=client_credentials&client_secret=dev-secret-change-me&scope=service-api%2Fread", 401, "invalid_client", false),
            ("unknown client in the form", Some(FORM), None, "grant_type=client_credentials&client_id=nobody&client_secret=dev-secret-change-me&scope=service-api%2Fread", 401, "invalid_client", false),
            ("wrong secret in the form", Some(FORM), None, "grant_type=client_credentials&client_id=northwind-integration&client_secret=nope&scope=service-api%2Fread", 401, "invalid_client", false),
            ("wrong secret in Basic", Some(FORM), Some(&bad_basic), "grant_type=client_credentials&scope=service-api%2Fread", 401, "invalid_client", true),
            ("unknown client in Basic", Some(FORM), Some(&unknown_basic), "grant_type=client_credentials&scope=service-api%2Fread", 401, "invalid_client", true),
            ("empty client id in Basic", Some(FORM), Some(&empty_id_basic), "grant_type=client_credentials&scope=service-api%2Fread", 401, "invalid_client", true),
            ("Basic that is not base64", Some(FORM), Some("Basic !!!"), "grant_type=client_credentials&scope=service-api%2Fread", 401, "invalid_client", true),
            ("Basic without a colon", Some(FORM), Some(&no_colon_basic), "grant_type=client_credentials&scope=service-api%2Fread", 401, "invalid_client", true),
            ("Basic with a broken percent escape", Some(FORM), Some(&broken_escape_basic), "grant_type=client_credentials&scope=service-api%2Fread", 401, "invalid_client", true),
            ("Basic without credentials", Some(FORM), Some("Basic"), "grant_type=client_credentials&scope=service-api%2Fread", 401, "invalid_client", true),
            ("a Bearer header", Some(FORM), Some("Bearer abc"), "grant_type=client_credentials&scope=service-api%2Fread", 401, "invalid_client", true),
            ("bad credentials and no scope", Some(FORM), Some(&bad_basic), "grant_type=client_credentials", 401, "invalid_client", true),
            ("bad credentials and a forbidden scope", Some(FORM), None, "grant_type=client_credentials&client_id=northwind-integration&client_secret=nope&scope=service-api%2Fdelete", 401, "invalid_client", false),
            // 4. scope
            ("scope missing", Some(FORM), Some(&good_basic), "grant_type=client_credentials", 400, "invalid_request", false),
            ("scope empty", Some(FORM), Some(&good_basic), "grant_type=client_credentials&scope=", 400, "invalid_request", false),
            ("scope blank", Some(FORM), Some(&good_basic), "grant_type=client_credentials&scope=+++", 400, "invalid_request", false),
            ("unknown scope", Some(FORM), Some(&good_basic), "grant_type=client_credentials&scope=service-api%2Fadmin", 400, "invalid_scope", false),
            ("scope names are case-sensitive", Some(FORM), Some(&good_basic), "grant_type=client_credentials&scope=SERVICE-API%2FREAD", 400, "invalid_scope", false),
            ("scope separated by a comma", Some(FORM), Some(&good_basic), "grant_type=client_credentials&scope=service-api%2Fread,service-api%2Fcreate", 400, "invalid_scope", false),
            ("scope the client may not have", Some(FORM), Some(&good_basic), "grant_type=client_credentials&scope=service-api%2Fdelete", 400, "invalid_scope", false),
            ("one forbidden scope among allowed ones", Some(FORM), Some(&good_basic), "grant_type=client_credentials&scope=service-api%2Fread+service-api%2Fdelete", 400, "invalid_scope", false),
        ];
        let store = store().await;
        for (case, content_type, authorization, body, status, error, challenge) in cases {
            let got = call(&store, content_type, authorization, body)
                .await
                .expect_err(case);
            assert_eq!(
                (got.status, got.error, got.www_authenticate_basic),
                (status, error, challenge),
                "{case}: {got:?}"
            );
            assert_eq!(got.body().error, error, "{case}");
            let description = got.error_description.as_str();
            assert!(
                !description.is_empty()
                    && description.chars().all(|c| (' '..='~').contains(&c) && c != '"' && c != '\\'),
                "{case}: RFC 6749 5.2 restricts error_description to printable ASCII: {description:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_non_utf8_body_is_not_form_encoded() {
        let clock = FixedClock::new(t0());
        let got = token_endpoint(
            &store().await,
            &issuer(),
            &clock,
            Some(FORM),
            None,
            b"grant_type=\xff",
            &SourceAddress::unknown(),
        )
        .await
        .expect_err("refused");
        assert_eq!((got.status, got.error), (400, "invalid_request"));
    }

    #[tokio::test]
    async fn a_store_failure_is_an_opaque_server_error() {
        let store = store().await;
        store.faults.backend_down.store(true, Ordering::SeqCst);
        let got = call(&store, Some(FORM), None, GOOD)
            .await
            .expect_err("fails");
        assert_eq!(got.status, 500);
        assert_eq!(
            serde_json::to_value(got.body()).unwrap(),
            json!({"error": "server_error", "error_description": "Internal server error"})
        );
    }

    #[tokio::test]
    async fn form_credentials_get_a_bearer_token_for_the_clients_account() {
        let response = call(&store().await, Some(FORM), None, GOOD)
            .await
            .expect("a token");
        assert_eq!(response.token_type, "Bearer");
        assert_eq!(response.expires_in, 3600);
        assert_eq!(response.scope, "service-api/read");
        let verifier =
            TokenVerifier::from_signing_key(issuer().key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE)
                .expect("a verifier");
        let principal = verifier
            .verify(&response.access_token, t0())
            .expect("the token verifies");
        assert_eq!(principal.client_id, CLIENT_ID);
        assert_eq!(principal.account_id, ACCOUNT);
        assert_eq!(principal.scopes, vec![Scope::Read]);
    }

    #[tokio::test]
    async fn basic_credentials_get_a_token_too() {
        let authorization = basic("northwind-integration:dev-secret-change-me");
        let response = call(
            &store().await,
            Some("application/x-www-form-urlencoded; charset=UTF-8"),
            Some(&authorization),
            "grant_type=client_credentials&scope=service-api%2Fcreate",
        )
        .await
        .expect("a token");
        assert_eq!(response.scope, "service-api/create");
    }

    #[tokio::test]
    async fn basic_credentials_are_form_urldecoded_and_the_scheme_is_case_insensitive() {
        // RFC 6749 2.3.1: "team a" / "p@ss:w%rd & more", form-urlencoded before base64.
        let authorization = format!(
            "basic {}",
            STANDARD.encode("team+a:p%40ss%3Aw%25rd+%26+more")
        );
        let response = call(
            &store().await,
            Some("Application/X-WWW-Form-Urlencoded"),
            Some(&authorization),
            "grant_type=client_credentials&client_id=team+a&scope=service-api%2Fread",
        )
        .await
        .expect("a token");
        assert_eq!(response.scope, "service-api/read");
    }

    #[tokio::test]
    async fn the_granted_scope_echoes_the_request_without_duplicates() {
        let body = "scope=service-api%2Fupdate++service-api%2Fread+service-api%2Fupdate&grant_type=client_credentials&client_id=northwind-integration&client_secret=dev-secret-change-me&unknown=ignored";
        let response = call(&store().await, Some(FORM), None, body)
            .await
            .expect("a token");
        assert_eq!(response.scope, "service-api/update service-api/read");
        let claims = response.access_token.split('.').nth(1).expect("a payload");
        let claims: serde_json::Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(claims)
                .expect("base64url"),
        )
        .expect("JSON");
        assert_eq!(claims["scope"], "service-api/update service-api/read");
        assert_eq!(
            claims["iat"],
            t0().timestamp(),
            "issued at the clock's time"
        );
    }

    #[tokio::test]
    async fn the_token_expires_with_the_configured_lifetime() {
        let response = call(&store().await, Some(FORM), None, GOOD)
            .await
            .expect("a token");
        let verifier =
            TokenVerifier::from_signing_key(issuer().key(), DEFAULT_ISSUER, DEFAULT_AUDIENCE)
                .expect("a verifier");
        let after = t0() + chrono::Duration::seconds(3600 + 31);
        assert_eq!(
            verifier.verify(&response.access_token, after),
            Err(AuthError::InvalidToken)
        );
    }

    #[test]
    fn the_token_response_serializes_to_exactly_the_contract_fields() {
        let response = TokenResponse {
            access_token: "a.b.c".to_owned(),
            expires_in: 3600,
            token_type: "Bearer".to_owned(),
            scope: "service-api/read".to_owned(),
        };
        assert_eq!(
            serde_json::to_value(response).expect("serializes"),
            json!({"access_token": "a.b.c", "expires_in": 3600, "token_type": "Bearer", "scope": "service-api/read"})
        );
    }

    #[test]
    fn form_urldecoding_handles_plus_percent_and_refuses_broken_escapes() {
        let cases = [
            ("a+b", Some("a b")),
            ("%41%2b%2B", Some("A++")),
            ("caf%C3%A9", Some("café")),
            ("plain", Some("plain")),
            ("", Some("")),
            ("%", None),
            ("%4", None),
            ("%zz", None),
            ("%+4", None),
            ("%FF", None),
        ];
        for (input, expected) in cases {
            assert_eq!(form_urldecode(input).as_deref(), expected, "{input:?}");
        }
    }
}
