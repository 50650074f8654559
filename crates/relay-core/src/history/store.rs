//! The branch mirror: an incremental copy of the current Pi branch, split into context windows at
//! every compaction, with every item's place in one text.
//!
//! Layout (chosen so that per-request work never depends on session length):
//! - the items' texts, one after another, make one text; each item keeps its `(start, end)` byte
//!   positions in it plus compact metadata, so items are contiguous and ordered root→leaf; the
//!   bytes are in the arena (items fed live, or loaded without a file) or only in the session
//!   file, whose line for the item is kept and read back when a tool needs it (`text.rs`): a
//!   history loaded from a large file holds an index of it, not a copy;
//! - entry ids map to their position in O(1) (`contains`, `read_item`);
//! - windows are a small vector of `(id, first item)`; a window's items are a contiguous range;
//! - per-role, per-tool-name and per-tool-namespace posting lists (item indices, ascending) let
//!   filtered listings skip non-matching items;
//! - navigation to an ancestor pops entries, items, postings and windows from the end.
//!
//! Contract: [`History::push`] appends in O(the entry's text) and ignores an id already present;
//! [`History::truncate_after`] undoes pushes in O(removed); the mirror holds nothing a replay of
//! the branch would not rebuild.
//!
//! **The root window's id comes from the branch.** It is `pcw:<session>:root` for the session
//! that wrote the root window's first Relay entry naming it (its boot block's
//! `current_window_id`, a Relay record's `windowId`, the first reset's `first_window_id`), so a
//! `/fork` or `/clone`, which copies those entries into a session of another id, keeps the id the
//! copied entries name. Before any such entry it is the current session's.

use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;

use std::sync::Arc;

use crate::entry::{Entry, EntryKind, LineAt, WindowMarker};
use crate::text::char_count;

pub(super) const NONE: u32 = u32::MAX;

/// The role of a history item, as the tools show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    User = 0,
    Assistant = 1,
    Tool = 2,
    System = 3,
}

/// The lines of the session file a history was loaded from. The host provides it (relay-io's
/// `SessionLines`: a handle kept open on the file, read with `pread`), so that this crate does
/// no IO of its own.
pub trait LineSource: Send + Sync + std::fmt::Debug {
    /// Appends to `out` the `len` bytes of the file at `offset` (fewer only at the end of the
    /// file). An error names the file and says why.
    fn read(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> Result<(), String>;
}

/// Where an item's text is (from [`ItemMeta`]).
pub(super) enum Place {
    /// In the arena, from this byte on.
    Arena(usize),
    /// Only in the session file, on this line.
    Line(LineAt),
}

const ROLES: [Role; 4] = [Role::User, Role::Assistant, Role::Tool, Role::System];

/// The roles of history items, as the tools show them and accept them in filters (named in
/// `args`, whose filter kinds check them).
pub use crate::args::ROLE_NAMES;

impl Role {
    pub(super) const fn as_str(self) -> &'static str {
        let [user, assistant, tool, system] = ROLE_NAMES;
        match self {
            Role::User => user,
            Role::Assistant => assistant,
            Role::Tool => tool,
            Role::System => system,
        }
    }

    pub(super) fn parse(s: &str) -> Option<Role> {
        ROLES.into_iter().find(|r| r.as_str() == s)
    }
}

#[derive(Debug, Clone)]
pub(super) struct ItemMeta {
    /// Byte positions in the history's text.
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) chars: usize,
    /// Where the bytes are: at `held` in the arena when `line_len` is [`IN_ARENA`], else the
    /// session file's line at offset `held` of `line_len` bytes.
    pub(super) held: u64,
    pub(super) line_len: u32,
    /// For a text in the file: 32 bits of its hash ([`text_check`]), compared when it is read back.
    pub(super) check: u32,
    pub(super) entry: u32,
    pub(super) window: u32,
    pub(super) tool: u32,
    pub(super) namespace: u32,
    pub(super) role: Role,
}

/// [`ItemMeta::line_len`] of an item whose text is in the arena.
const IN_ARENA: u32 = u32::MAX;

