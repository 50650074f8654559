//! No circle among relay-core's modules (issue 35, item 6).
//!
//! The test parses every non-test source file under `crates/relay-core/src` and collects the
//! paths each one names (`crate::…`, `super::…`, `self::…`, a child module's name, in `use`
//! items, types and expressions alike; test-only items and test files are skipped). Each path is
//! resolved to the module that defines the item, following `use` re-exports (named and glob) one
//! module at a time, so `crate::engine::Event` counts as a reference to `engine::wire`, where
//! `Event` lives.
//!
//! A module is a file under `src/` (`a.rs` with its directory `a/`, or `a/mod.rs`), down to the
//! second level: the top-level modules and their direct submodules (`engine::wire`,
//! `render::handoff`, `history::store`) are each a node, every deeper file is folded into its
//! ancestor at the second level (`engine/door/context.rs` is `engine::door`). An edge goes from
//! `a` to `b` when a file of `a` names an item of `b`, except between a module and its own
//! submodule: a parent composes its children, and they add to its types (`super::Engine`).
//!
//! A circle fails the test, named with one reference (file and line) per edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};

#[path = "support/source.rs"]
mod source;
use source::{rust_files, test_only};

/// A module's path below the crate root (`["engine", "wire"]`); the root is empty.
type ModPath = Vec<String>;

/// A file that holds only test code, by its name.
fn test_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name == "tests.rs" || name.ends_with("_tests.rs")
}

/// What one module file defines and imports.
#[derive(Debug, Default)]
struct ModuleFacts {
    /// Items defined here (functions, types, constants, macros, ...).
    defined: BTreeSet<String>,
    /// Child modules declared here (`mod x;`), including test-only ones (never referenced from
    /// non-test code, so they add no edge).
    children: BTreeSet<String>,
    /// Named imports: the name they bind → the path they name (unresolved, as written).
    imports: BTreeMap<String, Vec<String>>,
    /// Glob imports: the paths before `::*`.
    globs: Vec<Vec<String>>,
}

/// One path named by a file, with the line it is named on.
#[derive(Debug, Clone)]
struct Named {
    segments: Vec<String>,
    line: usize,
}

/// Collects a file's facts and every path it names, skipping test-only items.
#[derive(Default)]
struct Collect {
    facts: ModuleFacts,
    named: Vec<Named>,
    /// Depth of inline `mod x { ... }` blocks: their contents are not this module's own items.
    inline_depth: usize,
}

