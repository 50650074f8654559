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

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::borrow::Cow;

use super::store::{item_parts, text_check, History, ItemMeta};
use crate::entry::{last_entry_of_line, EntryKind, LineAt};

/// The lines of the session file a history was loaded from. The host provides it (relay-io's
/// `SessionLines`: a handle kept open on the file, read with `pread`), so that this crate does
/// no IO of its own.
pub trait LineSource: Send + Sync + std::fmt::Debug {
    /// Appends to `out` the `len` bytes of the file at `offset` (fewer only at the end of the
    /// file). An error names the file and says why.
    fn read(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> Result<(), String>;
}

/// An item's text could not be read back from the session file (the text says why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextUnavailable(pub String);

impl std::fmt::Display for TextUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where an item's text is (from [`ItemMeta`]).
pub(super) enum Place {
    /// In the arena, from this byte on.
    Arena(usize),
    /// Only in the session file, on this line.
    Line(LineAt),
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

    /// Bytes `[lo, hi)` of the history's text (every item's text, one after another): borrowed
    /// when they are in the arena in one piece, else put together, reading the lines of the items
    /// held only in the file (neighbouring lines in one read).
    pub(super) fn text_span(&self, lo: usize, hi: usize) -> Result<Cow<'_, [u8]>, TextUnavailable> {
        if let Some(bytes) = self.arena_span(lo, hi) {
            return Ok(Cow::Borrowed(bytes));
        }
        let a = self.items.partition_point(|m| m.end <= lo);
        let b = self.items.partition_point(|m| m.start < hi);
        let items = self.items.get(a..b).unwrap_or_default();
        let mut out = Vec::with_capacity(hi - lo);
        let mut lines = Vec::new();
        let mut lines_from = 0u64;
        for (k, m) in items.iter().enumerate() {
            let text: Cow<'_, [u8]> = match m.place() {
                Place::Arena(x) => Cow::Borrowed(
                    self.arena
                        .as_bytes()
                        .get(x..x + (m.end - m.start))
                        .unwrap_or_default(),
                ),
                Place::Line(_) if self.recent_text(m).is_some() => {
                    Cow::Borrowed(self.recent_text(m).unwrap_or_default())
                }
                Place::Line(at) => {
                    let end = at.offset + u64::from(at.len);
                    let held = at.offset >= lines_from && end <= lines_from + lines.len() as u64;
                    if !held {
                        // Read on to the last line of this span's items when it is near.
                        let reach = items
                            .get(k..)
                            .unwrap_or_default()
                            .iter()
                            .filter_map(|m| match m.place() {
                                Place::Line(l) => Some(l.offset + u64::from(l.len)),
                                Place::Arena(_) => None,
                            })
                            .take_while(|&e| e >= end && e - at.offset <= READ_AHEAD)
                            .last()
                            .unwrap_or(end);
                        lines.clear();
                        lines_from = at.offset;
                        self.read_lines(at, reach - at.offset, &mut lines)?;
                    }
                    let from = (at.offset - lines_from) as usize;
                    let line = lines.get(from..from + at.len as usize).unwrap_or_default();
                    Cow::Owned(self.text_of_line(m, line)?.into_bytes())
                }
            };
            let from = lo.saturating_sub(m.start);
            let to = hi.min(m.end) - m.start;
            out.extend_from_slice(text.get(from..to).unwrap_or_default());
        }
        Ok(Cow::Owned(out))
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