impl ItemMeta {
    pub(super) fn place(&self) -> Place {
        if self.line_len == IN_ARENA {
            Place::Arena(self.held as usize)
        } else {
            Place::Line(LineAt {
                offset: self.held,
                len: self.line_len,
            })
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct EntryRec {
    /// The entry's id is `ids[id_start..id_end]` (all ids share one string, root first).
    pub(super) id_start: u32,
    pub(super) id_end: u32,
    pub(super) item: u32,
    pub(super) opens_window: bool,
}

#[derive(Debug, Clone)]
pub(super) struct WindowRec {
    pub(super) id: String,
    pub(super) first_item: usize,
    pub(super) created_at: Option<String>,
    /// What opened the window (`None` for the root window).
    pub(super) opened_by: Option<WindowMarker>,
}

/// Interned strings (tool names or namespaces) with the ascending item indices carrying each.
#[derive(Debug, Clone, Default)]
pub(super) struct Interner {
    pub(super) names: Vec<String>,
    pub(super) ids: HashMap<String, u32>,
    pub(super) postings: Vec<Vec<u32>>,
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
        if let Some(postings) = self.postings.get_mut(id as usize) {
            postings.push(item);
        }
        id
    }

    fn heap_bytes(&self) -> usize {
        let names: usize = self.names.iter().map(|n| 2 * n.capacity() + 32).sum();
        let postings: usize = self.postings.iter().map(|p| p.capacity() * 4 + 24).sum();
        names + postings + self.ids.capacity() * 40
    }
}

/// The incremental mirror of one session branch and the history tools over it.
#[derive(Debug, Clone)]
pub struct History {
    pub(super) session_id: String,
    /// The texts held in memory (see [`ItemMeta::held`]).
    pub(super) arena: String,
    /// Bytes of the history's text (the end of the last item).
    pub(super) text_len: usize,
    /// The session file the texts not in the arena are read back from.
    pub(super) lines: Option<Arc<dyn LineSource>>,
    /// The newest texts of the items kept in the file, also held in memory (see [`Recent`]).
    pub(super) recent: Recent,
    /// A text could not be read back (the file changed under the history): the host loads the
    /// session again ([`History::unreadable`]).
    pub(super) unreadable: std::cell::Cell<bool>,
    pub(super) items: Vec<ItemMeta>,
    pub(super) entries: Vec<EntryRec>,
    /// Every entry id, one after the other (see [`EntryRec`]).
    pub(super) ids: String,
    /// Positions in `entries` with their id's [`IdKey`], found by its hash.
    pub(super) entry_index: hashbrown::HashTable<(u32, IdKey)>,
    pub(super) windows: Vec<WindowRec>,
    pub(super) window_index: HashMap<String, u32>,
    /// The position of the entry that named the root window's id (see the module documentation),
    /// `None` while none did.
    pub(super) root_named_at: Option<u32>,
    pub(super) tools: Interner,
    pub(super) namespaces: Interner,
    pub(super) roles: [Vec<u32>; 4],
    /// Which blocks of the text may hold a needle (see `blocks.rs`), in step with the items.
    pub(super) blocks: super::blocks::Blocks,
    /// How the search reads the text (chunk sizes).
    pub(super) tuning: Tuning,
}

/// Sizes that shape the search (the unit tests make them small, so that their histories span
/// many blocks and chunks).
#[derive(Debug, Clone, Copy)]
pub(super) struct Tuning {
    /// Bytes per block of the block filter.
    pub(super) block: usize,
    /// The first chunk a newest-first search reads (it doubles up to `max_chunk`).
    pub(super) first_chunk: usize,
    /// The largest chunk a newest-first search reads at once.
    pub(super) max_chunk: usize,
    /// A newest-first search that has not finished after the largest chunk scans the rest at
    /// once when at least this much is left.
    pub(super) bulk_scan_min: usize,
    /// Bytes of the newest texts of a loaded history kept in memory as well ([`Recent`]).
    pub(super) recent: usize,
}

/// The newest texts of the items whose texts are in the file, held in memory too: what a search
/// that stops early (a common needle, newest first) and the tools' reads of the last windows
/// need, without reading the file back. At most about [`Tuning::recent`] bytes: the texts of the
/// items kept in the file from position `base` of the history's text on. Only the whole load adds
/// such items, one after another, so their texts are contiguous.
#[derive(Debug, Clone, Default)]
pub(super) struct Recent {
    pub(super) base: usize,
    pub(super) text: Vec<u8>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            block: super::blocks::Blocks::DEFAULT_BLOCK,
            first_chunk: 1 << 16,
            max_chunk: 4 << 20,
            bulk_scan_min: 16 << 20,
            recent: 4 << 20,
        }
    }
}

