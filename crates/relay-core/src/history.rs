//! Durable session history: an incremental mirror of the current Pi branch, split into context
//! windows at every compaction, and the four `history_*` tools the model uses to browse it.
//!
//! Layout (chosen so that per-request work never depends on session length):
//! - all item text lives in ONE contiguous arena `String`; each item keeps `(start, end)` byte
//!   offsets into it plus compact metadata, so items are contiguous and ordered root→leaf;
//! - entry ids map to their position in O(1) (`contains`, `read_item`);
//! - windows are a small vector of `(id, first item)`; a window's items are a contiguous range;
//! - per-role, per-tool-name and per-tool-namespace posting lists (item indices, ascending) let
//!   filtered listings skip non-matching items;
//! - search runs `memchr::memmem` over the arena (or the window's slice of it) and maps a hit
//!   back to its item by binary search;
//! - navigation to an ancestor pops entries, items, postings and windows from the end.

use rustc_hash::FxHashMap as HashMap;

use memchr::memmem;
use serde_json::{json, Map, Value};

use crate::entry::{Entry, EntryKind};
use crate::ToolOutput;

/// `history_list_items` returns at most this many items unless `limit` says otherwise.
pub const DEFAULT_LIST_ITEMS_LIMIT: usize = 50;
/// `history_search_contents` returns at most this many items unless `limit` says otherwise.
pub const DEFAULT_SEARCH_LIMIT: usize = 20;
/// `history_list_items` shows at most this many characters of each item by default.
pub const DEFAULT_MAX_CHARS_PER_ITEM: usize = 1200;
/// `history_read_item` returns at most this many characters by default.
pub const DEFAULT_READ_LIMIT_CHARS: usize = 20_000;
/// Characters of context shown on each side of a search match.
pub const SNIPPET_CONTEXT_CHARS: usize = 80;

const NONE: u32 = u32::MAX;

/// The role of a history item, as the tools show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User = 0,
    Assistant = 1,
    Tool = 2,
    System = 3,
}

const ROLE_NAMES: [&str; 4] = ["user", "assistant", "tool", "system"];

