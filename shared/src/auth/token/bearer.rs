//! The `Authorization: Bearer` header (RFC 6750 section 2.1).

use super::principal::AuthError;
use crate::error::DomainError;

/// The longest bearer token read, in bytes. Issued tokens are about 600 bytes (a few hundred
/// more with every scope and a long client id); anything this long was not issued here, and is
/// refused before it is base64-decoded or parsed (an 8 KB token is 401).
pub const MAX_TOKEN_BYTES: usize = 4096;

/// The token of an `Authorization: Bearer <token>` header value (RFC 6750 section 2.1; the
/// scheme is case-insensitive per RFC 9110 section 11.1).
///
/// Errors (401): `Unauthorized: missing bearer token` when the header is absent;
/// `Unauthorized: invalid token` for another scheme, an empty token, a token with spaces or
/// control characters, or one longer than [`MAX_TOKEN_BYTES`].
pub fn bearer_token(authorization_header: Option<&str>) -> Result<&str, DomainError> {
    let value = authorization_header.ok_or_else(|| {
        DomainError::Unauthorized("Unauthorized: missing bearer token".to_owned())
    })?;
    let invalid = || DomainError::from(AuthError::InvalidToken);
    let value = value.trim();
    let (scheme, token) = value.split_once([' ', '\t']).ok_or_else(invalid)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer")
        || token.is_empty()
        || token.len() > MAX_TOKEN_BYTES
        // A space or control character (RFC 6750's b64token has neither). Every byte is looked
        // at, without stopping at the first: one comparison per byte, which the compiler checks
        // many bytes at a time, and a token is about 500 bytes on every request.
        || token.bytes().fold(false, |bad, b| bad | (b <= b' ' || b == 0x7f))
    {
        return Err(invalid());
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApiError;

    #[test]
    fn bearer_headers_yield_their_token_or_a_401() {
        let missing = "Unauthorized: missing bearer token";
        let invalid = "Unauthorized: invalid token";
        let longest = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES));
        let too_long = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
        let cases: [(Option<&str>, Result<&str, &str>); 15] = [
            (Some(&longest), Ok(&longest[7..])),
            (Some(&too_long), Err(invalid)),
            (Some("Bearer abc.def.ghi"), Ok("abc.def.ghi")),
            (Some("bearer abc"), Ok("abc")),
            (Some("BEARER   abc  "), Ok("abc")),
            (None, Err(missing)),
            (Some(""), Err(invalid)),
            (Some("Bearer"), Err(invalid)),
            (Some("Bearer   "), Err(invalid)),
            (Some("Basic YTpi"), Err(invalid)),
            (Some("Bearer a b"), Err(invalid)),
            (Some("Bearer a\tb"), Err(invalid)),
            (Some("Bearer a\u{1}b"), Err(invalid)),
            (Some("Bearer a\u{7f}b"), Err(invalid)),
            (Some("Token abc"), Err(invalid)),
        ];
        for (header, expected) in cases {
            let got = bearer_token(header).map_err(|e| {
                let text = e.to_string();
                assert_eq!(ApiError::from(e).status(), http::StatusCode::UNAUTHORIZED);
                text
            });
            assert_eq!(got, expected.map_err(str::to_owned), "{header:?}");
        }
    }
}