impl History {
    /// An empty history for the session `session_id`, holding only the root window.
    pub fn new(session_id: &str) -> Self {
        History::with_tuning(session_id, Tuning::default())
    }

    /// [`History::new`] with other search sizes.
    pub(super) fn with_tuning(session_id: &str, tuning: Tuning) -> Self {
        let root = format!("pcw:{session_id}:root");
        let mut window_index = HashMap::default();
        window_index.insert(root.clone(), 0);
        History {
            session_id: session_id.to_string(),
            arena: String::new(),
            text_len: 0,
            lines: None,
            recent: Recent::default(),
            unreadable: std::cell::Cell::new(false),
            items: Vec::new(),
            entries: Vec::new(),
            ids: String::new(),
            entry_index: hashbrown::HashTable::new(),
            windows: vec![WindowRec {
                id: root,
                first_item: 0,
                created_at: None,
                opened_by: None,
            }],
            window_index,
            root_named_at: None,
            tools: Interner::default(),
            namespaces: Interner::default(),
            roles: Default::default(),
            blocks: super::blocks::Blocks::with_block(tuning.block),
            tuning,
        }
    }

    /// The session file the entries pushed with their line's place ([`History::push_at`]) are
    /// read back from.
    pub fn read_texts_from(&mut self, lines: Arc<dyn LineSource>) {
        self.lines = Some(lines);
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Appends the next entry of the branch (root→leaf order). An entry already present is
    /// ignored. Cost: proportional to the entry's text.
    pub fn push(&mut self, entry: &Entry) {
        self.push_at(entry, None);
    }

    /// [`History::push`] for an entry whose line is at `at` in the file given to
    /// [`History::read_texts_from`]: its text is hashed for the block filter and measured, not
    /// kept (without a file, or without `at`, it is kept in the arena).
    pub fn push_at(&mut self, entry: &Entry, at: Option<LineAt>) {
        let key = IdKey::of(&entry.id);
        if self.position(key, &entry.id).is_some() {
            return;
        }
        if self.entries.is_empty() && self.windows.len() == 1 {
            if let Some(root) = self.windows.first_mut() {
                root.created_at = Some(entry.timestamp.clone());
            }
        }
        let pos = self.entries.len() as u32;
        if self.root_named_at.is_none() && self.windows.len() == 1 {
            if let Some(root) = root_id_named_by(&entry.kind) {
                self.rename_root(root);
                self.root_named_at = Some(pos);
            }
        }
        let mut opens_window = false;
        if let EntryKind::Compaction { details, .. } = &entry.kind {
            let id = self.compaction_window_id(&entry.id, details);
            let index = self.windows.len() as u32;
            self.window_index.insert(id.clone(), index);
            self.windows.push(WindowRec {
                id,
                first_item: self.items.len(),
                created_at: Some(entry.timestamp.clone()),
                opened_by: Some(WindowMarker::of(details)),
            });
            opens_window = true;
        }
        let at = at.filter(|_| self.lines.is_some());
        let item = match item_parts(&entry.kind) {
            Some((role, text, tool)) => self.add_item(pos, role, text, tool, at),
            None => NONE,
        };
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
    pub(super) fn position(&self, key: IdKey, id: &str) -> Option<u32> {
        self.entry_index
            .find(key.hash(), |&(p, k)| {
                k == key && entry_id(&self.entries, &self.ids, p) == id
            })
            .map(|&(p, _)| p)
    }

    /// The id of the entry at `pos` (root first).
    pub fn entry_id_at(&self, pos: usize) -> &str {
        self.id_at(pos)
    }

    /// The id of the entry at `pos`.
    pub(super) fn id_at(&self, pos: usize) -> &str {
        entry_id(&self.entries, &self.ids, pos as u32)
    }

    fn compaction_window_id(&self, entry_id: &str, details: &Value) -> String {
        // Another package's compaction: named after the session the root window's id names, so
        // that a fork of the branch keeps it too.
        let session = self
            .windows
            .first()
            .and_then(|w| w.id.strip_prefix("pcw:"))
            .and_then(|rest| rest.strip_suffix(":root"))
            .unwrap_or(self.session_id.as_str());
        crate::records::relay_window_id(details)
            .unwrap_or_else(|| format!("pcw:{session}:{entry_id}"))
    }

    fn add_item(
        &mut self,
        entry: u32,
        role: Role,
        text: &str,
        tool: Option<&str>,
        at: Option<LineAt>,
    ) -> u32 {
        let index = self.items.len() as u32;
        let start = self.text_len;
        self.text_len += text.len();
        self.blocks.add(start, text.as_bytes());
        let (held, line_len, check) = match at {
            Some(at) if at.len != IN_ARENA => {
                self.keep_recent(start, text.as_bytes());
                (at.offset, at.len, text_check(text.as_bytes()))
            }
            _ => {
                let held = self.arena.len() as u64;
                self.arena.push_str(text);
                (held, IN_ARENA, 0)
            }
        };
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
        if let Some(postings) = self.roles.get_mut(role as usize) {
            postings.push(index);
        }
        self.items.push(ItemMeta {
            start,
            end: self.text_len,
            chars: char_count(text),
            held,
            line_len,
            check,
            entry,
            window: (self.windows.len() - 1) as u32,
            tool: tool_id,
            namespace: ns_id,
            role,
        });
        index
    }

    /// Holds the text of the item kept in the file that starts at `start` among the recent ones,
    /// dropping the oldest past [`Tuning::recent`] bytes (whole items, a fifth at a time).
    fn keep_recent(&mut self, start: usize, text: &[u8]) {
        let cap = self.tuning.recent;
        let recent = &mut self.recent;
        if text.len() > cap {
            // Larger than all the recent texts may be (a huge tool output): none is held, and
            // the next item starts them again.
            recent.base = start + text.len();
            recent.text.clear();
            return;
        }
        if recent.base + recent.text.len() != start {
            // After a truncation below the recent texts, or live items between: start again.
            recent.base = start;
            recent.text.clear();
        }
        recent.text.extend_from_slice(text);
        if recent.text.len() > cap + cap / 4 {
            let keep_from = recent.base + recent.text.len() - cap;
            // The first earlier item that starts at or after `keep_from`, else this one.
            let cut = self
                .items
                .get(self.items.partition_point(|m| m.start < keep_from))
                .map_or(start, |m| m.start)
                .clamp(recent.base, start);
            recent.text.drain(..cut - recent.base);
            recent.base = cut;
        }
    }

    /// The recent text of item `m` (see [`Recent`]), if held: the recent texts are the texts
    /// of the items kept in the file from position `base` on, one after another.
    pub(super) fn recent_text(&self, m: &ItemMeta) -> Option<&[u8]> {
        let r = &self.recent;
        if m.line_len == IN_ARENA || m.start < r.base {
            return None;
        }
        r.text.get(m.start - r.base..m.end - r.base)
    }

    /// The tool name and text length (characters) of the tool result at position `pos` (root
    /// first), or `None` when that entry is not a tool's result. O(1).
    pub fn tool_result_at(&self, pos: usize) -> Option<(&str, usize)> {
        let rec = self.entries.get(pos)?;
        let item = self.items.get(rec.item as usize)?;
        if item.role != Role::Tool {
            return None;
        }
        let name = self.tools.names.get(item.tool as usize)?;
        Some((name.as_str(), item.chars))
    }

    /// The text the history holds for the entry at position `pos` (root first), or `None` for an
    /// entry that carries no item (a marker, a note operation, …) or whose text could not be
    /// read back from the session file. O(1) (one line read when the text is in the file).
    pub fn entry_text(&self, pos: usize) -> Option<std::borrow::Cow<'_, str>> {
        let rec = self.entries.get(pos)?;
        let item = self.items.get(rec.item as usize)?;
        self.item_text(item).ok()
    }

    /// Whether an entry with this id has been pushed. O(1).
    pub fn contains(&self, entry_id: &str) -> bool {
        self.position(IdKey::of(entry_id), entry_id).is_some()
    }

    /// The position of the entry `entry_id` on the mirrored branch (0 = root), if pushed.
    pub fn position_of(&self, entry_id: &str) -> Option<usize> {
        self.position(IdKey::of(entry_id), entry_id)
            .map(|p| p as usize)
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
        let text_before = self.text_len;
        while self.entries.len() > pos as usize + 1 {
            let last = self.entries.len() as u32 - 1;
            let key = IdKey::of(self.id_at(last as usize));
            if let Ok(slot) = self.entry_index.find_entry(key.hash(), |&(p, _)| p == last) {
                slot.remove();
            }
            let Some(rec) = self.entries.pop() else {
                break;
            };
            self.ids.truncate(rec.id_start as usize);
            // An entry's item and window were pushed with it, so they are the last ones.
            if let Some(meta) = (rec.item != NONE).then(|| self.items.pop()).flatten() {
                let pop = |lists: &mut [Vec<u32>], i: u32| {
                    if let Some(list) = lists.get_mut(i as usize) {
                        list.pop();
                    }
                };
                pop(&mut self.roles, meta.role as u32);
                pop(&mut self.tools.postings, meta.tool);
                pop(&mut self.namespaces.postings, meta.namespace);
                self.text_len = meta.start;
                match meta.place() {
                    Place::Arena(held) => self.arena.truncate(held),
                    Place::Line(_) => {
                        let r = &mut self.recent;
                        if meta.start >= r.base {
                            r.text.truncate(meta.start - r.base);
                        } else {
                            r.text.clear();
                        }
                    }
                }
            }
            if let Some(window) = rec.opens_window.then(|| self.windows.pop()).flatten() {
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
        if self.text_len < text_before {
            self.blocks.truncated(self.text_len);
        }
        if self.root_named_at.is_some_and(|at| at > pos) {
            self.root_named_at = None;
            let own = format!("pcw:{}:root", self.session_id);
            self.rename_root(&own);
        }
        true
    }

    /// Gives the root window the id `id`.
    fn rename_root(&mut self, id: &str) {
        let Some(root) = self.windows.first_mut() else {
            return;
        };
        if root.id == id {
            return;
        }
        if self.window_index.get(&root.id) == Some(&0) {
            self.window_index.remove(&root.id);
        }
        root.id = id.to_string();
        self.window_index.insert(id.to_string(), 0);
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
        // The root window is never removed, so there always is a last one.
        self.windows.last().map_or("", |w| w.id.as_str())
    }

    /// All window ids, root first.
    pub fn window_ids(&self) -> Vec<&str> {
        self.windows.iter().map(|w| w.id.as_str()).collect()
    }

    /// Whether a text could not be read back from the session file since this history was
    /// built: it no longer matches the file, which must be loaded again.
    pub fn unreadable(&self) -> bool {
        self.unreadable.get()
    }

    /// Total bytes of item text, in memory or in the session file.
    pub fn text_bytes(&self) -> usize {
        self.text_len
    }

    /// Bytes of item text held in memory (the rest is read back from the session file).
    pub fn held_text_bytes(&self) -> usize {
        self.arena.len()
    }

    /// Approximate heap bytes held by this history (capacities, including the text arena).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.arena.capacity()
            + self.blocks.heap_bytes()
            + self.recent.text.capacity()
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
        self.blocks.shrink_to_fit();
        self.items.shrink_to_fit();
        self.entries.shrink_to_fit();
        self.ids.shrink_to_fit();
        self.entry_index.shrink_to_fit(|(_, k)| k.hash());
        for r in &mut self.roles {
            r.shrink_to_fit();
        }
    }

    pub(super) fn window_end(&self, w: usize) -> usize {
        self.windows
            .get(w + 1)
            .map_or(self.items.len(), |n| n.first_item)
    }
}

/// 32 bits of a hash of an item's text, kept for a text read back from the file: a line that
/// still has the entry's id and the text's length but another text is told apart.
pub(super) fn text_check(text: &[u8]) -> u32 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(text);
    (h.finish() >> 32) as u32
}

/// What a history item is made of an entry: its role, its text and the tool it is a result of;
/// `None` for an entry that is no item (a marker, a note operation, …).
pub(super) fn item_parts(kind: &EntryKind) -> Option<(Role, &str, Option<&str>)> {
    match kind {
        EntryKind::Compaction { summary, .. } | EntryKind::BranchSummary { summary, .. } => {
            Some((Role::System, summary, None))
        }
        EntryKind::Message(m) => {
            let role = match m.role.as_str() {
                "user" | "custom" => Role::User,
                "assistant" => Role::Assistant,
                "toolResult" | "bashExecution" => Role::Tool,
                "compactionSummary" | "branchSummary" => Role::System,
                _ => return None,
            };
            let tool = match m.role.as_str() {
                "bashExecution" => Some("bash"),
                "toolResult" => m.tool_name.as_deref(),
                _ => None,
            };
            Some((role, &m.text, tool))
        }
        EntryKind::CustomMessage { text, .. } => Some((Role::User, text, None)),
        _ => None,
    }
}

/// 32 bits of an entry id's hash, kept with its position so that the index grows without
/// reading the ids again, and compared before the ids are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct IdKey(u32);

impl IdKey {
    pub(super) fn of(id: &str) -> IdKey {
        use std::hash::BuildHasher;
        IdKey((rustc_hash::FxBuildHasher.hash_one(id) >> 32) as u32)
    }

