//! `jwks`: prints the JWK Set (public keys only) of P-256 signing keys, on one line: the value of
//! `JWT_PUBLIC_JWKS` for the verifying functions and of the template's `JwtPublicJwks` parameter.
//!
//! ```sh
//! cargo run -q -p local-server --bin jwks                      # the development key
//! cargo run -q -p local-server --bin jwks -- new.pem [old.pem]  # several keys while rotating
//! ```

use anyhow::Context;
use shared::auth::{SigningKey, DEV_SIGNING_KEY_PEM};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("jwks: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.iter().any(|p| p == "-h" || p == "--help") {
        println!("usage: jwks [PRIVATE-KEY.pem ...]   (default: the development key)");
        return Ok(());
    }
    let keys = if paths.is_empty() {
        vec![SigningKey::from_pem(DEV_SIGNING_KEY_PEM)?]
    } else {
        paths
            .iter()
            .map(|path| {
                let pem =
                    std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?;
                SigningKey::from_pem(&pem).with_context(|| path.clone())
            })
            .collect::<anyhow::Result<_>>()?
    };
    let jwks = serde_json::json!({
        "keys": keys.iter().map(SigningKey::public_jwk).collect::<Vec<_>>(),
    });
    println!("{jwks}");
    Ok(())
}
