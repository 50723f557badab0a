//! The walk of a window's replay set: the router's history read a page at a time, oldest
//! first, the entries a replay replays handed on, within the cap and the read bound
//! ([`super::READ_FACTOR`]).

use crate::dispatch::outcome::{Skip, OWNER_ASSIGNED};
use crate::history::stats::StatsWindow;
use crate::model::dispatch::{DispatchEntry, DispatchSource};
use crate::store::{DispatchStore, Position, StoreError};
use crate::types::ids::{AccountId, RouterId};
use chrono::{DateTime, Utc};

/// The walk of a window's replay set (BEHAVIOR 16): entries of `source` `api` or `queue` whose
/// outcome is `Trigger did not match` or later in BEHAVIOR 6's order, not expired, oldest
/// first, one page of the router's history at a time, until the cap's worth were handed on or
/// the window ends, reading at most [`super::READ_FACTOR`] times the cap in entries (skipped ones
/// included).
pub(super) struct Walk<'a> {
    pub(super) store: &'a dyn DispatchStore,
    pub(super) account_id: AccountId,
    pub(super) router_id: RouterId,
    pub(super) window: StatsWindow,
    pub(super) now: DateTime<Utc>,
    /// Entries per page (the replay's window).
    pub(super) page: usize,
    pub(super) cap: usize,
    /// Most entries read.
    pub(super) budget: usize,
    pub(super) read: usize,
    pub(super) replayed: usize,
    pub(super) after: Option<Position>,
    /// `Some(truncated)` once the walk is over: whether it stopped before the window's end, at
    /// the cap (more entries of the set follow) or at the read bound (the window goes on).
    pub(super) ended: Option<bool>,
}

impl Walk<'_> {
    /// The replay set's entries of the next page (possibly none), oldest first; `None` once
    /// the walk is over.
    ///
    /// Errors: the store's.
    pub(super) async fn next(&mut self) -> Result<Option<Vec<DispatchEntry>>, StoreError> {
        if self.ended.is_some() {
            return Ok(None);
        }
        let page = self
            .store
            .list_router_dispatches_between(
                self.account_id,
                self.router_id,
                self.window.from,
                self.window.to,
                self.after.as_ref(),
                self.page.min(self.budget - self.read).max(1),
            )
            .await?;
        self.read += page.items.len();
        let mut entries = Vec::with_capacity(page.items.len());
        let mut full = false;
        for entry in page.items {
            if !is_replayed(&entry, self.now) {
                continue;
            }
            if self.replayed == self.cap {
                full = true;
                break;
            }
            self.replayed += 1;
            entries.push(entry);
        }
        match page.next {
            _ if full => self.ended = Some(true),
            None => self.ended = Some(false),
            Some(_) if self.read >= self.budget => self.ended = Some(true),
            Some(next) => self.after = Some(next),
        }
        Ok(Some(entries))
    }
}

/// Whether `entry` belongs to a replay set at `now`: not expired (BEHAVIOR 8: the store may
/// delete it late), from `api` or `queue`, outcome `Trigger did not match` or later.
fn is_replayed(entry: &DispatchEntry, now: DateTime<Utc>) -> bool {
    const REPLAYED: [Skip; 4] = [
        Skip::TriggerDidNotMatch,
        Skip::CannotOverwrite,
        Skip::LimitReached,
        Skip::NoUsersAvailable,
    ];
    entry.expires_at > now
        && matches!(entry.source, DispatchSource::Api | DispatchSource::Queue)
        && (entry.message == OWNER_ASSIGNED
            || REPLAYED.iter().any(|s| s.message() == entry.message))
}
