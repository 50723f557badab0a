//! Which configuration of a router a run evaluates instead of the live one: the body key
//! `revision` of `POST /dispatch/router/explain` (BEHAVIOR 9) and of `POST
//! /routers/{id}/simulate` (BEHAVIOR 16), `"draft"` or a revision number (BEHAVIOR 15). One
//! newtype and one `parse` for both routes.

use crate::error::DomainError;
use crate::model::router::{Router, RouterConfig, RouterRevision, FIRST_REVISION};
use crate::store::{RouterStore, StoreResult};
use crate::types::ids::{AccountId, RouterId};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// 404 of a router without a draft.
pub const DRAFT_NOT_FOUND: &str = "Draft not found";
/// 404 of an unknown revision (or a `{n}` that is not a positive integer).
pub const REVISION_NOT_FOUND: &str = "Revision not found";

/// The body key naming the configuration.
pub const REVISION_KEY: &str = "revision";

/// A router configuration chosen by the client: its draft, or one of its revisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevisionChoice {
    /// The router's draft (BEHAVIOR 15), which no dispatch uses.
    Draft,
    /// Revision `n` (1, 2, ...), live or not.
    Number(u64),
}

impl RevisionChoice {
    /// Parses the JSON value of the body key `revision`: the string `"draft"` or a JSON
    /// integer of at least 1. An integer written with a zero fraction (`3.0`) is an integer, as
    /// JSON Schema reads its `integer` type (a number beyond `u64` names no revision: 404).
    ///
    /// Errors: 400 naming `revision` for any other value (`null`, `0`, `-1`, `1.5`, `"1"`,
    /// `"Draft"`, ...) (BEHAVIOR 9).
    pub fn parse(value: &Value) -> Result<Self, DomainError> {
        match value {
            Value::String(s) if s == "draft" => Ok(Self::Draft),
            Value::Number(n) => {
                let whole = n.as_u64().or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 1.0)
                        // Saturates at u64::MAX, a revision that never exists.
                        .map(|f| f as u64)
                });
                match whole {
                    Some(n) if n >= FIRST_REVISION => Ok(Self::Number(n)),
                    _ => Err(invalid()),
                }
            }
            _ => Err(invalid()),
        }
    }

    /// The chosen configuration of router `router_id`, or `None` when the router has no draft
    /// or no such revision. One read by key.
    ///
    /// Errors: the store's.
    pub async fn read(
        self, store: &dyn RouterStore, account_id: AccountId, router_id: RouterId,
    ) -> StoreResult<Option<RouterConfig>> {
        Ok(match self {
            Self::Draft => store
                .get_router_draft(account_id, router_id)
                .await?
                .map(|d| d.config),
            Self::Number(n) => store
                .get_router_revision(account_id, router_id, n)
                .await?
                .map(|r| r.config),
        })
    }

    /// `router` evaluating the chosen configuration `config` (read by [`Self::read`]), or the
    /// 404 of a choice that found none: `Draft not found` / `Revision not found`. A revision
    /// keeps its number; a draft is numbered as the live revision (it has none of its own).
    ///
    /// Errors: 404 as above.
    pub fn apply(
        self, router: &Router, config: Option<&RouterConfig>,
    ) -> Result<Router, DomainError> {
        // A router stored before revisions existed has no revision-1 item (see
        // [`first_revision_mended`]); its live configuration is revision 1's.
        let live;
        let config = match config {
            Some(config) => config,
            None if self == Self::Number(FIRST_REVISION) && router.revision == FIRST_REVISION => {
                live = router.config();
                &live
            }
            None => return Err(self.not_found()),
        };
        let number = match self {
            Self::Draft => router.revision,
            Self::Number(n) => n,
        };
        Ok(router.with_config(config, number))
    }

    /// The 404 of a choice that names nothing.
    pub fn not_found(self) -> DomainError {
        DomainError::not_found(match self {
            Self::Draft => DRAFT_NOT_FOUND,
            Self::Number(_) => REVISION_NOT_FOUND,
        })
    }
}

