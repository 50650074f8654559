//! The four `history_*` tools over the mirror: `history_list_windows`, `history_list_items`,
//! `history_read_item` and `history_search_contents`.
//!
//! Contract: each tool takes the model's JSON arguments, decodes them with [`args::decode`] (its
//! parameters are the structs of [`crate::args`]) and answers a [`ToolOutput`]: compact JSON on
//! success, the one argument error format otherwise. Offsets and lengths count Unicode
//! characters, never bytes; no text is ever cut inside a character.

use serde_json::{json, Map, Value};

use super::search::{Filter, Hit};
use super::store::{History, IdKey, Interner, Role, NONE};
use super::text::TextUnavailable;
use crate::args;
use crate::text::{byte_at_char, char_count};
use crate::ToolOutput;

impl History {
    /// `history_list_windows`: lists the context windows of this session branch (a new window
    /// starts at every compaction/reset), newest first unless `recent_first` is false, at most
    /// `limit` of them. Each window has its `window_id`, `item_count`, `created_at`, whether it
    /// is the `current` one, what opened it (`opened_by`: root, handoff, reset, compaction) and
    /// the budget `commit` type of that reset (or null); both marker shapes are read
    /// ([`crate::entry::WindowMarker`]). Parameters: [`args::HistoryListWindows`].
    pub fn list_windows(&self, args: &Value) -> ToolOutput {
        let a: args::HistoryListWindows = match args::decode(args::HISTORY_LIST_WINDOWS, args) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let limit = a.limit.map_or(usize::MAX, |l| l.0);
        let offset = a.offset.0;
        let n = self.windows.len();
        let order: Box<dyn Iterator<Item = usize>> = if a.recent_first.0 {
            Box::new((0..n).rev())
        } else {
            Box::new(0..n)
        };
        let mut budget = args::ResultBudget::default();
        let mut capped = false;
        let windows: Vec<Value> = order
            .skip(offset)
            .take(limit)
            .map_while(|i| {
                let w = self.windows.get(i)?;
                // What opened the window: "root", "handoff", "reset" (Relay's) or "compaction"
                // (Pi's own), and the budget commit type when there was one.
                let (opened_by, commit) = match &w.opened_by {
                    None => ("root", None),
                    Some(m) => (m.kind, m.commit.as_deref()),
                };
                Some(json!({
                    "window_id": w.id,
                    "item_count": self.window_end(i).saturating_sub(w.first_item),
                    "created_at": w.created_at,
                    "current": i + 1 == n,
                    "opened_by": opened_by,
                    "commit": commit,
                }))
                .filter(|v| {
                    let fits = budget.take(v);
                    capped |= !fits;
                    fits
                })
            })
            .collect();
        let next = offset.saturating_add(windows.len());
        let out = json!({
            "total_windows": n,
            "current_window_id": self.current_window_id(),
            "windows": windows,
        });
        args::paged(out, next, next < n, capped, "the rest")
    }

