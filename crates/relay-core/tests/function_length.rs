//! No function over about 120 lines (issue 23, item 5: modules a newcomer can navigate).
//!
//! The test parses every non-test source file of the workspace's crates (`crates/*/src`) and
//! measures each function's body, from its opening brace to its closing one. Test code is not
//! measured: files named `tests.rs` or `*_tests.rs`, anything under a `tests/` directory, and
//! every item marked `#[cfg(test)]` or `#[test]`. The crates' `tests/` and `benches/` (the bench
//! mains of relay-core) are outside `src` and so not walked.
//!
//! A function over the limit is split into named steps (see how `Engine::handle` calls
//! `on_event` between its common steps).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};

#[path = "support/source.rs"]
mod source;
use source::{rust_files, test_only};

/// The longest body allowed, in lines, braces included.
const MAX_LINES: usize = 120;

/// Functions allowed over the limit while they are being split: (file from the workspace root,
/// function name). Empty: every function is within the limit.
const BEING_SPLIT: &[(&str, &str)] = &[];

/// One measured function.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Measured {
    /// `fn` name, with its impl's or trait's type (`Engine::handle`).
    name: String,
    /// The bare name, as the allow-list names it.
    ident: String,
    /// The line of the opening brace.
    line: usize,
    /// Lines from the opening brace to the closing one.
    lines: usize,
}

/// Walks a parsed file's items, skipping test-only ones, and measures every function body.
#[derive(Default)]
struct Measure {
    /// The type of the impl or trait being walked.
    owner: Vec<String>,
    found: Vec<Measured>,
}

impl Measure {
    fn record(&mut self, ident: &syn::Ident, block: &syn::Block) {
        let open = block.brace_token.span.open().start().line;
        let close = block.brace_token.span.close().end().line;
        let name = match self.owner.last() {
            Some(owner) => format!("{owner}::{ident}"),
            None => ident.to_string(),
        };
        self.found.push(Measured {
            name,
            ident: ident.to_string(),
            line: open,
            lines: close.saturating_sub(open) + 1,
        });
    }
}

/// The last path segment of an impl's type (`Engine` for `impl Engine`, `Foo` for `&Foo<T>`).
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(|| "?".to_string(), |s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => "?".to_string(),
    }
}

impl<'ast> Visit<'ast> for Measure {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !test_only(&m.attrs) {
            visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if test_only(&i.attrs) {
            return;
        }
        self.owner.push(type_name(&i.self_ty));
        visit::visit_item_impl(self, i);
        self.owner.pop();
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        if test_only(&t.attrs) {
            return;
        }
        self.owner.push(t.ident.to_string());
        visit::visit_item_trait(self, t);
        self.owner.pop();
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(&f.attrs, &f.sig, Some(&f.block), |m| {
            visit::visit_item_fn(m, f)
        });
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.function(&f.attrs, &f.sig, Some(&f.block), |m| {
            visit::visit_impl_item_fn(m, f)
        });
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        self.function(&f.attrs, &f.sig, f.default.as_ref(), |m| {
            visit::visit_trait_item_fn(m, f)
        });
    }
}

impl Measure {
    /// A function (unless test-only): its body measured, then its own items (nested `fn`s),
    /// measured on their own, outside its type.
    fn function(
        &mut self,
        attrs: &[syn::Attribute],
        sig: &syn::Signature,
        body: Option<&syn::Block>,
        walk: impl FnOnce(&mut Self),
    ) {
        if test_only(attrs) {
            return;
        }
        if let Some(block) = body {
            self.record(&sig.ident, block);
        }
        let owner = std::mem::take(&mut self.owner);
        walk(self);
        self.owner = owner;
    }
}

/// Every function of one source text, measured.
fn measure(source: &str) -> syn::Result<Vec<Measured>> {
    let file = syn::parse_file(source)?;
    let mut m = Measure::default();
    m.visit_file(&file);
    Ok(m.found)
}