/// Revision 1 of `router`, stored now when a read found none: a router stored before
/// revisions existed (the release before router management wrote no revision items) reads as
/// revision 1, and its live configuration is revision 1's, but it has no revision-1 item. It is
/// mended where revision 1 is wanted: the revision list, `GET .../revisions/1`, a restore of
/// revision 1, and the first publish of a draft (after which the live configuration is no longer
/// revision 1's: [`ensure_first_revision`]). One write conditional on the item's absence
/// ([`crate::store::RouterStore::put_first_revision`]), so concurrent menders write it once;
/// the revision is [`RouterRevision::provisioned`], the same whoever writes it.
///
/// `None` for a router past revision 1: its first configuration is not known from it.
///
/// Errors: the store's.
pub(crate) async fn first_revision_mended(
    store: &dyn RouterStore, router: &Router,
) -> StoreResult<Option<RouterRevision>> {
    if router.revision != FIRST_REVISION {
        return Ok(None);
    }
    let first = RouterRevision::provisioned(router);
    if store.put_first_revision(&first).await? {
        tracing::info!(router_id = %router.id, "stored the missing revision 1 of a router");
    }
    Ok(Some(first))
}

/// Before a publish makes revision 2 of a router at revision 1: reads its revision 1 and
/// mends it when missing ([`first_revision_mended`]), so that the configuration it ran stays
/// listed and restorable. Nothing for a router past revision 1.
///
/// Errors: the store's.
pub(crate) async fn ensure_first_revision(
    store: &dyn RouterStore, router: &Router,
) -> StoreResult<()> {
    if router.revision == FIRST_REVISION
        && store
            .get_router_revision(router.account_id, router.id, FIRST_REVISION)
            .await?
            .is_none()
    {
        first_revision_mended(store, router).await?;
    }
    Ok(())
}

impl Serialize for RevisionChoice {
    /// `"draft"` or the number, as the answers carry it.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Draft => s.serialize_str("draft"),
            Self::Number(n) => s.serialize_u64(*n),
        }
    }
}

impl<'de> serde::Deserialize<'de> for RevisionChoice {
    /// As [`RevisionChoice::parse`].
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Self::parse(&value).map_err(serde::de::Error::custom)
    }
}

impl utoipa::PartialSchema for RevisionChoice {
    /// `"draft"` or an integer of at least 1 (what [`RevisionChoice::parse`] takes).
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, SchemaType, Type};
        OneOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .schema_type(SchemaType::Type(Type::String))
                    .enum_values(Some(["draft"])),
            )
            .item(
                ObjectBuilder::new()
                    .schema_type(SchemaType::Type(Type::Integer))
                    .minimum(Some(1)),
            )
            .description(Some(
                "A router configuration: `\"draft\"` (the draft) or a revision number (1, 2, ...)",
            ))
            .examples([serde_json::json!("draft")])
            .into()
    }
}

impl utoipa::ToSchema for RevisionChoice {}

fn invalid() -> DomainError {
    DomainError::bad_field(
        REVISION_KEY,
        "Invalid revision: must be \"draft\" or a positive integer",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_revision_is_draft_or_a_positive_integer_and_anything_else_names_revision() {
        assert_eq!(
            RevisionChoice::parse(&json!("draft")).unwrap(),
            RevisionChoice::Draft
        );
        assert_eq!(
            RevisionChoice::parse(&json!(1)).unwrap(),
            RevisionChoice::Number(1)
        );
        assert_eq!(
            RevisionChoice::parse(&json!(42)).unwrap(),
            RevisionChoice::Number(42)
        );
        // JSON Schema's `integer`: a zero fraction is still an integer.
        assert_eq!(
            RevisionChoice::parse(&json!(142859.0)).unwrap(),
            RevisionChoice::Number(142859)
        );
        assert_eq!(
            RevisionChoice::parse(&json!(1e300)).unwrap(),
            RevisionChoice::Number(u64::MAX)
        );
        for bad in [
            json!(0.0),
            json!(-3.0),
            json!(null),
            json!(0),
            json!(-1),
            json!(1.5),
            json!("1"),
            json!("Draft"),
            json!(""),
            json!(true),
            json!([1]),
            json!({"n": 1}),
        ] {
            let err = RevisionChoice::parse(&bad).unwrap_err();
            assert_eq!(err.field(), Some(REVISION_KEY), "{bad}");
            assert!(matches!(err, DomainError::Invalid { .. }), "{bad}: a 400");
        }
    }

    #[test]
    fn a_choice_answers_as_draft_or_its_number() {
        assert_eq!(json!(RevisionChoice::Draft), json!("draft"));
        assert_eq!(json!(RevisionChoice::Number(3)), json!(3));
    }
}
