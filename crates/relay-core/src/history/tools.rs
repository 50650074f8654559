//! The four `history_*` tools over the mirror: `history_list_windows`, `history_list_items`,
//! `history_read_item` and `history_search_contents`.
//!
//! Contract: each tool takes the model's JSON arguments and answers a [`ToolOutput`]: compact JSON
//! on success, a model-readable error naming the offending argument otherwise. Offsets and lengths
//! count Unicode characters, never bytes; no text is ever cut inside a character.

use serde_json::{json, Map, Value};

use super::mirror::{History, IdKey, Interner, Role, NONE, ROLE_NAMES};
use super::search::Filter;
use super::{
    DEFAULT_LIST_ITEMS_LIMIT, DEFAULT_MAX_CHARS_PER_ITEM, DEFAULT_READ_LIMIT_CHARS,
    DEFAULT_SEARCH_LIMIT, SNIPPET_CONTEXT_CHARS,
};
use crate::text::{byte_at_char, byte_before_chars, char_count};
use crate::ToolOutput;

impl History {
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
        let snippet_from = byte_before_chars(before, SNIPPET_CONTEXT_CHARS);
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

fn respond(result: Result<Value, String>) -> ToolOutput {
    match result {
        Ok(v) => ToolOutput::json(&v),
        Err(e) => ToolOutput::error(e),
    }
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
