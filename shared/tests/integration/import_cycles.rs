//! No source file of the workspace imports another in a circle (the dependency circle
//! `store/mod.rs` -> `seed.rs` -> `records.rs` -> `store/mod.rs` must not come back).
//!
//! Every `.rs` file of every crate's `src/` is parsed with `syn`. A file depends on another when
//! it names an item defined there: through a `use` (`crate::`, `super::`, `self::` or a child
//! module), or through a qualified path in code (`crate::timefmt::rfc3339_millis(..)`). A path
//! that ends on a module file is followed through that file's `pub use` re-exports to the file
//! that defines the item, so `use crate::model::Member` depends on `model/member.rs`, not on the
//! whole `model/mod.rs`. Declaring a module (`mod tests;`) is not an import. The test fails with
//! every strongly connected group of files and the paths that tie them.

#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// One parsed source file and where it sits in its crate's module tree.
struct SourceFile {
    path: PathBuf,
    /// Module path without the crate root, e.g. `["store", "memory"]`.
    module: Vec<String>,
    /// Names of items defined at the top level of the file (fns, types, consts, inline modules).
    defined: BTreeSet<String>,
    /// `pub use` re-exports: exported name -> absolute path of what it names.
    reexports: BTreeMap<String, Vec<String>>,
    /// Child modules declared in this file (`mod x;` or `mod x { ... }`).
    children: BTreeSet<String>,
    /// Absolute paths this file names (use trees and qualified code paths).
    references: Vec<Vec<String>>,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The `src/` directory of every crate of the workspace.
fn crate_source_dirs() -> Vec<PathBuf> {
    let root = workspace_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members: Vec<String> = manifest
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("members"))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with(']'))
        .filter_map(|l| l.trim().trim_end_matches(',').strip_prefix('"'))
        .map(|l| l.trim_end_matches('"').to_string())
        .collect();
    assert!(!members.is_empty(), "no workspace members found");
    members.iter().map(|m| root.join(m).join("src")).collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Module path of a file relative to its crate's `src/` (`lib.rs`, `main.rs` and `bin/*.rs` are
/// crate roots of their own).
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?;
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let mut module: Vec<String> = parts.clone();
    let last = module.pop()?;
    let stem = last.trim_end_matches(".rs");
    if module.is_empty() && (stem == "lib" || stem == "main") {
        return Some(Vec::new());
    }
    if stem != "mod" {
        module.push(stem.to_string());
    }
    Some(module)
}

/// Flattens a use tree into full paths (segments as written, `self` leaves dropped).
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                out.push((prefix.clone(), prefix.last().cloned().unwrap_or_default()));
            } else {
                let mut full = prefix.clone();
                full.push(name.clone());
                out.push((full, name));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix.clone();
            full.push(r.ident.to_string());
            out.push((full, r.rename.to_string()));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), "*".to_string())),
        syn::UseTree::Group(g) => {
            for item in &g.items {
                use_paths(item, prefix, out);
            }
        }
    }
}

/// Collects every path in code that starts at `crate`, `super` or `self`, and every use tree,
/// each with the inline module it appears in (`mod tests { use super::*; }` is one level deeper
/// than its file).
struct CodePaths {
    /// Inline modules entered, innermost last.
    inline: Vec<String>,
    /// (inline modules, path) of qualified code paths.
    paths: Vec<(Vec<String>, Vec<String>)>,
    /// (inline modules, path) of use trees.
    uses: Vec<(Vec<String>, Vec<String>)>,
}

impl<'ast> Visit<'ast> for CodePaths {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 && matches!(segments[0].as_str(), "crate" | "super" | "self") {
            self.paths.push((self.inline.clone(), segments));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut paths);
        if !self.inline.is_empty() {
            for (path, _) in paths {
                self.uses.push((self.inline.clone(), path));
            }
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if item.content.is_some() {
            self.inline.push(item.ident.to_string());
            syn::visit::visit_item_mod(self, item);
            self.inline.pop();
        }
    }
}

/// Makes a path absolute (from the crate root, without `crate`) as seen from `module`.
fn absolute(
    module: &[String], children: &BTreeSet<String>, path: &[String],
) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some(first) if children.contains(first) => {}
        _ => return None, // another crate, the prelude, or a local name
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

