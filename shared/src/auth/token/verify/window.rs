//! The time checks of a token: its validity window, `iat`/`nbf` to `exp`, with the clock
//! leeway both ways.

/// Clock skew tolerated when checking `exp`, in seconds.
pub const CLOCK_LEEWAY_SECONDS: u64 = 30;

/// Whether a token expiring at `exp` is expired at `now` (seconds), [`CLOCK_LEEWAY_SECONDS`]
/// tolerated.
pub(super) fn expired(exp: i64, now: i64) -> bool {
    exp.saturating_add(leeway()) < now
}

/// Whether a token valid from `not_before` (the later of `nbf` and `iat`) is not yet valid at
/// `now` (seconds), [`CLOCK_LEEWAY_SECONDS`] tolerated.
pub(super) fn premature(not_before: i64, now: i64) -> bool {
    not_before > now.saturating_add(leeway())
}

fn leeway() -> i64 {
    i64::try_from(CLOCK_LEEWAY_SECONDS).unwrap_or(i64::MAX)
}