    /// `history_list_items`: lists durable history items (messages, tool results, compaction
    /// summaries), including those from earlier windows, optionally filtered by window, role,
    /// tool name and tool namespace. Each item's `content` is cut to `max_chars_per_item`
    /// characters (`truncated`, `total_chars` tell); `history_read_item` reads the rest.
    /// `has_more` says whether more items matched. Parameters: [`args::HistoryListItems`].
    pub fn list_items(&self, args: &Value) -> ToolOutput {
        const TOOL: &str = args::HISTORY_LIST_ITEMS;
        let (a, filter) = match self.scoped::<args::HistoryListItems>(TOOL, args) {
            Ok(decoded) => decoded,
            Err(e) => return e,
        };
        let (limit, max_chars, offset) = (a.limit.0, a.max_chars_per_item.0, a.offset.0);
        let mut found = Vec::new();
        let mut seen = 0usize;
        self.for_each_candidate(&filter, a.recent_first.0, |i| {
            seen += 1;
            if seen > offset {
                found.push(i);
            }
            found.len() <= limit
        });
        let mut has_more = found.len() > limit;
        found.truncate(limit);
        // Items go in while the result has room; the one that meets the cap is cut to the room
        // left (`truncated`, read the rest with history_read_item), the rest wait for next_offset.
        let mut budget = args::ResultBudget::default();
        let mut capped = false;
        let mut items: Vec<Value> = Vec::new();
        for i in found.iter().copied() {
            let Some(m) = self.items.get(i) else { continue };
            let text = match self.item_text(m) {
                Ok(text) => text,
                Err(e) => return unreadable(TOOL, &e),
            };
            let wanted = text
                .get(..byte_at_char(&text, max_chars))
                .unwrap_or_default();
            let mut v = self.item_head(i);
            v.insert("total_chars".into(), m.chars.into());
            v.insert("truncated".into(), false.into());
            let shown = match budget.fit_text(&v, "content", wanted) {
                Some(shown) if !shown.is_empty() || wanted.is_empty() => shown,
                _ => {
                    capped = true;
                    break;
                }
            };
            v.insert("truncated".into(), (shown.len() < text.len()).into());
            v.insert("content".into(), shown.into());
            let v = Value::Object(v);
            budget.take(&v);
            items.push(v);
            if shown.len() < wanted.len() {
                capped = true;
                break;
            }
        }
        has_more |= items.len() < found.len();
        let next = offset.saturating_add(items.len());
        let out = json!({ "items": items, "has_more": has_more });
        let the_rest = "the next items; read a cut item whole with history_read_item";
        args::paged(out, next, has_more, capped, the_rest)
    }

    /// `history_read_item`: reads a range of Unicode characters of one history item, from
    /// `offset_chars`, at most `limit_chars`. `next_offset_chars` is where to continue, or null
    /// at the end. Parameters: [`args::HistoryReadItem`].
    pub fn read_item(&self, args: &Value) -> ToolOutput {
        const TOOL: &str = args::HISTORY_READ_ITEM;
        let a: args::HistoryReadItem = match args::decode(TOOL, args) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let (window_id, item_id) = (a.window_id.0.as_str(), a.item_id.0.as_str());
        let (offset, limit) = (a.offset_chars.0, a.limit_chars.0);
        if !self.window_index.contains_key(window_id) {
            return args::invalid(TOOL, "window_id", unknown_window(window_id));
        }
        let Some((item, m)) = self
            .position(IdKey::of(item_id), item_id)
            .and_then(|p| self.entries.get(p as usize))
            .map(|e| e.item)
            .filter(|&i| i != NONE)
            .and_then(|i| Some((i as usize, self.items.get(i as usize)?)))
        else {
            return args::invalid(
                TOOL,
                "item_id",
                format!(
                    "is not an item of this session: {} (list items with history_list_items)",
                    args::quote(&item_id.into())
                ),
            );
        };
        let actual = self
            .windows
            .get(m.window as usize)
            .map_or("", |w| w.id.as_str());
        if actual != window_id {
            return args::invalid(
                TOOL,
                "item_id",
                format!("names an item of window \"{actual}\", not of window_id \"{window_id}\""),
            );
        }
        if offset > m.chars {
            return args::invalid(
                TOOL,
                "offset_chars",
                format!(
                    "is {offset}, past the end of the item (total_chars {})",
                    m.chars
                ),
            );
        }
        let text = match self.item_text(m) {
            Ok(text) => text,
            Err(e) => return unreadable(TOOL, &e),
        };
        // An all-ASCII item (the usual case): characters are bytes.
        let ascii = m.chars == text.len();
        let from = if ascii {
            offset
        } else {
            byte_at_char(&text, offset)
        };
        let rest = text.get(from..).unwrap_or_default();
        let content = if ascii {
            rest.get(..limit.min(rest.len())).unwrap_or_default()
        } else {
            rest.get(..byte_at_char(rest, limit)).unwrap_or_default()
        };
        // The reply holds at most MAX_RESULT_BYTES: a longer range is cut, and next_offset_chars
        // continues right after what was shown.
        let mut v = self.item_head(item);
        v.insert("offset_chars".into(), offset.into());
        v.insert("total_chars".into(), m.chars.into());
        v.insert("next_offset_chars".into(), Value::Null);
        let budget = args::ResultBudget::default();
        let shown = budget.fit_text(&v, "content", content).unwrap_or_default();
        let capped = shown.len() < content.len();
        let content = shown;
        let taken = if ascii {
            content.len()
        } else {
            char_count(content)
        };
        let next = offset + taken;
        v.insert(
            "next_offset_chars".into(),
            if next < m.chars {
                next.into()
            } else {
                Value::Null
            },
        );
        v.insert("content".into(), content.into());
        if capped {
            v.insert(
                "capped".into(),
                args::capped_note(&format!(
                    "{taken} of the {limit} characters asked for are shown; continue with offset_chars {next}"
                ))
                .into(),
            );
        }
        ToolOutput::json(&Value::Object(v))
    }