impl Role {
    fn as_str(self) -> &'static str {
        ROLE_NAMES[self as usize]
    }

    fn parse(s: &str) -> Option<Role> {
        match s {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" => Some(Role::Tool),
            "system" => Some(Role::System),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
struct ItemMeta {
    start: usize,
    end: usize,
    chars: usize,
    entry: u32,
    window: u32,
    tool: u32,
    namespace: u32,
    role: Role,
}

#[derive(Debug, Clone)]
struct EntryRec {
    /// The entry's id is `ids[id_start..id_end]` (all ids share one string, root first).
    id_start: u32,
    id_end: u32,
    item: u32,
    opens_window: bool,
}

#[derive(Debug, Clone)]
struct WindowRec {
    id: String,
    first_item: usize,
    created_at: Option<String>,
}

/// Interned strings (tool names or namespaces) with the ascending item indices carrying each.
#[derive(Debug, Clone, Default)]
struct Interner {
    names: Vec<String>,
    ids: HashMap<String, u32>,
    postings: Vec<Vec<u32>>,
}

impl Interner {
    fn add(&mut self, name: &str, item: u32) -> u32 {
        let id = match self.ids.get(name) {
            Some(&id) => id,
            None => {
                let id = self.names.len() as u32;
                self.names.push(name.to_string());
                self.ids.insert(name.to_string(), id);
                self.postings.push(Vec::new());
                id
            }
        };
        self.postings[id as usize].push(item);
        id
    }

    fn heap_bytes(&self) -> usize {
        let names: usize = self.names.iter().map(|n| 2 * n.capacity() + 32).sum();
        let postings: usize = self.postings.iter().map(|p| p.capacity() * 4 + 24).sum();
        names + postings + self.ids.capacity() * 40
    }
}

/// A resolved filter: an item index range (a window, or everything) and optional exact matches.
#[derive(Debug, Clone, Copy)]
struct Filter {
    lo: usize,
    hi: usize,
    role: Option<Role>,
    tool: Option<u32>,
    namespace: Option<u32>,
    /// A filter value that no item carries: nothing can match.
    impossible: bool,
}

/// The incremental mirror of one session branch and the history tools over it.
#[derive(Debug, Clone)]
pub struct History {
    session_id: String,
    arena: String,
    items: Vec<ItemMeta>,
    entries: Vec<EntryRec>,
    /// Every entry id, one after the other (see [`EntryRec`]).
    ids: String,
    /// Positions in `entries` with their id's [`IdKey`], found by its hash.
    entry_index: hashbrown::HashTable<(u32, IdKey)>,
    windows: Vec<WindowRec>,
    window_index: HashMap<String, u32>,
    tools: Interner,
    namespaces: Interner,
    roles: [Vec<u32>; 4],
}

impl History {
    /// An empty history for the session `session_id`, holding only the root window.
    pub fn new(session_id: &str) -> Self {
        let root = format!("pcw:{session_id}:root");
        let mut window_index = HashMap::default();
        window_index.insert(root.clone(), 0);
        History {
            session_id: session_id.to_string(),
            arena: String::new(),
            items: Vec::new(),
            entries: Vec::new(),
            ids: String::new(),
            entry_index: hashbrown::HashTable::new(),
            windows: vec![WindowRec {
                id: root,
                first_item: 0,
                created_at: None,
            }],
            window_index,
            tools: Interner::default(),
            namespaces: Interner::default(),
            roles: Default::default(),
        }
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Appends the next entry of the branch (root→leaf order). An entry already present is
    /// ignored. Cost: proportional to the entry's text.
    pub fn push(&mut self, entry: &Entry) {
        let key = IdKey::of(&entry.id);
        if self.position(key, &entry.id).is_some() {
            return;
        }
        if self.entries.is_empty() && self.windows.len() == 1 {
            self.windows[0].created_at = Some(entry.timestamp.clone());
        }
        let pos = self.entries.len() as u32;
        let mut opens_window = false;
        let mut item = NONE;
        match &entry.kind {
            EntryKind::Compaction {
                summary, details, ..
            } => {
                let id = self.compaction_window_id(&entry.id, details);
                let index = self.windows.len() as u32;
                self.window_index.insert(id.clone(), index);
                self.windows.push(WindowRec {
                    id,
                    first_item: self.items.len(),
                    created_at: Some(entry.timestamp.clone()),
                });
                opens_window = true;
                item = self.add_item(pos, Role::System, summary, None);
            }
            EntryKind::Message(m) => {
                let role = match m.role.as_str() {
                    "user" | "custom" => Some(Role::User),
                    "assistant" => Some(Role::Assistant),
                    "toolResult" | "bashExecution" => Some(Role::Tool),
                    "compactionSummary" | "branchSummary" => Some(Role::System),
                    _ => None,
                };
                if let Some(role) = role {
                    let tool = match m.role.as_str() {
                        "bashExecution" => Some("bash"),
                        "toolResult" => m.tool_name.as_deref(),
                        _ => None,
                    };
                    item = self.add_item(pos, role, &m.text, tool);
                }
            }
            EntryKind::CustomMessage { text, .. } => {
                item = self.add_item(pos, Role::User, text, None);
            }
            EntryKind::BranchSummary { summary, .. } => {
                item = self.add_item(pos, Role::System, summary, None);
            }
            _ => {}
        }
        let id_start = self.ids.len() as u32;
        self.ids.push_str(&entry.id);
        self.entry_index
            .insert_unique(key.hash(), (pos, key), |(_, k)| k.hash());
        self.entries.push(EntryRec {
            id_start,
            id_end: self.ids.len() as u32,
            item,
            opens_window,
        });
    }

    /// The position of the entry `id` (whose key is `key`), if it was pushed.
    fn position(&self, key: IdKey, id: &str) -> Option<u32> {
        self.entry_index
            .find(key.hash(), |&(p, k)| {
                k == key && entry_id(&self.entries, &self.ids, p) == id
            })
            .map(|&(p, _)| p)
    }

    /// The id of the entry at `pos`.
    fn id_at(&self, pos: usize) -> &str {
        entry_id(&self.entries, &self.ids, pos as u32)
    }

    fn compaction_window_id(&self, entry_id: &str, details: &Value) -> String {
        if details.get("relay").and_then(Value::as_str) == Some("window") {
            if let Some(id) = details.get("windowId").and_then(Value::as_str) {
                return id.to_string();
            }
        }
        format!("pcw:{}:{}", self.session_id, entry_id)
    }

    fn add_item(&mut self, entry: u32, role: Role, text: &str, tool: Option<&str>) -> u32 {
        let index = self.items.len() as u32;
        let start = self.arena.len();
        self.arena.push_str(text);
        let (tool_id, ns_id) = match tool {
            Some(name) => {
                let t = self.tools.add(name, index);
                let ns = match name.split_once('_') {
                    Some((ns, _)) if !ns.is_empty() => self.namespaces.add(ns, index),
                    _ => NONE,
                };
                (t, ns)
            }
            None => (NONE, NONE),
        };
        self.roles[role as usize].push(index);
        self.items.push(ItemMeta {
            start,
            end: self.arena.len(),
            chars: char_count(text),
            entry,
            window: (self.windows.len() - 1) as u32,
            tool: tool_id,
            namespace: ns_id,
            role,
        });
        index
    }

    /// Whether an entry with this id has been pushed. O(1).
    pub fn contains(&self, entry_id: &str) -> bool {
        self.position(IdKey::of(entry_id), entry_id).is_some()
    }

    /// The id of the last pushed entry.
    pub fn tip(&self) -> Option<&str> {
        self.entries.len().checked_sub(1).map(|p| self.id_at(p))
    }

    /// Navigation to an ancestor: drops every entry pushed after `entry_id` (with its items and
    /// windows). Returns false, changing nothing, when `entry_id` is unknown. Cost: O(removed).
    pub fn truncate_after(&mut self, entry_id: &str) -> bool {
        let Some(pos) = self.position(IdKey::of(entry_id), entry_id) else {
            return false;
        };
        while self.entries.len() > pos as usize + 1 {
            let last = self.entries.len() as u32 - 1;
            let key = IdKey::of(self.id_at(last as usize));
            if let Ok(slot) = self.entry_index.find_entry(key.hash(), |&(p, _)| p == last) {
                slot.remove();
            }
            let rec = self.entries.pop().expect("entries beyond pos");
            self.ids.truncate(rec.id_start as usize);
            if rec.item != NONE {
                let meta = self.items.pop().expect("item of a pushed entry");
                self.roles[meta.role as usize].pop();
                if meta.tool != NONE {
                    self.tools.postings[meta.tool as usize].pop();
                }
                if meta.namespace != NONE {
                    self.namespaces.postings[meta.namespace as usize].pop();
                }
                self.arena.truncate(meta.start);
            }
            if rec.opens_window {
                let window = self.windows.pop().expect("window of a compaction");
                let index = self.windows.len() as u32;
                if self.window_index.get(&window.id) == Some(&index) {
                    self.window_index.remove(&window.id);
                    // An earlier window with the same id (never minted twice, but be safe).
                    if let Some(i) = self.windows.iter().rposition(|w| w.id == window.id) {
                        self.window_index.insert(window.id, i as u32);
                    }
                }
            }
        }
        true
    }

    pub fn entry_count(&self) -> usize {
        self.entries.len()
    }

    pub fn item_count(&self) -> usize {
        self.items.len()
    }

    pub fn window_count(&self) -> usize {
        self.windows.len()
    }

    /// The window the branch tip is in (the last one).
    pub fn current_window_id(&self) -> &str {
        &self
            .windows
            .last()
            .expect("the root window always exists")
            .id
    }

    /// All window ids, root first.
    pub fn window_ids(&self) -> Vec<&str> {
        self.windows.iter().map(|w| w.id.as_str()).collect()
    }

    /// Total bytes of item text held.
    pub fn text_bytes(&self) -> usize {
        self.arena.len()
    }

    /// Approximate heap bytes held by this history (capacities, including the text arena).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.arena.capacity()
            + self.items.capacity() * size_of::<ItemMeta>()
            + self.entries.capacity() * size_of::<EntryRec>()
            + self.ids.capacity()
            + self.entry_index.capacity() * (size_of::<(u32, IdKey)>() + 1)
            + self.windows.capacity() * size_of::<WindowRec>()
            + self
                .windows
                .iter()
                .map(|w| 2 * w.id.len() + w.created_at.as_ref().map_or(0, String::capacity))
                .sum::<usize>()
            + self.window_index.capacity() * (size_of::<(String, u32)>() + 1)
            + self.tools.heap_bytes()
            + self.namespaces.heap_bytes()
            + self.roles.iter().map(|r| r.capacity() * 4).sum::<usize>()
    }

    /// Releases spare capacity (useful after a bulk load).
    pub fn shrink_to_fit(&mut self) {
        self.arena.shrink_to_fit();
        self.items.shrink_to_fit();
        self.entries.shrink_to_fit();
        self.ids.shrink_to_fit();
        self.entry_index.shrink_to_fit(|(_, k)| k.hash());
        for r in &mut self.roles {
            r.shrink_to_fit();
        }
    }

    fn window_end(&self, w: usize) -> usize {
        self.windows
            .get(w + 1)
            .map_or(self.items.len(), |n| n.first_item)
    }

    fn item_text(&self, m: &ItemMeta) -> &str {
        &self.arena[m.start..m.end]
    }

    // -----------------------------------------------------------------------------------------
    // Tools
    // -----------------------------------------------------------------------------------------

    /// `history_list_windows`: lists the context windows of this session branch (a new window
    /// starts at every compaction/reset), newest first. Arguments: `limit` (positive integer,
    /// default: all windows), `recent_first` (boolean, default true). Each window has its
    /// `window_id`, `item_count`, `created_at` and whether it is the `current` one.
    pub fn list_windows(&self, args: &Value) -> ToolOutput {
        let run = || -> Result<Value, String> {
            let a = Args::new(args, &["limit", "recent_first"])?;
            let limit = a.positive_int("limit")?.unwrap_or(usize::MAX);
            let recent_first = a.boolean("recent_first")?.unwrap_or(true);
            let n = self.windows.len();
            let order: Box<dyn Iterator<Item = usize>> = if recent_first {
                Box::new((0..n).rev())
            } else {
                Box::new(0..n)
            };
            let windows: Vec<Value> = order
                .take(limit)
                .map(|i| {
                    let w = &self.windows[i];
                    json!({
                        "window_id": w.id,
                        "item_count": self.window_end(i) - w.first_item,
                        "created_at": w.created_at,
                        "current": i + 1 == n,
                    })
                })
                .collect();
            Ok(json!({
                "total_windows": n,
                "current_window_id": self.current_window_id(),
                "windows": windows,
            }))
        };
        respond(run())
    }

    /// `history_list_items`: lists durable history items (messages, tool results, compaction
    /// summaries), including those from earlier windows. Arguments: `window_id` (string),
    /// `role` ("user" | "assistant" | "tool" | "system"), `tool_namespace` (string),
    /// `tool_name` (string), `limit` (positive integer, default 50), `recent_first` (boolean,
    /// default true), `max_chars_per_item` (positive integer, default 1200). Each item's
    /// `content` is cut to `max_chars_per_item` characters (`truncated`, `total_chars` tell);
    /// use `history_read_item` for the rest. `has_more` says whether more items matched.
    pub fn list_items(&self, args: &Value) -> ToolOutput {
        let run = || -> Result<Value, String> {
            let a = Args::new(
                args,
                &[
                    "window_id",
                    "role",
                    "tool_namespace",
                    "tool_name",
                    "limit",
                    "recent_first",
                    "max_chars_per_item",
                ],
            )?;
            let filter = self.filter(&a)?;
            let limit = a.positive_int("limit")?.unwrap_or(DEFAULT_LIST_ITEMS_LIMIT);
            let recent_first = a.boolean("recent_first")?.unwrap_or(true);
            let max_chars = a
                .positive_int("max_chars_per_item")?
                .unwrap_or(DEFAULT_MAX_CHARS_PER_ITEM);
            let mut found = Vec::new();
            self.for_each_candidate(&filter, recent_first, |i| {
                found.push(i);
                found.len() <= limit
            });
            let has_more = found.len() > limit;
            found.truncate(limit);
            let items: Vec<Value> = found
                .into_iter()
                .map(|i| {
                    let m = &self.items[i];
                    let text = self.item_text(m);
                    let cut = byte_at_char(text, max_chars);
                    let mut v = self.item_head(i);
                    v.insert("total_chars".into(), m.chars.into());
                    v.insert("truncated".into(), (cut < text.len()).into());
                    v.insert("content".into(), text[..cut].into());
                    Value::Object(v)
                })
                .collect();
            Ok(json!({ "items": items, "has_more": has_more }))
        };
        respond(run())
    }

    /// `history_read_item`: reads a range of characters of one history item. Arguments:
    /// `window_id` (string, required), `item_id` (string, required), `offset_chars`
    /// (integer ≥ 0, default 0), `limit_chars` (positive integer, default 20000). Offsets count
    /// Unicode characters. `next_offset_chars` is where to continue, or null at the end.
    pub fn read_item(&self, args: &Value) -> ToolOutput {
        let run = || -> Result<Value, String> {
            let a = Args::new(
                args,
                &["window_id", "item_id", "offset_chars", "limit_chars"],
            )?;
            let window_id = a.required_str("window_id")?;
            let item_id = a.required_str("item_id")?;
            let offset = a.non_negative_int("offset_chars")?.unwrap_or(0);
            let limit = a
                .positive_int("limit_chars")?
                .unwrap_or(DEFAULT_READ_LIMIT_CHARS);
            if !self.window_index.contains_key(window_id) {
                return Err(format!("unknown window_id {window_id:?}"));
            }
            let item = self
                .position(IdKey::of(item_id), item_id)
                .map(|p| self.entries[p as usize].item)
                .filter(|&i| i != NONE)
                .ok_or_else(|| format!("unknown item_id {item_id:?}"))?
                as usize;
            let m = &self.items[item];
            let actual = &self.windows[m.window as usize].id;
            if actual != window_id {
                return Err(format!(
                    "item_id {item_id:?} is not in window_id {window_id:?}; it is in {actual:?}"
                ));
            }
            if offset > m.chars {
                return Err(format!(
                    "offset_chars {offset} is past the end of the item (total_chars {})",
                    m.chars
                ));
            }
            let text = self.item_text(m);
            let ascii = m.chars == text.len();
            let from = if ascii {
                offset
            } else {
                byte_at_char(text, offset)
            };
            let to = if ascii {
                offset.saturating_add(limit).min(text.len())
            } else {
                from + byte_at_char(&text[from..], limit)
            };
            let taken = if ascii {
                to - from
            } else {
                char_count(&text[from..to])
            };
            let next = offset + taken;
            let mut v = self.item_head(item);
            v.insert("offset_chars".into(), offset.into());
            v.insert("total_chars".into(), m.chars.into());
            v.insert(
                "next_offset_chars".into(),
                if next < m.chars {
                    next.into()
                } else {
                    Value::Null
                },
            );
            v.insert("content".into(), text[from..to].into());
            Ok(Value::Object(v))
        };
        respond(run())
    }

    /// `history_search_contents`: case-sensitive literal substring search over durable history
    /// (all windows unless `window_id` is given); no semantic search. Arguments: `query`
    /// (non-empty string, required), `window_id`, `role`, `tool_namespace`, `tool_name`,
    /// `limit` (positive integer, default 20), `recent_first` (boolean, default true). One
    /// result per matching item: its first match offset (`match_offset_chars`) and a snippet
    /// of up to 80 characters each side (starting at `snippet_offset_chars`).
    pub fn search_contents(&self, args: &Value) -> ToolOutput {
        let run = || -> Result<Value, String> {
            let a = Args::new(
                args,
                &[
                    "query",
                    "window_id",
                    "role",
                    "tool_namespace",
                    "tool_name",
                    "limit",
                    "recent_first",
                ],
            )?;
            let query = a.required_str("query")?;
            if query.is_empty() {
                return Err("`query` must not be empty".into());
            }
            let filter = self.filter(&a)?;
            let limit = a.positive_int("limit")?.unwrap_or(DEFAULT_SEARCH_LIMIT);
            let recent_first = a.boolean("recent_first")?.unwrap_or(true);
            let hits = self.search(query, &filter, recent_first, limit.saturating_add(1));
            let has_more = hits.len() > limit;
            let items: Vec<Value> = hits
                .into_iter()
                .take(limit)
                .map(|(i, at)| self.hit_json(i, at, query))
                .collect();
            Ok(json!({ "items": items, "has_more": has_more }))
        };
        respond(run())
    }

    // -----------------------------------------------------------------------------------------
    // Internals of the tools
    // -----------------------------------------------------------------------------------------

    fn filter(&self, a: &Args<'_>) -> Result<Filter, String> {
        let (lo, hi) = match a.string("window_id")? {
            Some(id) => {
                let &w = self
                    .window_index
                    .get(id)
                    .ok_or_else(|| format!("unknown window_id {id:?}"))?;
                let w = w as usize;
                (self.windows[w].first_item, self.window_end(w))
            }
            None => (0, self.items.len()),
        };
        let role = match a.string("role")? {
            Some(r) => Some(Role::parse(r).ok_or_else(|| {
                format!(
                    "`role` must be one of {}, got {r:?}",
                    ROLE_NAMES.map(|n| format!("\"{n}\"")).join(", ")
                )
            })?),
            None => None,
        };
        let mut impossible = false;
        let mut lookup = |interner: &Interner, key: &str| -> Result<Option<u32>, String> {
            Ok(match a.string(key)? {
                Some(name) => match interner.ids.get(name) {
                    Some(&id) => Some(id),
                    None => {
                        impossible = true;
                        None
                    }
                },
                None => None,
            })
        };
        let tool = lookup(&self.tools, "tool_name")?;
        let namespace = lookup(&self.namespaces, "tool_namespace")?;
        Ok(Filter {
            lo,
            hi,
            role,
            tool,
            namespace,
            impossible,
        })
    }

    fn matches(&self, i: usize, f: &Filter) -> bool {
        let m = &self.items[i];
        !matches!(f.role, Some(r) if m.role != r)
            && !matches!(f.tool, Some(t) if m.tool != t)
            && !matches!(f.namespace, Some(n) if m.namespace != n)
    }

    /// The smallest posting list that restricts `f`, sliced to its item range.
    fn narrowest_list(&self, f: &Filter) -> Option<&[u32]> {
        let mut best: Option<&[u32]> = None;
        let lists = [
            f.role.map(|r| self.roles[r as usize].as_slice()),
            f.tool.map(|t| self.tools.postings[t as usize].as_slice()),
            f.namespace
                .map(|n| self.namespaces.postings[n as usize].as_slice()),
        ];
        for list in lists.into_iter().flatten() {
            let a = list.partition_point(|&i| (i as usize) < f.lo);
            let b = list.partition_point(|&i| (i as usize) < f.hi);
            let slice = &list[a..b];
            if !matches!(best, Some(cur) if cur.len() <= slice.len()) {
                best = Some(slice);
            }
        }
        best
    }

    /// Visits matching items in order until `visit` returns false.
    fn for_each_candidate(
        &self,
        f: &Filter,
        recent_first: bool,
        mut visit: impl FnMut(usize) -> bool,
    ) {
        if f.impossible {
            return;
        }
        match self.narrowest_list(f) {
            Some(list) => {
                let mut go = |i: &u32| {
                    let i = *i as usize;
                    !self.matches(i, f) || visit(i)
                };
                if recent_first {
                    for i in list.iter().rev() {
                        if !go(i) {
                            return;
                        }
                    }
                } else {
                    for i in list {
                        if !go(i) {
                            return;
                        }
                    }
                }
            }
            None => {
                if recent_first {
                    for i in (f.lo..f.hi).rev() {
                        if !visit(i) {
                            return;
                        }
                    }
                } else {
                    for i in f.lo..f.hi {
                        if !visit(i) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Up to `want` matching items with the byte offset of the first match inside each.
    fn search(
        &self,
        query: &str,
        f: &Filter,
        recent_first: bool,
        want: usize,
    ) -> Vec<(usize, usize)> {
        let mut hits = Vec::new();
        if f.impossible || f.lo >= f.hi {
            return hits;
        }
        let needle = query.as_bytes();
        let forward = memmem::Finder::new(needle);
        let first_in = |i: usize| forward.find(self.item_text(&self.items[i]).as_bytes());

        // A selective filter: search only the candidate items.
        if let Some(list) = self.narrowest_list(f) {
            if list.len().saturating_mul(8) < f.hi - f.lo {
                self.for_each_candidate(f, recent_first, |i| {
                    if let Some(at) = first_in(i) {
                        hits.push((i, at));
                    }
                    hits.len() < want
                });
                return hits;
            }
        }

        let hay = self.arena.as_bytes();
        let lo = self.items[f.lo].start;
        let hi = self.items[f.hi - 1].end;
        let n = needle.len();
        let item_at = |p: usize| self.items.partition_point(|m| m.end <= p);
        if recent_first {
            // memmem's reverse finder has no SIMD prefilter; instead scan chunks from the end
            // with the forward finder and walk each chunk's matches backwards. The chunk starts
            // small (a common needle stops early) and doubles after every chunk that did not
            // finish the search, up to a few MiB, so that a rare needle scans at forward speed.
            // Smaller in tests, so that the bulk path below runs on test-sized histories too.
            const MAX_CHUNK: usize = if cfg!(test) { 1 << 17 } else { 4 << 20 };
            let mut chunk = (1usize << 16).max(4 * n);
            let mut end = hi;
            let mut positions = Vec::new();
            while end > lo && hits.len() < want {
                let mut cstart = end.saturating_sub(chunk).max(lo);
                positions.clear();
                if chunk >= MAX_CHUNK && end - lo >= BULK_SCAN_MIN {
                    // Still searching after the largest chunk: the needle is rare here. Collect
                    // the matches of everything that is left at once, on two threads (a scan
                    // this long is bound by memory bandwidth, which one core does not fill).
                    cstart = lo;
                    positions = all_matches_parallel(&forward, hay, lo, end, n);
                } else {
                    // Overlapping matches too: a later overlapping one may be the valid one.
                    let mut from = cstart;
                    while let Some(r) = forward.find(&hay[from..end]) {
                        positions.push(from + r);
                        from += r + 1;
                    }
                }
                let mut bound = end;
                for &p in positions.iter().rev() {
                    if p + n > bound {
                        continue;
                    }
                    let i = item_at(p);
                    let m = &self.items[i];
                    if p + n > m.end {
                        // Spans into the next item: not a match.
                        continue;
                    }
                    if self.matches(i, f) {
                        let at = first_in(i).expect("a match inside the item");
                        hits.push((i, at));
                        if hits.len() >= want {
                            break;
                        }
                    }
                    bound = m.start;
                }
                if cstart == lo {
                    break;
                }
                // Matches starting before the chunk but ending inside it come next.
                end = bound.min(cstart + n - 1);
                chunk = (chunk * 2).min(MAX_CHUNK.max(4 * n));
            }
        } else {
            let mut start = lo;
            while start < hi && hits.len() < want {
                let Some(rel) = forward.find(&hay[start..hi]) else {
                    break;
                };
                let p = start + rel;
                let i = item_at(p);
                let m = &self.items[i];
                if p + n <= m.end && self.matches(i, f) {
                    hits.push((i, p - m.start));
                }
                start = m.end;
            }
        }
        hits
    }

    /// The identifying fields of an item, in output order.
    fn item_head(&self, i: usize) -> Map<String, Value> {
        let m = &self.items[i];
        let mut v = Map::new();
        v.insert(
            "window_id".into(),
            self.windows[m.window as usize].id.clone().into(),
        );
        v.insert(
            "item_id".into(),
            self.id_at(m.entry as usize).to_string().into(),
        );
        v.insert("role".into(), m.role.as_str().into());
        let name = |interner: &Interner, id: u32| {
            if id == NONE {
                Value::Null
            } else {
                interner.names[id as usize].clone().into()
            }
        };
        v.insert("tool_name".into(), name(&self.tools, m.tool));
        v.insert("tool_namespace".into(), name(&self.namespaces, m.namespace));
        v
    }

    fn hit_json(&self, i: usize, at: usize, query: &str) -> Value {
        let m = &self.items[i];
        let text = self.item_text(m);
        let match_chars = char_count(&text[..at]);
        let before = &text[..at];
        let snippet_from = before
            .char_indices()
            .rev()
            .take(SNIPPET_CONTEXT_CHARS)
            .last()
            .map_or(at, |(b, _)| b);
        let after_from = at + query.len();
        let snippet_to = after_from + byte_at_char(&text[after_from..], SNIPPET_CONTEXT_CHARS);
        let mut v = self.item_head(i);
        v.insert("total_chars".into(), m.chars.into());
        v.insert("match_offset_chars".into(), match_chars.into());
        v.insert(
            "snippet_offset_chars".into(),
            (match_chars - char_count(&text[snippet_from..at])).into(),
        );
        v.insert("snippet".into(), text[snippet_from..snippet_to].into());
        Value::Object(v)
    }
}

/// A newest-first search that has not finished after the largest chunk scans the rest at once
/// when at least this much is left (small in tests, so they exercise it).
const BULK_SCAN_MIN: usize = if cfg!(test) { 1 << 12 } else { 16 << 20 };

/// Start positions of every (also overlapping) match of the needle that lies wholly inside
/// `hay[lo..end]`, ascending, collected on two threads.
fn all_matches_parallel(
    finder: &memmem::Finder<'_>,
    hay: &[u8],
    lo: usize,
    end: usize,
    n: usize,
) -> Vec<usize> {
    let collect = |from: usize, to: usize, starts_before: usize| {
        let mut out = Vec::new();
        let mut at = from;
        while let Some(r) = finder.find(&hay[at..to]) {
            if at + r >= starts_before {
                break;
            }
            out.push(at + r);
            at += r + 1;
        }
        out
    };
    let mid = lo + (end - lo) / 2;
    // The older half owns the matches that start before `mid` (they may end after it).
    let older_to = (mid + n).saturating_sub(1).min(end);
    let (mut older, newer) = std::thread::scope(|scope| {
        let newer = scope.spawn(|| collect(mid, end, end));
        let older = collect(lo, older_to, mid);
        // A failed helper thread costs time, never results: scan its half here instead.
        let newer = newer.join().unwrap_or_else(|_| collect(mid, end, end));
        (older, newer)
    });
    older.extend(newer);
    older
}

/// 32 bits of an entry id's hash, kept with its position so that the index grows without
/// reading the ids again, and compared before the ids are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IdKey(u32);

impl IdKey {
    fn of(id: &str) -> IdKey {
        use std::hash::BuildHasher;
        IdKey((rustc_hash::FxBuildHasher.hash_one(id) >> 32) as u32)
    }

    /// The hash the index places the key by (spread over all 64 bits).
    fn hash(self) -> u64 {
        u64::from(self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

/// The id of the entry at `pos` of `entries`, whose ids are held in `ids`.
fn entry_id<'a>(entries: &[EntryRec], ids: &'a str, pos: u32) -> &'a str {
    let rec = &entries[pos as usize];
    &ids[rec.id_start as usize..rec.id_end as usize]
}

fn respond(result: Result<Value, String>) -> ToolOutput {
    match result {
        Ok(v) => ToolOutput::json(&v),
        Err(e) => ToolOutput::error(e),
    }
}

/// Number of Unicode scalar values in `s` (counts non-continuation bytes; vectorizes well).
fn char_count(s: &str) -> usize {
    // Every byte that is not a UTF-8 continuation byte (0b10xx_xxxx) starts a character.
    count_bytes(s.as_bytes(), |b| u8::from((b as i8) >= -0x40))
}

/// The length of `s` in UTF-16 code units (what JavaScript's `length` gives), without encoding
/// it: one unit per character, two for characters outside the Basic Multilingual Plane (whose
/// UTF-8 form starts with a byte 0xF0 or above).
pub fn utf16_len(s: &str) -> usize {
    count_bytes(s.as_bytes(), |b| {
        u8::from((b as i8) >= -0x40) + u8::from(b >= 0xF0)
    })
}

/// Sum of `weight(b)` (at most 2) over `bytes`, with per-lane byte counters the compiler turns
/// into vector adds.
fn count_bytes(bytes: &[u8], weight: impl Fn(u8) -> u8) -> usize {
    const LANES: usize = 32;
    const ROUNDS: usize = 127; // 127 rounds of weight <= 2 fit in a u8 lane
    let mut total = 0usize;
    let mut big = bytes.chunks_exact(LANES * ROUNDS);
    let lanes_sum = |chunk: &[u8]| {
        let mut acc = [0u8; LANES];
        for block in chunk.chunks_exact(LANES) {
            for (a, &b) in acc.iter_mut().zip(block) {
                *a += weight(b);
            }
        }
        acc.iter().map(|&a| usize::from(a)).sum::<usize>()
    };
    // Every ASCII byte weighs the same (one character, one UTF-16 unit): an all-ASCII text or
    // chunk, the usual case, is checked with word-wide operations instead of being summed byte
    // by byte.
    let ascii_weight = usize::from(weight(b'a'));
    if bytes.is_ascii() {
        return bytes.len() * ascii_weight;
    }
    for chunk in big.by_ref() {
        total += if chunk.is_ascii() {
            chunk.len() * ascii_weight
        } else {
            lanes_sum(chunk)
        };
    }
    let rest = big.remainder();
    let tail = rest.len() - rest.len() % LANES;
    total += lanes_sum(&rest[..tail]);
    total
        + rest[tail..]
            .iter()
            .map(|&b| usize::from(weight(b)))
            .sum::<usize>()
}

/// Byte index of the `n`-th character of `s` (or `s.len()` when it has fewer).
fn byte_at_char(s: &str, n: usize) -> usize {
    if n >= s.len() {
        return s.len();
    }
    s.char_indices().nth(n).map_or(s.len(), |(b, _)| b)
}

/// Validated access to a tool's JSON arguments.
struct Args<'a> {
    map: Option<&'a Map<String, Value>>,
}

impl<'a> Args<'a> {
    fn new(v: &'a Value, allowed: &[&str]) -> Result<Self, String> {
        match v {
            Value::Null => Ok(Args { map: None }),
            Value::Object(map) => {
                if let Some(k) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
                    return Err(format!(
                        "unknown argument `{k}`; accepted arguments: {}",
                        allowed.join(", ")
                    ));
                }
                Ok(Args { map: Some(map) })
            }
            _ => Err("arguments must be a JSON object".into()),
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.and_then(|m| m.get(key)).filter(|v| !v.is_null())
    }

    fn string(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!("`{key}` must be a string, got {other}")),
        }
    }

    fn required_str(&self, key: &str) -> Result<&'a str, String> {
        self.string(key)?
            .ok_or_else(|| format!("`{key}` is required"))
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("`{key}` must be true or false, got {other}")),
        }
    }

    fn integer(&self, key: &str, min: u64, what: &str) -> Result<Option<usize>, String> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let n = match v {
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    Some(u)
                } else if n.as_i64().is_some() {
                    None
                } else {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                        .map(|f| f as u64)
                }
            }
            _ => None,
        };
        match n {
            Some(u) if u >= min => Ok(Some(usize::try_from(u).unwrap_or(usize::MAX))),
            _ => Err(format!("`{key}` must be {what}, got {v}")),
        }
    }

    fn positive_int(&self, key: &str) -> Result<Option<usize>, String> {
        self.integer(key, 1, "a positive integer")
    }

    fn non_negative_int(&self, key: &str) -> Result<Option<usize>, String> {
        self.integer(key, 0, "an integer ≥ 0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{parse_line, Line, Message};
    use serde_json::json;

    const S: &str = "sess1";

    fn entry(id: &str, kind: EntryKind) -> Entry {
        Entry {
            id: id.into(),
            parent_id: None,
            timestamp: format!("2025-01-01T00:00:{id}Z"),
            kind,
        }
    }

    fn msg(id: &str, role: &str, text: &str) -> Entry {
        entry(
            id,
            EntryKind::Message(Message {
                role: role.into(),
                text: text.into(),
                ..Default::default()
            }),
        )
    }

    fn tool(id: &str, name: &str, text: &str) -> Entry {
        entry(
            id,
            EntryKind::Message(Message {
                role: "toolResult".into(),
                text: text.into(),
                tool_name: Some(name.into()),
                ..Default::default()
            }),
        )
    }

    fn compaction(id: &str, summary: &str, details: Value) -> Entry {
        entry(
            id,
            EntryKind::Compaction {
                summary: summary.into(),
                first_kept_entry_id: None,
                tokens_before: None,
                details,
                from_hook: false,
            },
        )
    }

    fn build(entries: &[Entry]) -> History {
        let mut h = History::new(S);
        for e in entries {
            h.push(e);
        }
        h
    }

    fn ok(out: ToolOutput) -> Value {
        assert!(!out.is_error, "unexpected tool error: {}", out.text);
        serde_json::from_str(&out.text).unwrap()
    }

    fn err(out: ToolOutput) -> String {
        assert!(out.is_error, "expected an error, got {}", out.text);
        out.text
    }

    fn ids(v: &Value) -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["item_id"].as_str().unwrap().to_string())
            .collect()
    }

    /// A small session: two windows, every item kind.
    fn fixture() -> History {
        build(&[
            msg("01", "system", "system prompt"),
            msg("02", "user", "Please fix the parser bug."),
            msg(
                "03",
                "assistant",
                "Looking.\n[tool_call read] {\"path\":\"src/parser.rs\"}",
            ),
            tool("04", "read", "fn parse() { todo!() }"),
            entry(
                "05",
                EntryKind::Custom {
                    custom_type: "relay-reset".into(),
                    data: Value::Null,
                },
            ),
            compaction(
                "06",
                "Context window reset.",
                json!({"relay": "window", "windowId": "pcw:sess1:0badcafe"}),
            ),
            entry(
                "07",
                EntryKind::CustomMessage {
                    custom_type: "note".into(),
                    text: "boot block".into(),
                    display: false,
                    details: Value::Null,
                },
            ),
            entry(
                "08",
                EntryKind::Message(Message {
                    role: "bashExecution".into(),
                    text: "$ cargo test\nok".into(),
                    ..Default::default()
                }),
            ),
            tool("09", "history_search_contents", "{\"items\":[]}"),
            msg("10", "assistant", "The parser bug is fixed."),
        ])
    }

    #[test]
    fn windows_split_at_compactions() {
        let h = build(&[
            msg("a1", "user", "one"),
            compaction("c1", "s1", Value::Null),
            msg("a2", "user", "two"),
            compaction(
                "c2",
                "s2",
                json!({"relay": "window", "windowId": "pcw:sess1:minted01"}),
            ),
            compaction("c3", "s3", json!({"relay": "other", "windowId": "pcw:x"})),
            compaction("c4", "s4", json!({"relay": "window", "windowId": 7})),
        ]);
        assert_eq!(
            h.window_ids(),
            [
                "pcw:sess1:root",
                "pcw:sess1:c1",
                "pcw:sess1:minted01",
                "pcw:sess1:c3",
                "pcw:sess1:c4"
            ]
        );
        assert_eq!(h.current_window_id(), "pcw:sess1:c4");
        assert_eq!(h.window_count(), 5);
        assert_eq!(h.entry_count(), 6);
        // The compaction summary is the first item of its window.
        let v =
            ok(h.list_items(&json!({"window_id": "pcw:sess1:minted01", "recent_first": false})));
        assert_eq!(ids(&v), ["c2"]);
        assert_eq!(v["items"][0]["role"], "system");
        assert_eq!(v["items"][0]["content"], "s2");
        let empty = History::new("x");
        assert_eq!(empty.window_ids(), ["pcw:x:root"]);
        assert_eq!(empty.tip(), None);
    }

    #[test]
    fn role_mapping_and_tools() {
        let h = build(&[
            msg("u", "user", "u"),
            msg("a", "assistant", "a"),
            tool("t", "history_list_items", "t"),
            tool("t2", "bash", "t2"),
            tool("t3", "_private", "t3"),
            entry(
                "b",
                EntryKind::Message(Message {
                    role: "bashExecution".into(),
                    text: "$ ls\n".into(),
                    ..Default::default()
                }),
            ),
            msg("cu", "custom", "cu"),
            msg("cs", "compactionSummary", "cs"),
            msg("bs", "branchSummary", "bs"),
            msg("sy", "system", "sy"),
            msg("zz", "weird", "zz"),
            entry(
                "cm",
                EntryKind::CustomMessage {
                    custom_type: "k".into(),
                    text: "cm".into(),
                    display: true,
                    details: Value::Null,
                },
            ),
            entry(
                "br",
                EntryKind::BranchSummary {
                    from_id: None,
                    summary: "br".into(),
                    details: Value::Null,
                },
            ),
            entry(
                "la",
                EntryKind::Label {
                    target_id: "u".into(),
                    label: None,
                },
            ),
            entry(
                "un",
                EntryKind::Unknown {
                    entry_type: "x".into(),
                },
            ),
        ]);
        let v = ok(h.list_items(&json!({"recent_first": false})));
        let got: Vec<(String, String, Value, Value)> = v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["item_id"].as_str().unwrap().into(),
                    i["role"].as_str().unwrap().into(),
                    i["tool_name"].clone(),
                    i["tool_namespace"].clone(),
                )
            })
            .collect();
        let n = Value::Null;
        let expect = vec![
            ("u", "user", n.clone(), n.clone()),
            ("a", "assistant", n.clone(), n.clone()),
            ("t", "tool", json!("history_list_items"), json!("history")),
            ("t2", "tool", json!("bash"), n.clone()),
            ("t3", "tool", json!("_private"), n.clone()),
            ("b", "tool", json!("bash"), n.clone()),
            ("cu", "user", n.clone(), n.clone()),
            ("cs", "system", n.clone(), n.clone()),
            ("bs", "system", n.clone(), n.clone()),
            ("cm", "user", n.clone(), n.clone()),
            ("br", "system", n.clone(), n.clone()),
        ];
        let expect: Vec<(String, String, Value, Value)> = expect
            .into_iter()
            .map(|(a, b, c, d)| (a.into(), b.into(), c, d))
            .collect();
        assert_eq!(got, expect);
        assert!(h.contains("sy") && h.contains("un") && h.contains("la"));
        assert_eq!(h.tip(), Some("un"));
        // Filters.
        assert_eq!(
            ids(&ok(h.list_items(
                &json!({"tool_name": "bash", "recent_first": false})
            ))),
            ["t2", "b"]
        );
        assert_eq!(
            ids(&ok(h.list_items(&json!({"tool_namespace": "history"})))),
            ["t"]
        );
        assert_eq!(
            ids(&ok(h.list_items(&json!({"role": "system"})))),
            ["br", "bs", "cs"]
        );
        assert_eq!(
            ids(&ok(
                h.list_items(&json!({"role": "tool", "tool_name": "bash"}))
            )),
            ["b", "t2"]
        );
        assert!(ids(&ok(h.list_items(&json!({"tool_name": "nope"})))).is_empty());
        assert!(ids(&ok(
            h.list_items(&json!({"role": "assistant", "tool_name": "bash"}))
        ))
        .is_empty());
    }

    #[test]
    fn every_item_reachable_after_many_compactions() {
        let mut h = History::new(S);
        let mut expected = Vec::new();
        for w in 0..6 {
            if w > 0 {
                h.push(&compaction(
                    &format!("c{w}"),
                    &format!("summary {w}"),
                    Value::Null,
                ));
                expected.push((format!("pcw:{S}:c{w}"), format!("c{w}")));
            }
            for k in 0..4 {
                let id = format!("m{w}_{k}");
                h.push(&msg(
                    &id,
                    if k % 2 == 0 { "user" } else { "assistant" },
                    &format!("window {w} item {k}"),
                ));
                let wid = if w == 0 {
                    format!("pcw:{S}:root")
                } else {
                    format!("pcw:{S}:c{w}")
                };
                expected.push((wid, id));
            }
        }
        for (wid, iid) in &expected {
            let v = ok(h.read_item(&json!({"window_id": wid, "item_id": iid})));
            assert_eq!(&v["window_id"], wid);
            assert_eq!(&v["item_id"], iid);
            let found = ok(h.search_contents(
                &json!({"query": v["content"].as_str().unwrap(), "window_id": wid}),
            ));
            assert!(
                ids(&found).contains(iid),
                "{iid} not found by its own content"
            );
        }
        let all = ok(h.list_items(&json!({"limit": 1000, "recent_first": false})));
        let all_ids: Vec<String> = expected.iter().map(|(_, i)| i.clone()).collect();
        assert_eq!(ids(&all), all_ids);
        let windows = ok(h.list_windows(&json!({"recent_first": false})));
        assert_eq!(windows["total_windows"], 6);
        assert_eq!(windows["windows"][0]["item_count"], 4);
        assert_eq!(windows["windows"][3]["item_count"], 5);
        assert_eq!(windows["windows"][5]["current"], true);
        assert_eq!(windows["windows"][0]["current"], false);
    }

    #[test]
    fn truncate_after_drops_later_entries() {
        let mut h = fixture();
        let before_items = h.item_count();
        assert!(!h.truncate_after("nope"));
        assert_eq!(h.item_count(), before_items);
        assert!(h.truncate_after("04"));
        assert_eq!(h.tip(), Some("04"));
        assert_eq!(h.entry_count(), 4);
        assert_eq!(h.window_ids(), ["pcw:sess1:root"]);
        assert!(!h.contains("06") && !h.contains("10") && h.contains("04"));
        assert!(ids(&ok(h.search_contents(&json!({"query": "fixed"})))).is_empty());
        assert!(
            err(h.list_items(&json!({"window_id": "pcw:sess1:0badcafe"})))
                .contains("unknown window_id")
        );
        assert!(ids(&ok(
            h.list_items(&json!({"tool_name": "history_search_contents"}))
        ))
        .is_empty());
        // Another branch grows from there; removed ids can come back.
        h.push(&msg("11", "user", "a different path"));
        h.push(&compaction("06", "again", Value::Null));
        assert_eq!(h.window_ids(), ["pcw:sess1:root", "pcw:sess1:06"]);
        let v = ok(h.list_items(&json!({"recent_first": false})));
        assert_eq!(ids(&v), ["02", "03", "04", "11", "06"]);
        assert_eq!(
            ids(&ok(h.search_contents(&json!({"query": "different"})))),
            ["11"]
        );
        // Truncating to the tip changes nothing.
        assert!(h.truncate_after("06"));
        assert_eq!(h.entry_count(), 6);
        // Pushing an id already present is ignored.
        h.push(&msg("02", "user", "dup"));
        assert_eq!(h.entry_count(), 6);
    }

    #[test]
    fn argument_errors_name_the_argument() {
        let h = fixture();
        let cases: Vec<(ToolOutput, &str)> = vec![
            (
                h.list_windows(&json!({"limitt": 1})),
                "unknown argument `limitt`",
            ),
            (
                h.list_windows(&json!({"limit": 0})),
                "`limit` must be a positive integer, got 0",
            ),
            (
                h.list_windows(&json!({"limit": -2})),
                "`limit` must be a positive integer",
            ),
            (
                h.list_windows(&json!({"limit": 1.5})),
                "`limit` must be a positive integer",
            ),
            (
                h.list_windows(&json!({"limit": "3"})),
                "`limit` must be a positive integer",
            ),
            (
                h.list_windows(&json!({"recent_first": "yes"})),
                "`recent_first` must be true or false",
            ),
            (
                h.list_windows(&json!([1])),
                "arguments must be a JSON object",
            ),
            (
                h.list_items(&json!({"window_id": "pcw:sess1:nope"})),
                "unknown window_id \"pcw:sess1:nope\"",
            ),
            (
                h.list_items(&json!({"window_id": 3})),
                "`window_id` must be a string",
            ),
            (
                h.list_items(&json!({"role": "developer"})),
                "`role` must be one of",
            ),
            (
                h.list_items(&json!({"tool_name": ["x"]})),
                "`tool_name` must be a string",
            ),
            (
                h.list_items(&json!({"max_chars_per_item": 0})),
                "`max_chars_per_item` must be a positive integer",
            ),
            (
                h.read_item(&json!({"item_id": "02"})),
                "`window_id` is required",
            ),
            (
                h.read_item(&json!({"window_id": "pcw:sess1:root"})),
                "`item_id` is required",
            ),
            (
                h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "zz"})),
                "unknown item_id \"zz\"",
            ),
            (
                h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "05"})),
                "unknown item_id \"05\"",
            ),
            (
                h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "10"})),
                "is not in window_id \"pcw:sess1:root\"; it is in \"pcw:sess1:0badcafe\"",
            ),
            (
                h.read_item(&json!({"window_id": "w", "item_id": "02"})),
                "unknown window_id \"w\"",
            ),
            (
                h.read_item(
                    &json!({"window_id": "pcw:sess1:root", "item_id": "02", "offset_chars": -1}),
                ),
                "`offset_chars` must be an integer ≥ 0, got -1",
            ),
            (
                h.read_item(
                    &json!({"window_id": "pcw:sess1:root", "item_id": "02", "offset_chars": 0.5}),
                ),
                "`offset_chars` must be an integer ≥ 0",
            ),
            (
                h.read_item(
                    &json!({"window_id": "pcw:sess1:root", "item_id": "02", "limit_chars": 0}),
                ),
                "`limit_chars` must be a positive integer",
            ),
            (
                h.read_item(
                    &json!({"window_id": "pcw:sess1:root", "item_id": "02", "offset_chars": 27}),
                ),
                "offset_chars 27 is past the end of the item (total_chars 26)",
            ),
            (h.search_contents(&json!({})), "`query` is required"),
            (
                h.search_contents(&json!({"query": ""})),
                "`query` must not be empty",
            ),
            (
                h.search_contents(&json!({"query": 5})),
                "`query` must be a string",
            ),
            (
                h.search_contents(&json!({"query": "x", "limit": 0})),
                "`limit` must be a positive integer",
            ),
            (
                h.search_contents(&json!({"query": "x", "max_chars_per_item": 5})),
                "unknown argument `max_chars_per_item`",
            ),
        ];
        for (out, want) in cases {
            let text = err(out);
            assert!(
                text.contains(want),
                "error {text:?} does not contain {want:?}"
            );
        }
        // Null arguments and null-valued optional arguments are accepted.
        ok(h.list_windows(&Value::Null));
        ok(h.list_items(&json!({"window_id": null, "role": null, "limit": null})));
        ok(h.read_item(
            &json!({"window_id": "pcw:sess1:root", "item_id": "02", "offset_chars": 26}),
        ));
        ok(h.read_item(
            &json!({"window_id": "pcw:sess1:root", "item_id": "02", "offset_chars": 2.0}),
        ));
    }

    #[test]
    fn char_safe_offsets() {
        // 2 emoji (4 bytes), CJK (3 bytes), accented (2 bytes), ASCII.
        let text = "😀😀漢字é-abc";
        let h = build(&[msg("u", "user", text), msg("v", "user", "plain ascii")]);
        let root = "pcw:sess1:root";
        let read = |off: usize, lim: usize| {
            ok(h.read_item(&json!({"window_id": root, "item_id": "u", "offset_chars": off, "limit_chars": lim})))
        };
        let v = read(0, 3);
        assert_eq!(v["content"], "😀😀漢");
        assert_eq!(v["total_chars"], 9);
        assert_eq!(v["next_offset_chars"], 3);
        let v = read(3, 3);
        assert_eq!(v["content"], "字é-");
        assert_eq!(v["next_offset_chars"], 6);
        let v = read(6, 100);
        assert_eq!(v["content"], "abc");
        assert_eq!(v["next_offset_chars"], Value::Null);
        let v = read(9, 5);
        assert_eq!(v["content"], "");
        assert_eq!(v["next_offset_chars"], Value::Null);
        let v = ok(h.read_item(
            &json!({"window_id": root, "item_id": "v", "offset_chars": 6, "limit_chars": 2}),
        ));
        assert_eq!(v["content"], "as");
        assert_eq!(v["next_offset_chars"], 8);
        let v = ok(h.list_items(&json!({"max_chars_per_item": 2, "recent_first": false})));
        assert_eq!(v["items"][0]["content"], "😀😀");
        assert_eq!(v["items"][0]["truncated"], true);
        let v = ok(h.list_items(&json!({"max_chars_per_item": 9, "recent_first": false})));
        assert_eq!(v["items"][0]["content"], text);
        assert_eq!(v["items"][0]["truncated"], false);
        let v = ok(h.search_contents(&json!({"query": "é-a"})));
        assert_eq!(v["items"][0]["match_offset_chars"], 4);
        assert_eq!(v["items"][0]["snippet_offset_chars"], 0);
        assert_eq!(v["items"][0]["snippet"], text);
    }

    #[test]
    fn search_snippet_is_bounded() {
        let long = format!("{}NEEDLE{}", "α".repeat(200), "β".repeat(200));
        let h = build(&[msg("u", "user", &long)]);
        let v = ok(h.search_contents(&json!({"query": "NEEDLE"})));
        let hit = &v["items"][0];
        assert_eq!(hit["match_offset_chars"], 200);
        assert_eq!(hit["snippet_offset_chars"], 120);
        assert_eq!(
            hit["snippet"],
            format!("{}NEEDLE{}", "α".repeat(80), "β".repeat(80))
        );
        assert_eq!(hit["total_chars"], 406);
    }

    #[test]
    fn search_order_limits_filters() {
        let h = build(&[
            msg("a", "user", "needle one, needle two"),
            tool("b", "read", "no match here"),
            tool("c", "history_read_item", "a needle in a tool"),
            compaction("d", "summary with needle", Value::Null),
            msg("e", "assistant", "xx needle"),
        ]);
        assert_eq!(
            ids(&ok(h.search_contents(&json!({"query": "needle"})))),
            ["e", "d", "c", "a"]
        );
        assert_eq!(
            ids(&ok(h.search_contents(
                &json!({"query": "needle", "recent_first": false})
            ))),
            ["a", "c", "d", "e"]
        );
        let v = ok(h.search_contents(&json!({"query": "needle", "limit": 2})));
        assert_eq!(ids(&v), ["e", "d"]);
        assert_eq!(v["has_more"], true);
        let v = ok(h.search_contents(&json!({"query": "needle", "limit": 4})));
        assert_eq!(v["has_more"], false);
        // One result per item, with the first match offset even when searching backwards.
        let v = ok(h.search_contents(&json!({"query": "needle", "window_id": "pcw:sess1:root"})));
        assert_eq!(ids(&v), ["c", "a"]);
        assert_eq!(v["items"][1]["match_offset_chars"], 0);
        assert_eq!(
            ids(&ok(h.search_contents(
                &json!({"query": "needle", "role": "tool"})
            ))),
            ["c"]
        );
        assert_eq!(
            ids(&ok(h.search_contents(
                &json!({"query": "needle", "tool_namespace": "history"})
            ))),
            ["c"]
        );
        assert!(ids(&ok(
            h.search_contents(&json!({"query": "needle", "tool_name": "read"}))
        ))
        .is_empty());
        assert_eq!(
            ids(&ok(h.search_contents(
                &json!({"query": "needle", "role": "system"})
            ))),
            ["d"]
        );
        // Case-sensitive, literal.
        assert!(ids(&ok(h.search_contents(&json!({"query": "NEEDLE"})))).is_empty());
        assert!(ids(&ok(h.search_contents(&json!({"query": "need.e"})))).is_empty());
    }

    #[test]
    fn selective_filter_search_path() {
        // Few tool items among many: the search visits only the candidate items.
        let mut entries = Vec::new();
        for i in 0..100 {
            entries.push(msg(&format!("u{i}"), "user", "needle everywhere"));
            if i % 40 == 5 {
                entries.push(tool(&format!("t{i}"), "grep_files", "needle in tool"));
                entries.push(tool(&format!("x{i}"), "grep_files", "nothing"));
            }
        }
        let h = build(&entries);
        assert_eq!(
            ids(&ok(h.search_contents(
                &json!({"query": "needle", "role": "tool"})
            ))),
            ["t85", "t45", "t5"]
        );
        assert_eq!(
            ids(&ok(h.search_contents(&json!({"query": "needle", "tool_namespace": "grep", "recent_first": false, "limit": 2})))),
            ["t5", "t45"]
        );
        let v = ok(h.list_items(&json!({"tool_name": "grep_files", "limit": 3})));
        assert_eq!(ids(&v), ["x85", "t85", "x45"]);
        assert_eq!(v["has_more"], true);
    }

    #[test]
    fn large_history_search_matches_naive() {
        // Big items so that the backward scan crosses many chunks and chunk edges.
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut entries = Vec::new();
        let mut texts = Vec::new();
        for i in 0..120 {
            let len = 2_000 + next(12_000) as usize;
            let mut t: String = (0..len)
                .map(|k| if (k + i) % 7 == 0 { 'é' } else { 'x' })
                .collect();
            match next(5) {
                0 => t.insert_str(byte_at_char(&t, next(len as u64) as usize), "needle"),
                1 => t.push_str("nee"),
                2 => t.insert_str(0, "dle"),
                3 => t.push_str("needle"),
                _ => {}
            }
            entries.push(msg(&format!("i{i}"), "user", &t));
            texts.push(t);
        }
        let h = build(&entries);
        for query in ["needle", "x", "éxxxxxxé", "needleneedle"] {
            let expected: Vec<String> = (0..texts.len())
                .filter(|&i| texts[i].contains(query))
                .map(|i| format!("i{i}"))
                .collect();
            let got = ids(&ok(h.search_contents(
                &json!({"query": query, "recent_first": false, "limit": 1000}),
            )));
            assert_eq!(got, expected, "{query} oldest first");
            let mut rev = expected.clone();
            rev.reverse();
            let got = ok(h.search_contents(&json!({"query": query, "limit": 1000})));
            assert_eq!(ids(&got), rev, "{query} recent first");
            for item in got["items"].as_array().unwrap() {
                let i: usize = item["item_id"].as_str().unwrap()[1..].parse().unwrap();
                let want = texts[i][..texts[i].find(query).unwrap()].chars().count();
                assert_eq!(item["match_offset_chars"], want);
            }
        }
    }

    #[test]
    fn matches_never_span_items() {
        let h = build(&[
            msg("a", "user", "xxfoo"),
            msg("b", "user", "barxx"),
            msg("c", "user", "foo"),
            msg("d", "user", "bar"),
        ]);
        for recent_first in [true, false] {
            let v =
                ok(h.search_contents(&json!({"query": "foobar", "recent_first": recent_first})));
            assert!(ids(&v).is_empty(), "{v}");
        }
        let h = build(&[
            msg("a", "user", "foobar"),
            msg("b", "user", "xxfoo"),
            msg("c", "user", "barfoobar"),
        ]);
        for recent_first in [true, false] {
            let mut got = ids(&ok(h.search_contents(
                &json!({"query": "foobar", "recent_first": recent_first}),
            )));
            got.sort();
            assert_eq!(got, ["a", "c"]);
        }
        let v = ok(h.search_contents(&json!({"query": "foobar"})));
        assert_eq!(v["items"][0]["match_offset_chars"], 3);
    }

    #[test]
    fn list_items_limits_and_order() {
        let h = fixture();
        let v = ok(h.list_items(&json!({"limit": 2})));
        assert_eq!(ids(&v), ["10", "09"]);
        assert_eq!(v["has_more"], true);
        let v = ok(h.list_items(
            &json!({"limit": 2, "recent_first": false, "window_id": "pcw:sess1:0badcafe"}),
        ));
        assert_eq!(ids(&v), ["06", "07"]);
        let v = ok(h.list_items(&json!({"window_id": "pcw:sess1:root"})));
        assert_eq!(ids(&v), ["04", "03", "02"]);
        assert_eq!(v["has_more"], false);
        let many: Vec<Entry> = (0..60)
            .map(|i| msg(&format!("{i:03}"), "user", "x"))
            .collect();
        let v = ok(build(&many).list_items(&json!({})));
        assert_eq!(
            v["items"].as_array().unwrap().len(),
            DEFAULT_LIST_ITEMS_LIMIT
        );
        assert_eq!(v["has_more"], true);
    }

    #[test]
    fn list_windows_limit_and_order() {
        let h = fixture();
        let v = ok(h.list_windows(&json!({"limit": 1})));
        assert_eq!(v["windows"].as_array().unwrap().len(), 1);
        assert_eq!(v["windows"][0]["window_id"], "pcw:sess1:0badcafe");
        let v = ok(h.list_windows(&json!({"recent_first": false})));
        assert_eq!(v["windows"][0]["window_id"], "pcw:sess1:root");
        assert_eq!(v["windows"][0]["created_at"], "2025-01-01T00:00:01Z");
    }

    #[test]
    fn parsed_lines_feed_history() {
        let lines = [
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"T","message":{"role":"user","content":[{"type":"text","text":"find me"}]}}"#,
            r#"{"type":"compaction","id":"c1","parentId":"a1","timestamp":"T","summary":"S","firstKeptEntryId":"a1","tokensBefore":5,"details":{"relay":"window","windowId":"pcw:sess1:12345678"}}"#,
        ];
        let mut h = History::new(S);
        for l in lines {
            let Line::Entry(e) = parse_line(l).unwrap() else {
                panic!()
            };
            h.push(&e);
        }
        assert_eq!(h.current_window_id(), "pcw:sess1:12345678");
        let v = ok(h.search_contents(&json!({"query": "find"})));
        assert_eq!(v["items"][0]["window_id"], "pcw:sess1:root");
    }

    #[test]
    fn memory_stays_close_to_text_size() {
        let big = "x".repeat(4000);
        let entries: Vec<Entry> = (0..2000)
            .map(|i| msg(&format!("{i:08x}"), "user", &big))
            .collect();
        let mut h = build(&entries);
        h.shrink_to_fit();
        assert_eq!(h.text_bytes(), 8_000_000);
        assert!(
            h.heap_bytes() < h.text_bytes() * 3 / 2,
            "{} vs {}",
            h.heap_bytes(),
            h.text_bytes()
        );
    }

    #[test]
    fn snapshot_list_windows() {
        insta::assert_snapshot!(fixture().list_windows(&json!({})).text);
    }

    #[test]
    fn snapshot_list_items() {
        insta::assert_snapshot!(
            fixture()
                .list_items(&json!({"max_chars_per_item": 12}))
                .text
        );
    }

    #[test]
    fn snapshot_read_item() {
        let h = fixture();
        insta::assert_snapshot!(
            h.read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "03", "offset_chars": 3, "limit_chars": 10})).text
        );
    }

    #[test]
    fn snapshot_search_contents() {
        insta::assert_snapshot!(fixture().search_contents(&json!({"query": "parser"})).text);
    }

    #[test]
    fn snapshot_error() {
        insta::assert_snapshot!(
            fixture()
                .read_item(&json!({"window_id": "pcw:sess1:root", "item_id": "06"}))
                .text
        );
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1000))]
            /// Search agrees with a naive per-item `contains`, in both orders, with any filter.
            #[test]
            fn search_matches_naive(
                texts in proptest::collection::vec("[ab😀]{0,8}", 1..12),
                query in "[ab😀]{1,3}",
                tools in proptest::collection::vec(0u8..3, 12),
                recent_first in any::<bool>(),
                only_tool in any::<bool>(),
            ) {
                let mut h = History::new(S);
                let mut expected = Vec::new();
                for (i, t) in texts.iter().enumerate() {
                    let id = format!("e{i}");
                    let is_tool = tools[i] == 0;
                    if is_tool { h.push(&tool(&id, "read", t)); } else { h.push(&msg(&id, "user", t)); }
                    if t.contains(query.as_str()) && (!only_tool || is_tool) {
                        expected.push(id);
                    }
                }
                if recent_first { expected.reverse(); }
                let mut args = json!({"query": query, "recent_first": recent_first, "limit": 100});
                if only_tool { args["role"] = json!("tool"); }
                let v = ok(h.search_contents(&args));
                prop_assert_eq!(ids(&v), expected);
            }

            /// The vectorised counts agree with the standard library on any text.
            #[test]
            fn counts_match_std(text in "(\\PC|😀|é|\n){0,300}", pad in 0usize..200) {
                let text = format!("{}{text}", "x".repeat(pad));
                prop_assert_eq!(char_count(&text), text.chars().count());
                prop_assert_eq!(utf16_len(&text), text.encode_utf16().count());
            }
        }

        /// Newest-first search over an arena of many chunks (the chunk grows as the scan goes
        /// back) finds the same items as a naive scan, including matches across chunk edges.
        #[test]
        fn newest_first_search_over_a_large_arena() {
            let mut h = History::new(S);
            let mut texts = Vec::new();
            let mut seed = 7u64;
            for i in 0..3000 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let len = 200 + (seed >> 33) as usize % 5000;
                let mut t = "abcdefgh".repeat(len / 8);
                if (seed >> 20).is_multiple_of(97) || i == 3 {
                    let at = (seed >> 40) as usize % t.len();
                    t.insert_str(at, "NEEDLE");
                }
                if i % 700 == 5 {
                    // A needle split over two items must not match.
                    t.push_str("NEED");
                }
                if i % 700 == 6 {
                    t.insert_str(0, "LE");
                }
                h.push(&msg(&format!("e{i}"), "user", &t));
                texts.push(t);
            }
            assert!(h.text_bytes() > 6 << 20, "spans several chunk sizes");
            let all: Vec<String> = (0..texts.len())
                .rev()
                .filter(|&i| texts[i].contains("NEEDLE"))
                .map(|i| format!("e{i}"))
                .collect();
            assert!(all.len() > 20);
            for limit in [1, 5, all.len(), all.len() + 10] {
                let v = ok(h.search_contents(&json!({"query": "NEEDLE", "limit": limit})));
                assert_eq!(
                    ids(&v),
                    all[..limit.min(all.len())].to_vec(),
                    "limit {limit}"
                );
            }
            let v = ok(h.search_contents(
                &json!({"query": "NEEDLE", "recent_first": false, "limit": 1000}),
            ));
            let mut forward = all.clone();
            forward.reverse();
            assert_eq!(ids(&v), forward);
        }
    }
}