/// Flattens a `use` tree into (bound name, full path) pairs; a glob's path ends with `*`.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut path = prefix.clone();
            if name != "self" {
                path.push(name.clone());
            }
            let bound = if name == "self" {
                prefix.last().cloned().unwrap_or_default()
            } else {
                name
            };
            out.push((bound, path));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push((r.rename.to_string(), path));
        }
        syn::UseTree::Glob(_) => {
            let mut path = prefix.clone();
            path.push("*".to_string());
            out.push(("*".to_string(), path));
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

impl Collect {
    fn define(&mut self, ident: &syn::Ident) {
        if self.inline_depth == 0 {
            self.facts.defined.insert(ident.to_string());
        }
    }
}

impl<'ast> Visit<'ast> for Collect {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        use syn::Item;
        // Each item's attributes and the name it defines (an inline module's contents are not
        // this module's own items; a `mod x;` is a child file).
        let (attrs, defines) = match item {
            Item::Const(i) => (&i.attrs, Some(&i.ident)),
            Item::Enum(i) => (&i.attrs, Some(&i.ident)),
            Item::Fn(i) => (&i.attrs, Some(&i.sig.ident)),
            Item::Impl(i) => (&i.attrs, None),
            Item::Macro(i) => (&i.attrs, i.ident.as_ref()),
            Item::Mod(i) => (&i.attrs, i.content.as_ref().map(|_| &i.ident)),
            Item::Static(i) => (&i.attrs, Some(&i.ident)),
            Item::Struct(i) => (&i.attrs, Some(&i.ident)),
            Item::Trait(i) => (&i.attrs, Some(&i.ident)),
            Item::Type(i) => (&i.attrs, Some(&i.ident)),
            Item::Union(i) => (&i.attrs, Some(&i.ident)),
            Item::Use(i) => (&i.attrs, None),
            _ => return visit::visit_item(self, item),
        };
        if let Item::Mod(m) = item {
            if m.content.is_none() && self.inline_depth == 0 {
                self.facts.children.insert(m.ident.to_string());
            }
        }
        if test_only(attrs) {
            return;
        }
        if let Some(ident) = defines {
            self.define(ident);
        }
        let inline = matches!(item, Item::Mod(m) if m.content.is_some());
        self.inline_depth += usize::from(inline);
        visit::visit_item(self, item);
        self.inline_depth -= usize::from(inline);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let line = u.use_token.span.start().line;
        let mut out = Vec::new();
        use_paths(&u.tree, &mut Vec::new(), &mut out);
        for (bound, path) in out {
            if self.inline_depth == 0 {
                if bound == "*" {
                    let mut glob = path.clone();
                    glob.pop();
                    self.facts.globs.push(glob);
                } else {
                    self.facts.imports.insert(bound, path.clone());
                }
            }
            let mut segments = path;
            if segments.last().is_some_and(|s| s == "*") {
                segments.pop();
            }
            self.named.push(Named { segments, line });
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.segments.len() > 1 {
            let line = p
                .segments
                .first()
                .map_or(0, |s| s.ident.span().start().line);
            self.named.push(Named {
                segments: p.segments.iter().map(|s| s.ident.to_string()).collect(),
                line,
            });
        }
        visit::visit_path(self, p);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !test_only(&f.attrs) {
            visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_field(&mut self, f: &'ast syn::Field) {
        if !test_only(&f.attrs) {
            visit::visit_field(self, f);
        }
    }
}

/// One parsed module file.
struct Module {
    /// The file, relative to the crate (for messages).
    shown: String,
    facts: ModuleFacts,
    named: Vec<Named>,
}

/// The crate's module tree: every module's path → its parsed file.
struct Crate {
    modules: BTreeMap<ModPath, Module>,
}

impl Crate {
    /// Reads every source file under `src` (the crate root's `lib.rs` is the empty path).
    fn read(src: &Path) -> Crate {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let mut modules = BTreeMap::new();
        for path in files {
            let relative = path.strip_prefix(src).unwrap_or(&path);
            if test_file(relative) {
                continue;
            }
            let mut segments: ModPath = relative
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            let file = segments.pop().unwrap_or_default();
            let stem = file.trim_end_matches(".rs");
            if !(stem == "mod" || (segments.is_empty() && stem == "lib")) {
                segments.push(stem.to_string());
            }
            let shown = format!("src/{}", relative.to_string_lossy().replace('\\', "/"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {shown}: {e}"));
            let module = Crate::parse(&shown, &text);
            modules.insert(segments, module);
        }
        Crate { modules }
    }

    fn parse(shown: &str, text: &str) -> Module {
        let file = syn::parse_file(text).unwrap_or_else(|e| panic!("cannot parse {shown}: {e}"));
        let mut collect = Collect::default();
        collect.visit_file(&file);
        Module {
            shown: shown.to_string(),
            facts: collect.facts,
            named: collect.named,
        }
    }

    /// The absolute form of a path named in module `at`, or `None` for a path that is not the
    /// crate's (another crate's, a local variable's, a generic's).
    fn absolute(&self, at: &ModPath, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let mut base = at.clone();
        let mut rest = segments;
        match first.as_str() {
            "crate" => {
                base.clear();
                rest = &segments[1..];
            }
            "self" => rest = &segments[1..],
            "super" => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            _ => {
                let facts = &self.modules.get(at)?.facts;
                if facts.children.contains(first) {
                    // A child module named from its parent: `wire::Event` in engine/mod.rs.
                } else if let Some(imported) = facts.imports.get(first) {
                    // `Foo::new` where `use crate::x::Foo`: the import's own path.
                    let mut path = self.absolute(at, imported)?;
                    path.extend(segments[1..].iter().cloned());
                    return Some(path);
                } else {
                    return None;
                }
            }
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module that defines the item at absolute `path` (the deepest module on the path, then
    /// through that module's imports), `depth` bounding re-export chains.
    fn owner(&self, path: &[String], depth: usize) -> Option<ModPath> {
        let mut module: ModPath = Vec::new();
        let mut i = 0;
        while i < path.len() && self.modules.contains_key(&path[..=i]) {
            module = path[..=i].to_vec();
            i += 1;
        }
        let Some(item) = path.get(i) else {
            return Some(module);
        };
        if depth == 0 {
            return Some(module);
        }
        let facts = &self.modules.get(&module)?.facts;
        if facts.defined.contains(item) {
            return Some(module);
        }
        if let Some(imported) = facts.imports.get(item) {
            let target = self.absolute(&module, imported)?;
            return self.owner(&target, depth - 1);
        }
        for glob in &facts.globs {
            let Some(mut target) = self.absolute(&module, glob) else {
                continue;
            };
            let Some(from) = self.owner(&target, depth - 1) else {
                continue;
            };
            if from == target {
                target.push(item.clone());
                let found = self.owner(&target, depth - 1);
                if found.as_ref().is_some_and(|f| {
                    f != &from
                        || self
                            .modules
                            .get(f)
                            .is_some_and(|m| m.facts.defined.contains(item))
                }) {
                    return found;
                }
            }
        }
        Some(module)
    }

    /// Every reference between two different modules: (from, to, where).
    fn references(&self) -> Vec<(ModPath, ModPath, String)> {
        let mut out = Vec::new();
        for (at, module) in &self.modules {
            for named in &module.named {
                let Some(path) = self.absolute(at, &named.segments) else {
                    continue;
                };
                let Some(to) = self.owner(&path, 8) else {
                    continue;
                };
                if &to != at {
                    out.push((at.clone(), to, format!("{}:{}", module.shown, named.line)));
                }
            }
        }
        out
    }
}

/// A directed graph between the children of one parent, each edge with one reference as witness.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// How deep the tree's modules stay apart: a module below this depth is folded into its
/// ancestor at this depth (`engine/door/context.rs` is `engine::door`).
const DEPTH: usize = 2;

/// The graph between the modules down to [`DEPTH`]: an edge from `a` to `b` when a file folded
/// into `a` names an item of `b`, unless one is the other's ancestor (a parent composes its
/// children, and they add to its types: `super::Engine`).
fn module_graph(references: &[(ModPath, ModPath, String)]) -> Graph {
    let mut graph = Graph::new();
    for (from, to, at) in references {
        let from = &from[..from.len().min(DEPTH)];
        let to = &to[..to.len().min(DEPTH)];
        if from.starts_with(to) || to.starts_with(from) {
            continue;
        }
        graph
            .entry(from.join("::"))
            .or_default()
            .entry(to.join("::"))
            .or_insert_with(|| at.clone());
    }
    graph
}

/// Every circle of a graph, one per strongly connected component of more than one node, as the
/// nodes of one cycle through it (Tarjan's components, then a breadth-first path back).
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        components: Vec<Vec<&'g str>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, v: &'g str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    let mut out = Vec::new();
    for component in t.components.into_iter().filter(|c| c.len() > 1) {
        let members: BTreeSet<&str> = component.iter().copied().collect();
        let start = *members.iter().next().unwrap_or(&"");
        // The shortest way from `start` back to itself inside the component.
        let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        'search: while let Some(v) = queue.pop_front() {
            for w in graph.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !members.contains(w) {
                    continue;
                }
                if w == start {
                    previous.insert(start, v);
                    break 'search;
                }
                if !previous.contains_key(w) {
                    previous.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        let mut cycle = vec![start.to_string()];
        let mut v = previous.get(start).copied().unwrap_or(start);
        while v != start {
            cycle.push(v.to_string());
            v = previous.get(v).copied().unwrap_or(start);
        }
        cycle.push(start.to_string());
        cycle.reverse();
        let mut all: Vec<&str> = component;
        all.sort_unstable();
        let mut named = cycle;
        if all.len() + 1 > named.len() {
            named.push(format!("(all {}: {})", all.len(), all.join(", ")));
        }
        out.push(named);
    }
    out
}

/// The circles of a graph, named with a witness reference for each edge.
fn report(graph: &Graph) -> String {
    let mut text = String::new();
    for cycle in circles(graph) {
        let nodes: Vec<&String> = cycle.iter().filter(|n| !n.starts_with('(')).collect();
        let _ = writeln!(
            text,
            "  {}",
            cycle
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(" → ")
        );
        for pair in nodes.windows(2) {
            if let Some(at) = graph.get(pair[0]).and_then(|e| e.get(pair[1])) {
                let _ = writeln!(text, "      {} → {}: {at}", pair[0], pair[1]);
            }
        }
    }
    text
}

fn crate_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_circle_among_relay_core_modules() {
    let krate = Crate::read(&crate_src());
    assert!(
        krate.modules.len() > 50,
        "only {} modules read",
        krate.modules.len()
    );
    let references = krate.references();
    let graph = module_graph(&references);
    // The walk saw the edges (a broken resolution sees few).
    let edges: usize = graph.values().map(BTreeMap::len).sum();
    assert!(edges > 100, "only {edges} edges between modules");
    assert!(
        graph.keys().any(|m| m.starts_with("engine::")),
        "no edge from engine's submodules"
    );
    let circles = report(&graph);
    assert!(
        circles.is_empty(),
        "circles among relay-core's modules (move the shared items into the lower module):\n{circles}"
    );
}

/// The resolution and the check on a small crate: a re-export is followed to its owner, a child
/// naming its parent adds no edge, and a circle is named.
#[test]
fn the_graph_follows_re_exports_and_names_a_circle() {
    let mut modules = BTreeMap::new();
    let files: &[(&[&str], &str)] = &[
        (&[], "pub mod a; pub mod b; pub mod c;"),
        (
            &["a"],
            "pub mod wire; pub use wire::*; pub struct Engine; fn f(_: crate::b::B) {}",
        ),
        (
            &["a", "wire"],
            "pub struct Event; fn g(_: super::Engine) {}",
        ),
        (
            &["b"],
            "use crate::a::Event; pub struct B(Event, crate::a::Engine);",
        ),
        (
            &["c"],
            "pub struct C; #[cfg(test)] mod tests { use crate::a::Engine; }",
        ),
    ];
    for (path, text) in files {
        let path: ModPath = path.iter().map(|s| s.to_string()).collect();
        modules.insert(path.clone(), Crate::parse(&format!("{path:?}"), text));
    }
    let krate = Crate { modules };
    let references = krate.references();
    let edges: BTreeSet<(String, String)> = references
        .iter()
        .map(|(f, t, _)| (f.join("::"), t.join("::")))
        .collect();
    let expected: BTreeSet<(String, String)> = [
        ("a", "b"),
        ("a", "a::wire"),
        ("b", "a"),
        ("b", "a::wire"),
        ("a::wire", "a"),
    ]
    .iter()
    .map(|(f, t)| (f.to_string(), t.to_string()))
    .collect();
    assert_eq!(edges, expected);
    let text = report(&module_graph(&references));
    assert!(text.starts_with("  a → b → a\n"), "{text}");
    assert!(text.contains("a → b: [\"a\"]:1"), "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
}
