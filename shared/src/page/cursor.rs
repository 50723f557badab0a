//! `after` cursors (BEHAVIOR 11): opaque, tamper-evident positions in one list.
//!
//! A cursor is `<position>.<tag>`, both unpadded base64url (RFC 4648 section 5): the position is
//! the sort key of the last item of the page that issued it ([`Position`]), the tag the first 128
//! bits of an HMAC-SHA256 (RFC 2104) over a version, the account, the list, the `archived` filter
//! and the position. A cursor therefore opens only for the list, account and filter that issued
//! it; a cursor altered in any character, junk, or one from another list or account is refused
//! with 400 naming `after`. The key ([`CursorKey`]) is shared by every instance of the API
//! (`CURSOR_SECRET`, `docs/decisions.md`), so a cursor issued by one Lambda instance opens on
//! any other.

use super::{ListView, Listed, Page, PageStart, Position};
use crate::error::DomainError;
use crate::types::ids::AccountId;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use std::sync::Arc;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the MAC kept in a cursor (128 bits: RFC 2104 section 5 allows truncation to half).
const TAG_BYTES: usize = 16;
/// Cursors longer than this are refused before any decoding (a position is a sort key of at
/// most a few hundred bytes).
const MAX_CURSOR_CHARS: usize = 2048;
/// The message of a refused cursor.
pub const INVALID_AFTER: &str =
    "Invalid query parameter after: not a cursor of this list (use pagination.next_after of a previous page, with the same archived filter)";

/// The secret that signs cursors. Every instance of the API must hold the same one.
#[derive(Clone)]
pub struct CursorKey {
    secret: Vec<u8>,
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

/// Loads the cursor key on first use: the Secrets Manager read behind `CURSOR_SECRET_ARN`
/// ([`crate::deps`]). Its error is a message naming the secret, logged and answered as a 500.
pub type LoadCursorKey = Box<
    dyn Fn()
            -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<CursorKey, String>> + Send>>
        + Send
        + Sync,
>;

/// A process's cursor key: given at start ([`Self::ready`]: `CURSOR_SECRET`, or a random key
/// for one process alone), or loaded by the first request that needs it ([`Self::on_first_use`]:
/// the secret `CURSOR_SECRET_ARN` names, read by the first list rather than during the cold start,
/// which a `GET` of one record or a dispatch does not need). Concurrent first uses
/// load it once; a failed load is not remembered, so the next request tries again.
pub enum CursorKeySource {
    /// Known at start.
    Ready(Arc<CursorKey>),
    /// Loaded by `load` on first use, then kept in `key`.
    OnFirstUse {
        /// The key once loaded.
        key: tokio::sync::OnceCell<Arc<CursorKey>>,
        /// Reads it.
        load: LoadCursorKey,
    },
}

impl std::fmt::Debug for CursorKeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let loaded = match self {
            Self::Ready(_) => true,
            Self::OnFirstUse { key, .. } => key.initialized(),
        };
        f.debug_struct("CursorKeySource")
            .field("loaded", &loaded)
            .finish_non_exhaustive()
    }
}

impl CursorKeySource {
    /// The key `key`, ready now.
    pub fn ready(key: CursorKey) -> Self {
        Self::Ready(Arc::new(key))
    }

    /// A key that `load` reads on first use.
    pub fn on_first_use(load: LoadCursorKey) -> Self {
        Self::OnFirstUse {
            key: tokio::sync::OnceCell::new(),
            load,
        }
    }

    /// The key, loaded now when this is its first use.
    ///
    /// Errors: 500 when the load fails (the secret cannot be read, or is shorter than
    /// [`CursorKey::MIN_SECRET_BYTES`]); the cause is logged with the 500, not answered.
    pub async fn key(&self) -> Result<Arc<CursorKey>, DomainError> {
        match self {
            Self::Ready(key) => Ok(key.clone()),
            Self::OnFirstUse { key, load } => key
                .get_or_try_init(|| async { load().await.map(Arc::new) })
                .await
                .cloned()
                .map_err(DomainError::internal),
        }
    }
}

/// A cursor secret that is too short.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a cursor secret needs at least {min} bytes, got {got}", min = CursorKey::MIN_SECRET_BYTES)]
pub struct WeakCursorSecret {
    /// The length given.
    pub got: usize,
}

