//! The pace port (BEHAVIOR 7 "Rate limits"): one small item per account and CRM that every
//! instance sharing the store moves with one conditional update per CRM request, so the pace
//! holds for the service as a whole ([`crate::model::pace`]).

use crate::model::pace::{PaceKey, Turn, TurnAsk, UsageHold};
use crate::store::StoreResult;
use async_trait::async_trait;

/// The stored pace of each account's CRM requests.
#[async_trait]
pub trait PaceStore: Send + Sync + 'static {
    /// The turn `ask` gets for `key`, as [`crate::model::pace::PaceState::take`] decides it from
    /// the stored state, reserved atomically when granted: of any number of concurrent calls on
    /// one key, each granted turn is its own (no two reserve the same one). The DynamoDB adapter
    /// makes one conditional `UpdateItem` when `ask.hint_us` guesses the state's form right
    /// (idle or busy), one more when not.
    async fn take_turn(&self, key: &PaceKey, ask: &TurnAsk) -> StoreResult<Turn>;

    /// Holds `key`'s requests: its TAT moves to `tat_us` unless it is later already (the CRM
    /// said its allowance is spent: HubSpot's `X-HubSpot-RateLimit-Remaining: 0`).
    async fn hold_pace(&self, key: &PaceKey, tat_us: i64) -> StoreResult<()>;

    /// Stores `hold` as `key`'s usage hold (Salesforce's `Sforce-Limit-Info` at or above the
    /// share), or, with `None`, ends it.
    async fn set_usage_hold(&self, key: &PaceKey, hold: Option<&UsageHold>) -> StoreResult<()>;
}
