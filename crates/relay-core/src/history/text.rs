//! Where the history's texts are, and reading them back. An item's text is either in memory (the
//! arena: items fed live, and every item of a history loaded without a file) or in the session
//! file only: a history loaded from a file keeps each item's line (offset and length), reads the
//! line again when a tool needs the text, and decodes it with the same decoder the load used.
//!
//! Contract: a text read back is the text the item was added with, or an error — never another
//! text. The line must decode to an entry with the item's entry id and a text of the item's byte
//! length and hash (32 bits, kept per item); otherwise the file changed under the history (Pi rewrote it, or it was replaced by
//! another file at the same offsets) and the read fails with [`TextUnavailable`], which the tools
//! report and which asks the host to load the session again.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

use super::store::{item_parts, text_check, History, ItemMeta, Place};
use crate::entry::{last_entry_of_line, EntryKind, LineAt};

/// An item's text could not be read back from the session file (the text says why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextUnavailable(pub String);

impl std::fmt::Display for TextUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Lines read at once when the items that need reading lie this close in the file.
const READ_AHEAD: u64 = 4 << 20;

impl History {
    /// The text of item `m`: borrowed from the arena, or read back from the file.
    pub(super) fn item_text(&self, m: &ItemMeta) -> Result<Cow<'_, str>, TextUnavailable> {
        match m.place() {
            Place::Arena(a) => Ok(Cow::Borrowed(
                self.arena.get(a..a + (m.end - m.start)).unwrap_or_default(),
            )),
            Place::Line(at) => {
                if let Some(text) = self.recent_text(m) {
                    return Ok(String::from_utf8_lossy(text));
                }
                let mut buf = Vec::new();
                self.read_lines(at, u64::from(at.len), &mut buf)?;
                self.text_of_line(m, buf.get(..at.len as usize).unwrap_or_default())
                    .map(Cow::Owned)
            }
        }
    }

    /// Bytes `[lo, hi)` of the history's text when they are in memory in one piece: in the
    /// arena, or among the recent texts of a loaded history.
    pub(super) fn arena_span(&self, lo: usize, hi: usize) -> Option<&[u8]> {
        if lo >= hi {
            return Some(&[]);
        }
        let r = &self.recent;
        if lo >= r.base && hi <= r.base + r.text.len() {
            return r.text.get(lo - r.base..hi - r.base);
        }
        let a = self.items.partition_point(|m| m.end <= lo);
        let b = self.items.partition_point(|m| m.start < hi);
        let (first, last) = (self.items.get(a)?, self.items.get(b.checked_sub(1)?)?);
        let (Place::Arena(x), Place::Arena(y)) = (first.place(), last.place()) else {
            return None;
        };
        let (from, to) = (
            x + lo.saturating_sub(first.start),
            y + (hi.min(last.end) - last.start),
        );
        // Every item between is in the arena too when the arena holds as many bytes between.
        (to >= from && to - from == hi.min(last.end) - lo.max(first.start))
            .then(|| self.arena.as_bytes().get(from..to))
            .flatten()
    }

    /// Reads `len` bytes of the file from line `at` on into `out`.
    fn read_lines(&self, at: LineAt, len: u64, out: &mut Vec<u8>) -> Result<(), TextUnavailable> {
        self.read_lines_unchecked(at, len, out)
            .inspect_err(|_| self.unreadable.set(true))
    }

    fn read_lines_unchecked(
        &self,
        at: LineAt,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), TextUnavailable> {
        let Some(source) = self.lines.as_ref() else {
            return Err(TextUnavailable(
                "the history has no session file to read the text from".into(),
            ));
        };
        source
            .read(at.offset, len as usize, out)
            .map_err(TextUnavailable)?;
        if out.len() < at.len as usize {
            return Err(TextUnavailable(format!(
                "the session file ends before byte {} (it was cut or replaced since it was loaded)",
                at.offset + u64::from(at.len)
            )));
        }
        Ok(())
    }

    /// The text of item `m` from its line, checked to be the item's.
    fn text_of_line(&self, m: &ItemMeta, line: &[u8]) -> Result<String, TextUnavailable> {
        self.text_of_line_unchecked(m, line)
            .inspect_err(|_| self.unreadable.set(true))
    }

    fn text_of_line_unchecked(&self, m: &ItemMeta, line: &[u8]) -> Result<String, TextUnavailable> {
        let changed = || {
            TextUnavailable(format!(
                "the session file changed since it was loaded: the line of entry {} no longer holds it",
                self.id_at(m.entry as usize)
            ))
        };
        let line = std::str::from_utf8(line).map_err(|_| changed())?;
        let entry = last_entry_of_line(line).ok_or_else(changed)?;
        if entry.id != self.id_at(m.entry as usize) {
            return Err(changed());
        }
        let same = item_parts(&entry.kind).is_some_and(|(_, text, _)| {
            text.len() == m.end - m.start && text_check(text.as_bytes()) == m.check
        });
        if !same {
            return Err(changed());
        }
        // The decoded text itself, not a copy (an item may be a huge tool output).
        Ok(match entry.kind {
            EntryKind::Compaction { summary, .. } | EntryKind::BranchSummary { summary, .. } => {
                summary
            }
            EntryKind::Message(m) => m.text,
            EntryKind::CustomMessage { text, .. } => text,
            _ => String::new(),
        })
    }
}