impl CursorKey {
    /// Shortest accepted secret (the output size of SHA-256, RFC 2104 section 3).
    pub const MIN_SECRET_BYTES: usize = 32;

    /// A key from the configured secret.
    ///
    /// Errors: [`WeakCursorSecret`] below [`Self::MIN_SECRET_BYTES`] bytes.
    pub fn from_secret(secret: &[u8]) -> Result<Self, WeakCursorSecret> {
        if secret.len() < Self::MIN_SECRET_BYTES {
            return Err(WeakCursorSecret { got: secret.len() });
        }
        Ok(Self {
            secret: secret.to_vec(),
        })
    }

    /// A fresh random key: for a single process (the local server, tests), whose cursors die
    /// with it.
    pub fn random() -> Self {
        let mut secret = vec![0u8; Self::MIN_SECRET_BYTES];
        rand::thread_rng().fill_bytes(&mut secret);
        Self { secret }
    }

    fn mac(&self, list: &ListId, position: &[u8]) -> HmacSha256 {
        // `new_from_slice` accepts keys of any length (RFC 2104 hashes long keys).
        let mut mac = match HmacSha256::new_from_slice(&self.secret) {
            Ok(mac) => mac,
            Err(_) => unreachable!("HMAC takes keys of any length"),
        };
        for part in [
            b"cursor-v1".as_slice(),
            list.account_id.to_string().as_bytes(),
            list.list.as_bytes(),
            if list.include_archived {
                b"all"
            } else {
                b"active"
            },
            position,
        ] {
            // Length-prefixed, so no two different tuples feed the same bytes.
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac
    }

    /// The cursor of `position` in `list`.
    pub fn seal(&self, list: &ListId, position: &Position) -> String {
        let bytes = position.as_str().as_bytes();
        let tag = self.mac(list, bytes).finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(bytes),
            URL_SAFE_NO_PAD.encode(&tag[..TAG_BYTES])
        )
    }

    /// The position of a cursor issued for `list`.
    ///
    /// Errors: 400 [`INVALID_AFTER`] naming `after` for anything [`Self::seal`] did not issue
    /// for this list, account and filter.
    pub fn open(&self, list: &ListId, after: &str) -> Result<Position, DomainError> {
        let invalid = || DomainError::bad_field("after", INVALID_AFTER);
        if after.len() > MAX_CURSOR_CHARS {
            return Err(invalid());
        }
        let (position, tag) = after.split_once('.').ok_or_else(invalid)?;
        let position = URL_SAFE_NO_PAD.decode(position).map_err(|_| invalid())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
        if tag.len() != TAG_BYTES {
            return Err(invalid());
        }
        self.mac(list, &position)
            .verify_truncated_left(&tag)
            .map_err(|_| invalid())?;
        // The MAC covers only positions this key sealed, which are UTF-8.
        String::from_utf8(position)
            .map(Position::new)
            .map_err(|_| invalid())
    }

    /// The answer of `page` of `list`: `listed` shown as `view`s, cut to at most
    /// [`super::MAX_PAGE_DATA_BYTES`] of JSON ([`Listed::into_views`]; BEHAVIOR 12: a Lambda
    /// answer is at most 6 MB), with `pagination.next_after` the cursor of the last item shown
    /// (per `position`) when more follow (BEHAVIOR 11).
    pub fn answer<T, V: serde::Serialize>(
        &self, list: &ListId, page: &Page, listed: Listed<T>, view: impl Fn(&T) -> V,
        position: impl Fn(&T) -> Position,
    ) -> ListView<V> {
        let shown = listed.into_views(view, position);
        let next_after = shown.next.as_ref().map(|p| self.seal(list, p));
        ListView::new(shown.items, page, next_after)
    }
}

/// Which list a cursor belongs to: the account, the list's name (`contacts`, `users`,
/// `routers`, `routers/<id>/dispatches`, ...) and the `archived` filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListId {
    /// The account whose list it is.
    pub account_id: AccountId,
    /// The list's name, unique among the API's lists.
    pub list: String,
    /// The `archived=true` filter.
    pub include_archived: bool,
}

impl ListId {
    /// The list `list` of `account_id` with the filter `include_archived`.
    pub fn new(account_id: AccountId, list: impl Into<String>, include_archived: bool) -> Self {
        Self {
            account_id,
            list: list.into(),
            include_archived,
        }
    }
}