    /// The hash the index places the key by (spread over all 64 bits).
    pub(super) fn hash(self) -> u64 {
        u64::from(self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

/// The id of the entry at `pos` of `entries`, whose ids are held in `ids`.
fn entry_id<'a>(entries: &[EntryRec], ids: &'a str, pos: u32) -> &'a str {
    entries
        .get(pos as usize)
        .and_then(|rec| ids.get(rec.id_start as usize..rec.id_end as usize))
        .unwrap_or_default()
}

/// The longest root window id adopted from the branch, in bytes (a session id is far shorter).
const MAX_ROOT_ID_BYTES: usize = 256;

/// The root window id that a Relay entry of the root window names, if it names one: the boot
/// block's `current_window_id` line, a Relay record's `windowId` (only a root id counts), the
/// first reset's `first_window_id` line.
fn root_id_named_by(kind: &EntryKind) -> Option<&str> {
    let named = match kind {
        EntryKind::CustomMessage {
            custom_type, text, ..
        } if custom_type == crate::records::BOOT_TYPE => line_value(text, "current_window_id: "),
        EntryKind::CustomMessage {
            custom_type,
            details: fields,
            ..
        }
        | EntryKind::Custom {
            custom_type,
            data: fields,
        } if custom_type.starts_with("relay/") => crate::records::named_window_id(fields),
        EntryKind::Compaction {
            summary, details, ..
        } if crate::records::is_relay_window(details) => line_value(summary, "first_window_id: "),
        _ => None,
    }?;
    let session = named.strip_prefix("pcw:")?.strip_suffix(":root")?;
    let plain = !session.is_empty()
        && named.len() <= MAX_ROOT_ID_BYTES
        && !session.chars().any(|c| c.is_whitespace() || c.is_control());
    plain.then_some(named)
}

/// The rest of the first line of `text` that starts with `key`.
fn line_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim_end)
}
