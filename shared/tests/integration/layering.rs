//! Layering (handlers thin, the domain in `shared`): the domain services take parsed inputs and
//! never import the HTTP layer (`crate::api`). Routing history and stats (BEHAVIOR 8) in particular
//! parse their own typed values; the API decodes the query string. Files that sit on the boundary
//! by design (the bearer-token extractor and principal, the Idempotency-Key answers) are listed.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::path::Path;

/// Files outside `api/` allowed to name `crate::api`: they produce or consume HTTP answers.
const BOUNDARY: &[&str] = &[
    "auth/token/principal.rs",
    "auth/token/bearer.rs",
    "idempotency/mod.rs",
];

fn visit(dir: &Path, root: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            visit(&path, root, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if relative.starts_with("api/") || BOUNDARY.contains(&relative.as_str()) {
                continue;
            }
            if std::fs::read_to_string(&path)
                .unwrap()
                .contains("crate::api")
            {
                found.push(relative);
            }
        }
    }
}

#[test]
fn no_domain_module_imports_the_http_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    visit(&root, &root, &mut found);
    assert!(found.is_empty(), "these files import crate::api: {found:?}");
}