    /// `history_search_contents`: case-sensitive literal substring search over durable history
    /// (all windows unless `window_id` is given); no semantic search. One result per matching
    /// item: its first match offset (`match_offset_chars`) and a snippet of up to 80 characters
    /// each side (starting at `snippet_offset_chars`). Parameters:
    /// [`args::HistorySearchContents`].
    pub fn search_contents(&self, args: &Value) -> ToolOutput {
        const TOOL: &str = args::HISTORY_SEARCH_CONTENTS;
        let (a, filter) = match self.scoped::<args::HistorySearchContents>(TOOL, args) {
            Ok(decoded) => decoded,
            Err(e) => return e,
        };
        let (query, limit, offset) = (a.query.0.as_str(), a.limit.0, a.offset.0);
        let want = offset.saturating_add(limit).saturating_add(1);
        let hits = match self.search(query, &filter, a.recent_first.0, want) {
            Ok(hits) => hits,
            Err(e) => return unreadable(TOOL, &e),
        };
        let mut has_more = hits.len() > offset.saturating_add(limit);
        let mut budget = args::ResultBudget::default();
        let mut capped = false;
        let mut items: Vec<Value> = Vec::new();
        for hit in hits.iter().skip(offset).take(limit) {
            let Some(v) = self.hit_json(hit, &budget) else {
                capped = true;
                break;
            };
            if !budget.take(&v) {
                capped = true;
                break;
            }
            items.push(v);
        }
        has_more |= capped;
        let next = offset.saturating_add(items.len());
        let out = json!({ "items": items, "has_more": has_more });
        args::paged(out, next, has_more, capped, "the next items")
    }

    // -----------------------------------------------------------------------------------------
    // Internals of the tools
    // -----------------------------------------------------------------------------------------

    /// Resolves the filter arguments. An unknown window is an error; a tool name or namespace
    /// that no item carries is not (nothing matches).
    /// A scoped tool's arguments and the filter they ask for.
    fn scoped<A: args::ToolArgs + Scoped>(
        &self,
        tool: &str,
        args: &Value,
    ) -> Result<(A, Filter), ToolOutput> {
        let a: A = args::decode(tool, args)?;
        let (window_id, role, tool_name, tool_namespace) = a.scope();
        let filter = self.filter(tool, window_id, role, tool_name, tool_namespace)?;
        Ok((a, filter))
    }