/// Where a requested page starts, as the query gave it (BEHAVIOR 11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestedStart {
    /// `offset` (absent: 0).
    Offset(usize),
    /// `after`, not yet opened.
    After(String),
}

/// A list request as parsed from the query string: `limit`, `offset` or `after`, `archived`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRequest {
    /// 1..=100.
    pub limit: usize,
    /// `offset` or `after`.
    pub start: RequestedStart,
    /// `archived=true`.
    pub include_archived: bool,
}

impl Default for ListRequest {
    /// The first page of 10 active items.
    fn default() -> Self {
        Self {
            limit: super::DEFAULT_LIMIT,
            start: RequestedStart::Offset(0),
            include_archived: false,
        }
    }
}

impl ListRequest {
    /// The page this request asks of `list`, opening `after` with `key`.
    ///
    /// Errors: 400 [`INVALID_AFTER`] naming `after`.
    pub fn page(&self, key: &CursorKey, list: &ListId) -> Result<Page, DomainError> {
        let start = match &self.start {
            RequestedStart::Offset(offset) => PageStart::Offset(*offset),
            RequestedStart::After(after) => PageStart::After(key.open(list, after)?),
        };
        Ok(Page {
            limit: self.limit,
            start,
            include_archived: self.include_archived,
        })
    }

    /// The list `name` of `account_id` under this request's `archived` filter, and the page
    /// the request asks of it (its `after` opened with `key`): what a list of archivable items
    /// (records, users, routers) reads.
    ///
    /// Errors: 400 [`INVALID_AFTER`] naming `after`.
    pub fn open(
        &self, key: &CursorKey, account_id: AccountId, name: impl Into<String>,
    ) -> Result<(ListId, Page), DomainError> {
        let list = ListId::new(account_id, name, self.include_archived);
        let page = self.page(key, &list)?;
        Ok((list, page))
    }

    /// [`Self::open`] for a list that has no `archived` filter (history entries, webhook
    /// subscriptions and deliveries are never archived): the request's `archived` is ignored.
    ///
    /// Errors: 400 [`INVALID_AFTER`] naming `after`.
    pub fn open_unfiltered(
        &self, key: &CursorKey, account_id: AccountId, name: impl Into<String>,
    ) -> Result<(ListId, Page), DomainError> {
        let request = Self {
            include_archived: false,
            ..self.clone()
        };
        request.open(key, account_id, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn list(n: u128, name: &str, archived: bool) -> ListId {
        ListId::new(AccountId::from(Uuid::from_u128(n)), name, archived)
    }

    #[test]
    fn a_sealed_position_opens_for_its_list() {
        let key = CursorKey::random();
        let l = list(1, "contacts", false);
        let p = Position::new("2026-11-23T09:30:00.000000000Z#0193-ñ@x");
        let cursor = key.seal(&l, &p);
        assert_eq!(key.open(&l, &cursor).unwrap(), p);
        assert!(cursor
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)));
    }

    #[test]
    fn another_list_account_filter_or_key_refuses_the_cursor() {
        let key = CursorKey::random();
        let l = list(1, "contacts", false);
        let cursor = key.seal(&l, &Position::new("a#b"));
        for other in [
            list(2, "contacts", false),
            list(1, "companies", false),
            list(1, "contacts", true),
        ] {
            let err = key.open(&other, &cursor).unwrap_err();
            assert_eq!(err.field(), Some("after"));
        }
        assert!(CursorKey::random().open(&l, &cursor).is_err());
        let same = CursorKey::from_secret(&[7; 32]).unwrap();
        let again = CursorKey::from_secret(&[7; 32]).unwrap();
        assert_eq!(
            again.open(&l, &same.seal(&l, &Position::new("x"))).unwrap(),
            Position::new("x")
        );
    }

    #[test]
    fn every_single_character_change_is_refused() {
        let key = CursorKey::random();
        let l = list(1, "users", true);
        let cursor = key.seal(&l, &Position::new("ana@northwind.example#1"));
        let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ";
        for i in 0..cursor.len() {
            for c in alphabet.chars() {
                let mut altered = cursor.clone();
                altered.replace_range(i..i + 1, &c.to_string());
                if altered != cursor {
                    assert!(key.open(&l, &altered).is_err(), "{altered}");
                }
            }
        }
        for junk in [
            "",
            ".",
            "abc",
            "abc.def",
            "%%%.%%%",
            &"A".repeat(5000),
            &cursor[1..],
        ] {
            assert!(key.open(&l, junk).is_err(), "{junk}");
        }
        assert!(key.open(&l, &format!("{cursor}A")).is_err());
    }