fn parse_file(src: &Path, path: &Path) -> Option<SourceFile> {
    let module = module_of(src, path)?;
    let text = std::fs::read_to_string(path).unwrap();
    let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut defined = BTreeSet::new();
    let mut children = BTreeSet::new();
    let mut uses = Vec::new();
    let mut reexport_items = Vec::new();
    for item in &ast.items {
        let name = match item {
            syn::Item::Fn(i) => Some(i.sig.ident.to_string()),
            syn::Item::Struct(i) => Some(i.ident.to_string()),
            syn::Item::Enum(i) => Some(i.ident.to_string()),
            syn::Item::Trait(i) => Some(i.ident.to_string()),
            syn::Item::Type(i) => Some(i.ident.to_string()),
            syn::Item::Const(i) => Some(i.ident.to_string()),
            syn::Item::Static(i) => Some(i.ident.to_string()),
            syn::Item::Union(i) => Some(i.ident.to_string()),
            syn::Item::Macro(i) => i.ident.as_ref().map(|i| i.to_string()),
            syn::Item::Mod(m) => {
                children.insert(m.ident.to_string());
                None
            }
            syn::Item::Use(u) => {
                let mut paths = Vec::new();
                use_paths(&u.tree, &mut Vec::new(), &mut paths);
                if matches!(
                    u.vis,
                    syn::Visibility::Public(_) | syn::Visibility::Restricted(_)
                ) {
                    reexport_items.extend(paths.iter().cloned());
                }
                uses.extend(paths);
                None
            }
            _ => None,
        };
        defined.extend(name);
    }
    let mut references = Vec::new();
    for (path, _) in &uses {
        if let Some(abs) = absolute(&module, &children, path) {
            references.push(abs);
        }
    }
    let mut code = CodePaths {
        inline: Vec::new(),
        paths: Vec::new(),
        uses: Vec::new(),
    };
    code.visit_file(&ast);
    for (inline, path) in code.paths.into_iter().chain(code.uses) {
        let mut at = module.clone();
        at.extend(inline.iter().cloned());
        // Children of an inline module are not files; only the file's own children resolve.
        let none = BTreeSet::new();
        let kids = if inline.is_empty() { &children } else { &none };
        if let Some(abs) = absolute(&at, kids, &path) {
            references.push(abs);
        }
    }
    let mut reexports = BTreeMap::new();
    for (path, name) in reexport_items {
        if let Some(abs) = absolute(&module, &children, &path) {
            reexports.insert(name, abs);
        }
    }
    Some(SourceFile {
        path: path.to_path_buf(),
        module,
        defined,
        reexports,
        children,
        references,
    })
}

/// The file that defines what `path` (absolute) names, following re-exports.
fn resolve<'a>(files: &'a [SourceFile], path: &[String], depth: usize) -> Option<&'a SourceFile> {
    let (file, rest) = (0..=path.len()).rev().find_map(|n| {
        files
            .iter()
            .find(|f| f.module == path[..n])
            .map(|f| (f, &path[n..]))
    })?;
    let Some(name) = rest.first() else {
        return Some(file);
    };
    if depth < 8 && !file.defined.contains(name) && !file.children.contains(name) {
        if let Some(target) = file.reexports.get(name) {
            let mut next = target.clone();
            next.extend(rest[1..].iter().cloned());
            return resolve(files, &next, depth + 1).or(Some(file));
        }
    }
    Some(file)
}

/// Strongly connected components with more than one file (Tarjan).
fn cycles(edges: &BTreeMap<usize, BTreeSet<usize>>, n: usize) -> Vec<Vec<usize>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<usize, BTreeSet<usize>>,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.next);
            self.low[v] = self.next;
            self.next += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            for &w in self.edges.get(&v).into_iter().flatten() {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(i) if self.on_stack[w] => self.low[v] = self.low[v].min(i),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    t.out
}

#[test]
fn no_source_file_imports_another_in_a_circle() {
    let root = workspace_root();
    let mut report = Vec::new();
    let mut checked = 0;
    for src in crate_source_dirs() {
        let mut paths = Vec::new();
        rust_files(&src, &mut paths);
        paths.sort();
        let files: Vec<SourceFile> = paths.iter().filter_map(|p| parse_file(&src, p)).collect();
        checked += files.len();
        let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        let mut why: BTreeMap<(usize, usize), String> = BTreeMap::new();
        for (i, file) in files.iter().enumerate() {
            for reference in &file.references {
                let Some(target) = resolve(&files, reference, 0) else {
                    continue;
                };
                let j = files.iter().position(|f| std::ptr::eq(f, target)).unwrap();
                if i != j {
                    edges.entry(i).or_default().insert(j);
                    why.entry((i, j))
                        .or_insert_with(|| format!("crate::{}", reference.join("::")));
                }
            }
        }
        for component in cycles(&edges, files.len()) {
            let members: BTreeSet<usize> = component.iter().copied().collect();
            let mut lines = Vec::new();
            for &i in &component {
                for &j in edges.get(&i).into_iter().flatten() {
                    if members.contains(&j) {
                        lines.push(format!(
                            "  {} -> {} ({})",
                            files[i].path.strip_prefix(&root).unwrap().display(),
                            files[j].path.strip_prefix(&root).unwrap().display(),
                            why[&(i, j)]
                        ));
                    }
                }
            }
            lines.sort();
            report.push(lines.join("\n"));
        }
    }
    assert!(checked > 50, "only {checked} files found");
    assert!(
        report.is_empty(),
        "files that import each other in a circle:\n{}",
        report.join("\n\n")
    );
}