    fn filter(
        &self,
        tool: &str,
        window_id: Option<&args::Text>,
        role: Option<&args::RoleName>,
        tool_name: Option<&args::Text>,
        tool_namespace: Option<&args::Text>,
    ) -> Result<Filter, ToolOutput> {
        let (lo, hi) = match window_id {
            Some(args::Text(id)) => {
                let Some(w) = self.window_index.get(id).map(|&w| w as usize) else {
                    return Err(args::invalid(tool, "window_id", unknown_window(id)));
                };
                let first = self.windows.get(w).map_or(0, |w| w.first_item);
                (first, self.window_end(w))
            }
            None => (0, self.items.len()),
        };
        let mut impossible = false;
        let mut lookup = |interner: &Interner, name: Option<&args::Text>| match name {
            Some(args::Text(name)) => {
                let id = interner.ids.get(name).copied();
                impossible |= id.is_none();
                id
            }
            None => None,
        };
        let tool_id = lookup(&self.tools, tool_name);
        let namespace = lookup(&self.namespaces, tool_namespace);
        Ok(Filter {
            lo,
            hi,
            // The decoder only lets the four role names through.
            role: role.and_then(|r| Role::parse(&r.0)),
            tool: tool_id,
            namespace,
            impossible,
        })
    }

    /// The identifying fields of an item, in output order.
    fn item_head(&self, i: usize) -> Map<String, Value> {
        let mut v = Map::new();
        let Some(m) = self.items.get(i) else {
            return v;
        };
        let window = self
            .windows
            .get(m.window as usize)
            .map_or("", |w| w.id.as_str());
        v.insert("window_id".into(), window.into());
        v.insert("item_id".into(), self.id_at(m.entry as usize).into());
        v.insert("role".into(), m.role.as_str().into());
        let name = |interner: &Interner, id: u32| match interner.names.get(id as usize) {
            Some(name) if id != NONE => Value::from(name.as_str()),
            _ => Value::Null,
        };
        v.insert("tool_name".into(), name(&self.tools, m.tool));
        v.insert("tool_namespace".into(), name(&self.namespaces, m.namespace));
        v
    }

    /// A search hit: the item, where its first match starts (in characters) and the snippet
    /// around it, as the search cut them from the item's text (no text is read again here).
    /// The snippet is cut to what `budget` leaves (a very long query); `None` when nothing fits.
    fn hit_json(&self, hit: &Hit, budget: &args::ResultBudget) -> Option<Value> {
        let m = self.items.get(hit.item)?;
        let mut v = self.item_head(hit.item);
        v.insert("total_chars".into(), m.chars.into());
        v.insert("match_offset_chars".into(), hit.text.match_chars.into());
        v.insert("snippet_offset_chars".into(), hit.text.snippet_chars.into());
        let snippet = hit.text.snippet.as_str();
        let shown = budget.fit_text(&v, "snippet", snippet)?;
        if shown.is_empty() && !snippet.is_empty() {
            return None;
        }
        v.insert("snippet".into(), shown.into());
        Some(Value::Object(v))
    }
}

/// What a tool answers when a text it needs could not be read back from the session file.
fn unreadable(tool: &str, e: &TextUnavailable) -> ToolOutput {
    ToolOutput::error(format!(
        "{tool}: the history's text could not be read back from the session file: {e}. \
         Relay loads the session's history again; call the tool again in a moment"
    ))
}

/// What an unknown `window_id` reads as.
fn unknown_window(id: &str) -> String {
    format!(
        "is not a window of this session: {} (list windows with history_list_windows)",
        args::quote(&id.into())
    )
}

/// The arguments of a history tool that narrow the items it reads: window, role, tool name and
/// namespace.
trait Scoped {
    fn scope(&self) -> Scope<'_>;
}

type Scope<'a> = (
    Option<&'a args::Text>,
    Option<&'a args::RoleName>,
    Option<&'a args::Text>,
    Option<&'a args::Text>,
);

/// One `impl Scoped` per tool whose arguments have the four scoping fields.
macro_rules! scoped {
    ($($t:ty),*) => {$(
        impl Scoped for $t {
            fn scope(&self) -> Scope<'_> {
                let s = self;
                (s.window_id.as_ref(), s.role.as_ref(), s.tool_name.as_ref(), s.tool_namespace.as_ref())
            }
        }
    )*};
}

scoped!(args::HistoryListItems, args::HistorySearchContents);
