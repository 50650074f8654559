//! Reading the workspace's Rust sources, shared by the source-shape tests (`function_length.rs`,
//! `module_graph.rs`): which files there are, and which items are test-only.

use std::path::{Path, PathBuf};

/// `#[cfg(test)]`, `#[cfg(all(test, ...))]` or `#[test]`: compiled only into test builds.
pub fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        if attr.path().is_ident("test") {
            return true;
        }
        if !attr.path().is_ident("cfg") {
            return false;
        }
        let Ok(list) = attr.meta.require_list() else {
            return false;
        };
        let tokens: Vec<String> = list
            .tokens
            .clone()
            .into_iter()
            .map(|t| t.to_string())
            .collect();
        match tokens.as_slice() {
            [one] => one == "test",
            [all, group] if all == "all" => group
                .trim_start_matches('(')
                .trim_end_matches(')')
                .split(',')
                .any(|arg| arg.trim() == "test"),
            _ => false,
        }
    })
}

/// The `.rs` files under `dir`, recursively, in a stable order.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())))
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}