/// A file that holds only test code, by its name or its directory.
fn test_file(relative: &Path) -> bool {
    let name = relative
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || relative.components().any(|c| c.as_os_str() == "tests")
}

/// The workspace root (two levels above relay-core's manifest).
fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize()
        .unwrap_or_else(|e| panic!("cannot resolve the workspace root {}: {e}", root.display()))
}

#[test]
fn no_function_is_over_about_120_lines() {
    let root = workspace_root();
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("the workspace has a crates/ directory")
        .map(|e| e.expect("crates/ can be listed").path().join("src"))
        .filter(|src| src.is_dir())
        .collect();
    crates.sort();
    assert!(
        crates.len() >= 4,
        "expected relay-core, relay-io, relay-node and relay-cli"
    );

    let mut measured = 0usize;
    let mut too_long = String::new();
    let mut allowed_seen = Vec::new();
    for src in &crates {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        for path in files {
            let relative = path.strip_prefix(&root).unwrap_or(&path).to_path_buf();
            if test_file(relative.strip_prefix("crates").unwrap_or(&relative)) {
                continue;
            }
            let shown = relative.to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {shown}: {e}"));
            let fns = measure(&text).unwrap_or_else(|e| {
                panic!("{shown}:{}: does not parse: {e}", e.span().start().line)
            });
            measured += fns.len();
            for f in fns.into_iter().filter(|f| f.lines > MAX_LINES) {
                if BEING_SPLIT.contains(&(shown.as_str(), f.ident.as_str())) {
                    allowed_seen.push((shown.clone(), f.ident.clone()));
                    continue;
                }
                let _ = writeln!(
                    too_long,
                    "  {shown}:{} {} ({} lines)",
                    f.line, f.name, f.lines
                );
            }
        }
    }
    // The walk found the workspace's functions (a wrong root or a broken walk measures nothing).
    assert!(measured > 1000, "only {measured} functions measured");
    for (file, name) in BEING_SPLIT {
        if !allowed_seen.iter().any(|(f, n)| f == file && n == name) {
            eprintln!(
                "note: {file} `{name}` is no longer over {MAX_LINES} lines: drop it from BEING_SPLIT"
            );
        }
    }
    assert!(
        too_long.is_empty(),
        "functions over {MAX_LINES} lines (split each into named steps, issue 23 item 5):\n{too_long}"
    );
}

/// The measure itself: a body's lines from brace to brace, test-only items skipped, methods named
/// with their type, nested functions measured on their own.
#[test]
fn the_measure_counts_body_lines_and_skips_test_code() {
    let body = |n: usize| "    let _ = 1;\n".repeat(n);
    let source = format!(
        "fn short() {{\n{}}}\n\
         struct S;\n\
         impl S {{\n    fn long(&self) {{\n{}    }}\n}}\n\
         trait T {{\n    fn provided() {{\n{}    }}\n    fn required();\n}}\n\
         fn outer() {{\n    fn inner() {{\n{}    }}\n}}\n\
         #[cfg(test)]\nmod tests {{\n    fn hidden() {{\n{}    }}\n}}\n\
         #[cfg(all(test, unix))]\nfn hidden_too() {{\n{}}}\n\
         #[test]\nfn a_test() {{\n{}}}\n\
         #[cfg(not(test))]\nfn production() {{\n{}}}\n",
        body(3),
        body(119),
        body(2),
        body(5),
        body(200),
        body(200),
        body(200),
        body(1),
    );
    let found: Vec<(String, usize)> = measure(&source)
        .expect("the sample parses")
        .into_iter()
        .map(|m| (m.name, m.lines))
        .collect();
    assert_eq!(
        found,
        vec![
            ("short".to_string(), 5),
            ("S::long".to_string(), 121),
            ("T::provided".to_string(), 4),
            ("outer".to_string(), 9),
            ("inner".to_string(), 7),
            ("production".to_string(), 3),
        ]
    );
    assert!(test_file(Path::new("relay-core/src/engine/tests.rs")));
    assert!(test_file(Path::new("relay-core/src/entry/skim_tests.rs")));
    assert!(test_file(Path::new("relay-io/src/tests/helpers.rs")));
    assert!(!test_file(Path::new("relay-core/src/engine/events.rs")));
}

