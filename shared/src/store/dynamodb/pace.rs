//! The DynamoDB adapter's CRM pace ([`PaceStore`]): one item per account and CRM
//! (`PACE#<account>#<provider>` / `PACE`, [`keys::crm_pace`]) holding the GCRA's theoretical
//! arrival time (`tat`, microseconds), the usage hold (`usage_until`, `usage_used`,
//! `usage_limit`) and a TTL (`expires_at`, a day after the last request).
//!
//! A turn is one conditional `UpdateItem` in one of two forms, both exact whatever the others
//! do at the same moment (no read, no version):
//!
//! - busy (the TAT is now or later): `SET tat = tat + :interval` if `tat BETWEEN :now AND
//!   :now + tolerance + horizon` and no usage hold: the new TAT comes back, the turn is the old
//!   TAT less the tolerance;
//! - idle (no TAT, or one in the past): `SET tat = :now + :interval` if `attribute_not_exists(tat)
//!   OR tat < :now` and no usage hold: the turn is now.
//!
//! The instance's last seen TAT picks the form; a failed condition answers the item as it is
//! (`ReturnValuesOnConditionCheckFailure`), which says whether the other form applies (one more
//! update) or the turn is too far or held (no write).

use super::items::{backend, Expr, Item};
use super::DynamoStore;
use crate::model::pace::{PaceKey, PaceState, Turn, TurnAsk, UsageHold};
use crate::store::dynamodb::keys;
use crate::store::{PaceStore, StoreError, StoreResult};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;

/// The theoretical arrival time, microseconds since the epoch.
const TAT: &str = "tat";
/// The end of the usage hold, microseconds since the epoch.
const USAGE_UNTIL: &str = "usage_until";
/// Requests used when the hold was set.
const USAGE_USED: &str = "usage_used";
/// The org's allowance when the hold was set.
const USAGE_LIMIT: &str = "usage_limit";
/// TTL, epoch seconds.
const EXPIRES_AT: &str = super::items::EXPIRES_AT;

/// How many updates one turn tries before giving up (each failure changes the form, so two
/// suffice unless the item keeps changing form under it).
const TRIES: usize = 4;

fn number(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn read(item: &Item, name: &str) -> StoreResult<Option<i64>> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(text)) => text
            .parse()
            .map(Some)
            .map_err(|_| backend(format!("pace item: {name} is not a whole number"))),
        Some(_) => Err(backend(format!("pace item: {name} is not a number"))),
    }
}

fn state_of(item: &Item) -> StoreResult<PaceState> {
    let usage = match (
        read(item, USAGE_UNTIL)?,
        read(item, USAGE_USED)?,
        read(item, USAGE_LIMIT)?,
    ) {
        (Some(until_us), Some(used), Some(limit)) => Some(UsageHold {
            used: u64::try_from(used).unwrap_or(0),
            limit: u64::try_from(limit).unwrap_or(0),
            until_us,
        }),
        _ => None,
    };
    Ok(PaceState {
        tat_us: read(item, TAT)?,
        usage,
    })
}

/// Epoch seconds a day after `now_us`.
fn expiry(now_us: i64) -> AttributeValue {
    number(now_us / 1_000_000 + 86_400)
}

#[async_trait]
impl PaceStore for DynamoStore {
    async fn take_turn(&self, key: &PaceKey, ask: &TurnAsk) -> StoreResult<Turn> {
        let item_key = keys::crm_pace(key);
        let now = ask.now_us;
        let interval = ask.rule.interval_us;
        let tolerance = ask.rule.tolerance_us();
        let horizon = ask.horizon_us.max(0);
        let not_held = "(attribute_not_exists(#held) OR #held <= :now)";
        let mut busy = ask.hint_us.is_some_and(|tat| tat >= now);
        for _ in 0..TRIES {
            let (update, condition) = if busy {
                let update = Expr::new("SET #tat = #tat + :interval, #expires = :expires")
                    .value(":interval", number(interval))
                    .value(
                        ":last",
                        number(now.saturating_add(tolerance).saturating_add(horizon)),
                    );
                (
                    update,
                    format!("#tat BETWEEN :now AND :last AND {not_held}"),
                )
            } else {
                let update = Expr::new("SET #tat = :next, #expires = :expires")
                    .value(":next", number(now.saturating_add(interval)));
                (
                    update,
                    format!("(attribute_not_exists(#tat) OR #tat < :now) AND {not_held}"),
                )
            };
            let update = update
                .name("#tat", TAT)
                .name("#held", USAGE_UNTIL)
                .name("#expires", EXPIRES_AT)
                .value(":now", number(now))
                .value(":expires", expiry(now));
            match self
                .update_conditional_or_current(&item_key, &update, &condition)
                .await?
            {
                Ok(item) => {
                    let tat_us = read(&item, TAT)?
                        .ok_or_else(|| backend("pace item: no tat after the update"))?;
                    // The turn of the TAT before this update (now, for the idle form).
                    let before = tat_us.saturating_sub(interval);
                    let at_us = before.saturating_sub(tolerance).max(now);
                    return Ok(Turn::Granted { at_us, tat_us });
                }
                Err(current) => {
                    let state = match current {
                        Some(item) => state_of(&item)?,
                        None => PaceState::default(),
                    };
                    match state.take(ask).0 {
                        Turn::Granted { .. } => busy = state.tat_us.is_some_and(|t| t >= now),
                        refused => return Ok(refused),
                    }
                }
            }
        }
        Err(StoreError::Conflict)
    }

    async fn hold_pace(&self, key: &PaceKey, tat_us: i64) -> StoreResult<()> {
        let update = Expr::new("SET #tat = :tat, #expires = :expires")
            .name("#tat", TAT)
            .name("#expires", EXPIRES_AT)
            .value(":tat", number(tat_us))
            .value(":expires", expiry(tat_us));
        // A later TAT already stored stands: the condition fails and nothing changes.
        self.update_conditional(
            &keys::crm_pace(key),
            &update,
            "attribute_not_exists(#tat) OR #tat < :tat",
        )
        .await?;
        Ok(())
    }

    async fn set_usage_hold(&self, key: &PaceKey, hold: Option<&UsageHold>) -> StoreResult<()> {
        let update = match hold {
            Some(hold) => {
                Expr::new("SET #held = :until, #used = :used, #limit = :limit, #expires = :expires")
                    .name("#held", USAGE_UNTIL)
                    .name("#used", USAGE_USED)
                    .name("#limit", USAGE_LIMIT)
                    .name("#expires", EXPIRES_AT)
                    .value(":until", number(hold.until_us))
                    .value(
                        ":used",
                        number(i64::try_from(hold.used).unwrap_or(i64::MAX)),
                    )
                    .value(
                        ":limit",
                        number(i64::try_from(hold.limit).unwrap_or(i64::MAX)),
                    )
                    .value(":expires", expiry(hold.until_us))
            }
            None => Expr::new("REMOVE #held, #used, #limit")
                .name("#held", USAGE_UNTIL)
                .name("#used", USAGE_USED)
                .name("#limit", USAGE_LIMIT),
        };
        // Any item: the key's PK exists or not, the update applies either way (a removal of an
        // absent item writes nothing).
        let condition = match hold {
            Some(_) => "attribute_not_exists(#held) OR attribute_exists(#held)",
            None => "attribute_exists(#held)",
        };
        self.update_conditional(&keys::crm_pace(key), &update, condition)
            .await?;
        Ok(())
    }
}