    #[test]
    fn short_secrets_are_refused() {
        assert_eq!(
            CursorKey::from_secret(b"short").unwrap_err(),
            WeakCursorSecret { got: 5 }
        );
    }

    #[test]
    fn a_request_opens_into_a_page() {
        let key = CursorKey::random();
        let l = list(1, "routers", false);
        let cursor = key.seal(&l, &Position::new("p"));
        let request = ListRequest {
            limit: 3,
            start: RequestedStart::After(cursor),
            include_archived: false,
        };
        assert_eq!(
            request.page(&key, &l).unwrap(),
            Page::after(3, Position::new("p"), false)
        );
        assert_eq!(
            ListRequest::default().page(&key, &l).unwrap(),
            Page::default()
        );
    }

    /// `archived=true` is part of an archivable list's identity, and ignored by a list
    /// without the filter (history, webhooks): its cursors open whatever `archived` says.
    #[test]
    fn a_list_without_the_archived_filter_ignores_it() {
        let key = CursorKey::random();
        let account = AccountId::from(Uuid::from_u128(1));
        let request = |archived: bool, start: RequestedStart| ListRequest {
            limit: 5,
            start,
            include_archived: archived,
        };
        let first = RequestedStart::Offset(0);
        let (archived_list, page) = request(true, first.clone())
            .open(&key, account, "users")
            .unwrap();
        assert_eq!(
            (archived_list.include_archived, page.include_archived),
            (true, true)
        );
        let cursor = key.seal(&archived_list, &Position::new("p"));
        let after = RequestedStart::After(cursor);
        let err = request(false, after.clone())
            .open(&key, account, "users")
            .unwrap_err();
        assert_eq!(err.field(), Some("after"));

        let (webhooks, page) = request(true, first)
            .open_unfiltered(&key, account, "webhooks")
            .unwrap();
        assert_eq!(
            (webhooks.include_archived, page.include_archived),
            (false, false)
        );
        let cursor = RequestedStart::After(key.seal(&webhooks, &Position::new("w")));
        for archived in [false, true] {
            let (_, page) = request(archived, cursor.clone())
                .open_unfiltered(&key, account, "webhooks")
                .unwrap();
            assert_eq!(page, Page::after(5, Position::new("w"), false));
        }
    }

    /// The key loaded on first use: concurrent first uses load it once, a failed load is not
    /// remembered (the next use tries again), and the loaded key is the one every later use gets.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_key_loaded_on_first_use_is_loaded_once_and_a_failure_is_tried_again() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let loads = Arc::new(AtomicUsize::new(0));
        let counted = loads.clone();
        let source = Arc::new(CursorKeySource::on_first_use(Box::new(move || {
            let attempt = counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                if attempt == 0 {
                    return Err("the secret store is down".to_string());
                }
                CursorKey::from_secret(b"0123456789abcdef0123456789abcdef-loaded")
                    .map_err(|e| e.to_string())
            })
        })));
        assert_eq!(
            loads.load(Ordering::SeqCst),
            0,
            "nothing loaded before a use"
        );
        let failed = source.key().await.expect_err("the first load fails");
        assert!(matches!(failed, DomainError::Internal(_)), "{failed:?}");
        let uses: Vec<_> = (0..8)
            .map(|_| {
                let source = source.clone();
                tokio::spawn(async move { source.key().await })
            })
            .collect();
        let mut keys = Vec::new();
        for used in uses {
            keys.push(used.await.unwrap().unwrap());
        }
        assert_eq!(
            loads.load(Ordering::SeqCst),
            2,
            "one failed load, then one load"
        );
        let l = list(1, "contacts", false);
        let p = Position::new("k");
        let expected = CursorKey::from_secret(b"0123456789abcdef0123456789abcdef-loaded").unwrap();
        for key in keys {
            assert_eq!(expected.open(&l, &key.seal(&l, &p)).unwrap(), p);
        }
        let ready = CursorKeySource::ready(expected.clone());
        let got = ready.key().await.unwrap();
        assert_eq!(got.open(&l, &expected.seal(&l, &p)).unwrap(), p);
    }
}