/// The longest module allowed, in lines of non-test code: every line of the file but those of its
/// test-only items (`#[cfg(test)]` or `#[test]`, their attributes included), wherever they are.
const MAX_MODULE_LINES: usize = 800;

/// The first and last line of a test-only top-level item (its attributes included); `None` for
/// an item that is not test-only.
fn test_item_lines(item: &syn::Item) -> Option<(usize, usize)> {
    use syn::Item;
    let (attrs, end) = match item {
        Item::Mod(m) => (
            &m.attrs,
            m.content.as_ref().map_or_else(
                || m.semi.as_ref().map_or(0, |s| s.spans[0].end().line),
                |(brace, _)| brace.span.close().end().line,
            ),
        ),
        Item::Fn(f) => (&f.attrs, f.block.brace_token.span.close().end().line),
        Item::Impl(i) => (&i.attrs, i.brace_token.span.close().end().line),
        Item::Use(u) => (&u.attrs, u.semi_token.spans[0].end().line),
        Item::Const(c) => (&c.attrs, c.semi_token.spans[0].end().line),
        Item::Static(c) => (&c.attrs, c.semi_token.spans[0].end().line),
        Item::Struct(st) => (
            &st.attrs,
            match &st.fields {
                syn::Fields::Named(f) => f.brace_token.span.close().end().line,
                _ => st.semi_token.as_ref().map_or(0, |t| t.spans[0].end().line),
            },
        ),
        Item::Enum(e) => (&e.attrs, e.brace_token.span.close().end().line),
        _ => return None,
    };
    if !test_only(attrs) {
        return None;
    }
    let start = attrs.first()?.pound_token.spans[0].start().line;
    Some((start, end.max(start)))
}

/// Lines of non-test code in `source` (see [`MAX_MODULE_LINES`]).
fn non_test_lines(source: &str) -> syn::Result<usize> {
    let file = syn::parse_file(source)?;
    let test: usize = file
        .items
        .iter()
        .filter_map(test_item_lines)
        .map(|(start, end)| end - start + 1)
        .sum();
    Ok(source.lines().count().saturating_sub(test))
}

#[test]
fn the_module_measure_counts_every_line_but_test_items() {
    let source = "fn a() {}\n\
        #[cfg(test)]\nmod tests {\n    fn t() {}\n}\n\
        fn b() {}\n\
        #[test]\nfn c() {\n}\n\
        #[cfg(test)]\nuse std::fmt;\n\
        fn d() {}\n";
    // a, b, d: three lines of eleven; the test module (4), the test fn (3) and the use (2) go.
    assert_eq!(non_test_lines(source).expect("the sample parses"), 3);
}

#[test]
fn no_module_is_over_800_lines_of_non_test_code() {
    let root = workspace_root();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).expect("the workspace has crates/") {
        let src = krate.expect("crates/ can be listed").path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    assert!(files.len() > 50, "only {} files found", files.len());
    let mut too_long = String::new();
    for path in files {
        let relative = path.strip_prefix(&root).unwrap_or(&path).to_path_buf();
        if test_file(relative.strip_prefix("crates").unwrap_or(&relative)) {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", relative.display()));
        let lines = non_test_lines(&text)
            .unwrap_or_else(|e| panic!("cannot parse {}: {e}", relative.display()));
        if lines > MAX_MODULE_LINES {
            let _ = writeln!(too_long, "  {} ({lines} lines)", relative.display());
        }
    }
    assert!(
        too_long.is_empty(),
        "modules over {MAX_MODULE_LINES} lines of non-test code (split them by responsibility):\n{too_long}"
    );
}