/// Reads spans of the history's text (every item's text, one after another), remembering what
/// it read: the file's lines last read (neighbouring lines in one read) and the items decoded
/// from them lately. A search reads its chunks through one reader, so that an item that spans
/// many chunks (a huge tool output) is read and decoded once, not once per chunk, and the
/// lines a read-ahead brought in are not read again by the next chunk: reading a range chunk by
/// chunk reads each line once.
pub(super) struct SpanReader<'h> {
    h: &'h History,
    /// Lines of the file from byte `lines_from` on.
    lines: Vec<u8>,
    lines_from: u64,
    /// The items decoded from the file lately, by index, oldest first in `order`: about
    /// [`KEEP_DECODED`] bytes of texts (always the newest one), so that a hit found in a span
    /// is not decoded again for its first match and snippet.
    decoded: HashMap<usize, String>,
    order: VecDeque<usize>,
    decoded_bytes: usize,
}

/// Bytes of decoded texts a [`SpanReader`] keeps (more when its newest item alone is larger).
const KEEP_DECODED: usize = 2 * READ_AHEAD as usize;

impl<'h> SpanReader<'h> {
    pub(super) fn new(h: &'h History) -> Self {
        SpanReader {
            h,
            lines: Vec::new(),
            lines_from: 0,
            decoded: HashMap::new(),
            order: VecDeque::new(),
            decoded_bytes: 0,
        }
    }

    /// Bytes `[lo, hi)` of the history's text: borrowed when they are in memory in one piece,
    /// else put together, reading the lines of the items held only in the file.
    pub(super) fn span(&mut self, lo: usize, hi: usize) -> Result<Cow<'h, [u8]>, TextUnavailable> {
        let h = self.h;
        if let Some(bytes) = h.arena_span(lo, hi) {
            return Ok(Cow::Borrowed(bytes));
        }
        let a = h.items.partition_point(|m| m.end <= lo);
        let b = h.items.partition_point(|m| m.start < hi);
        let items = h.items.get(a..b).unwrap_or_default();
        let mut out = Vec::with_capacity(hi - lo);
        for (k, m) in items.iter().enumerate() {
            let (from, to) = (lo.saturating_sub(m.start), hi.min(m.end) - m.start);
            let text: &[u8] = match m.place() {
                Place::Arena(x) => h
                    .arena
                    .as_bytes()
                    .get(x..x + (m.end - m.start))
                    .unwrap_or_default(),
                Place::Line(at) => match h.recent_text(m) {
                    Some(text) => text,
                    None => self
                        .decoded(a + k, m, at, items.get(k..).unwrap_or_default())?
                        .as_bytes(),
                },
            };
            out.extend_from_slice(text.get(from..to).unwrap_or_default());
        }
        Ok(Cow::Owned(out))
    }

    /// The text of item `i`: borrowed from the arena or the recent texts, else decoded from its
    /// line (once: the reader keeps the last item it decoded).
    pub(super) fn item_text(&mut self, i: usize) -> Result<Cow<'_, str>, TextUnavailable> {
        let h = self.h;
        let Some(m) = h.items.get(i) else {
            return Ok(Cow::Borrowed(""));
        };
        match m.place() {
            Place::Line(at) if h.recent_text(m).is_none() => Ok(Cow::Borrowed(self.decoded(
                i,
                m,
                at,
                std::slice::from_ref(m),
            )?)),
            _ => h.item_text(m),
        }
    }

    /// The text of item `index` (`m`, on line `at`), decoded from the lines read, reading them
    /// first when they are not held: on to the last line of `rest` (the items of the span from
    /// this one on) when it is near.
    fn decoded(
        &mut self,
        index: usize,
        m: &ItemMeta,
        at: LineAt,
        rest: &[ItemMeta],
    ) -> Result<&str, TextUnavailable> {
        if !self.decoded.contains_key(&index) {
            let end = at.offset + u64::from(at.len);
            let held =
                at.offset >= self.lines_from && end <= self.lines_from + self.lines.len() as u64;
            if !held {
                let reach = rest
                    .iter()
                    .filter_map(|m| match m.place() {
                        Place::Line(l) => Some(l.offset + u64::from(l.len)),
                        Place::Arena(_) => None,
                    })
                    .take_while(|&e| e >= end && e - at.offset <= READ_AHEAD)
                    .last()
                    .unwrap_or(end);
                self.lines.clear();
                self.lines_from = at.offset;
                self.h.read_lines(at, reach - at.offset, &mut self.lines)?;
            }
            let from = (at.offset - self.lines_from) as usize;
            let line = self
                .lines
                .get(from..from + at.len as usize)
                .unwrap_or_default();
            let text = self.h.text_of_line(m, line)?;
            if self.lines.len() as u64 > READ_AHEAD {
                // A line longer than a read-ahead (a huge output) is not kept beside its text.
                self.lines = Vec::new();
                self.lines_from = 0;
            }
            self.keep(index, text);
        }
        Ok(self.decoded.get(&index).map_or("", String::as_str))
    }

    /// Keeps a decoded text, dropping the oldest past [`KEEP_DECODED`] bytes (never the newest).
    fn keep(&mut self, index: usize, text: String) {
        self.decoded_bytes += text.len();
        self.decoded.insert(index, text);
        self.order.push_back(index);
        while self.decoded_bytes > KEEP_DECODED && self.order.len() > 1 {
            if let Some(old) = self.order.pop_front() {
                let freed = self.decoded.remove(&old).map_or(0, |t| t.len());
                self.decoded_bytes -= freed;
            }
        }
    }
}
