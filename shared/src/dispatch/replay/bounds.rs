//! The bounds and defaults of one replay: how many entries it replays and reads, how many
//! records it reads at once and keeps projected, how many lookups it has in flight, the default
//! window and the samples the answer shows.

/// Most entries one replay replays (the oldest of the window; BEHAVIOR 16).
pub const MAX_REPLAYED: usize = 10_000;
/// Most entries one replay reads, as a multiple of the entries it may replay: skipped entries
/// (`sla`, early outcomes such as `The router is unpublished`, expired ones) count too. A replay
/// that reads this many before the window's end stops there and answers `truncated: true`.
pub const READ_FACTOR: usize = 3;
/// Entries read per page of the router's history and replayed together (their records are read
/// [`RECORDS_PER_READ`] at a time).
pub const REPLAY_WINDOW: usize = 500;
/// Bytes of whole records one read of a window's records may bring, at the record limit
/// (BEHAVIOR 12: a record's fields at most 300 KB of JSON): the records held at once between a
/// read and their projection.
pub const RECORD_READ_BYTES: usize = 16 << 20;
/// Records one read of a window's records asks for: as many as [`RECORD_READ_BYTES`] holds at
/// the record limit (53).
pub const RECORDS_PER_READ: usize = RECORD_READ_BYTES / crate::types::limits::MAX_RECORD_JSON_BYTES;
/// Bytes of record projections a replay keeps for records named again in later windows
/// (the fields the evaluation reads). Past it, a window's projections are dropped with the
/// window, and a record named again later is read again.
pub const MEMO_BYTES: usize = 16 << 20;
/// The default window: the 30 days before `to` (BEHAVIOR 16).
pub const DEFAULT_WINDOW_DAYS: i64 = 30;
/// Changed entries the answer shows (the first, oldest first).
pub const MAX_SAMPLES: usize = 20;
/// Company lookups (by domain) in flight at once.
pub const COMPANY_LOOKUPS_AT_ONCE: usize = 16;
