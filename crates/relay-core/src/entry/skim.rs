//! The byte-level fast path of [`super::skim_entry_of_line`] for `message` lines, the bulk of a
//! session file: one pass over the line's bytes that keeps the few strings a skimmed entry holds
//! (type, ids, timestamp, role, tool, stop reason, custom type, model) and the usage numbers, and checks
//! every other value the way serde's reading into [`RawLine`]`<`[`SkimMessage`]`>` checks it,
//! finding a string's end eight bytes at a time instead of decoding its escapes.
//!
//! Contract: [`message_line`] gives either the very `RawLine` serde would read (the caller then
//! converts it as usual) or `None`, "not sure", and the caller reads the line with serde. It is
//! stricter than serde, never looser: anything outside the shape Pi writes (another entry type,
//! a kept string with an escape, a duplicate field, a number with an exponent or a fraction where
//! a number is kept, a `\u` escape of a lone surrogate, deep nesting, an array where an object is
//! expected, a malformed line) is "not sure". An oracle test compares the two readings on
//! generated and golden lines (entry/tests.rs).
//!
//! Why by hand: serde decodes every skipped string's escapes into a scratch buffer, the bulk of
//! the skim's cost. Measured with `tail_probe` (relay-io) on the 256 MiB session, process CPU
//! time of the first pass, 10 runs each, alternating builds: median 530 ms with serde alone,
//! 365 ms with this path (1.45× less); see bench/NOTES.md, "the first pass's skim, byte-level".

use std::borrow::Cow;

use super::raw::{RawCost, RawLine, RawUsage, SkimAny, SkimContent, SkimMessage, SkimStr, Str};

/// Nesting (objects and arrays inside the line's object) beyond which the fast path gives up;
/// serde_json's own limit is 128.
const MAX_DEPTH: u32 = 64;

/// The fields of [`RawLine`] other than the five a `message` line has: a line that has one is
/// read by serde (it may give the entry more than a message line's facts, or refuse it).
const OTHER_LINE_FIELDS: [&[u8]; 21] = [
    b"version",
    b"cwd",
    b"parentSession",
    b"provider",
    b"modelId",
    b"thinkingLevel",
    b"summary",
    b"firstKeptEntryId",
    b"tokensBefore",
    b"details",
    b"fromHook",
    b"fromId",
    b"customType",
    b"data",
    b"content",
    b"display",
    b"systemMessage",
    b"replacement",
    b"targetId",
    b"label",
    b"name",
];

/// The line as serde would read it, when it is a `message` line in the shape Pi writes; `None`
/// when unsure (see the module documentation). `line` has no line break.
pub(super) fn message_line(line: &str) -> Option<RawLine<'_, SkimMessage<'_>>> {
    let mut p = Reader {
        text: line,
        bytes: line.as_bytes(),
        at: 0,
    };
    let mut kind = None;
    let mut id = None;
    let mut parent_id = None;
    let mut timestamp = None;
    let mut message = None;
    let mut seen = 0u8;
    p.object(|p, key| {
        let bit = match key {
            b"type" => 1,
            b"id" => 2,
            b"parentId" => 4,
            b"timestamp" => 8,
            b"message" => 16,
            other if OTHER_LINE_FIELDS.contains(&other) => return None,
            _ => return p.skip_value(1),
        };
        if seen & bit != 0 {
            return None; // serde refuses a duplicate field
        }
        seen |= bit;
        match bit {
            1 => kind = p.kept_str()?,
            2 => id = p.kept_str()?,
            4 => parent_id = p.kept_str()?,
            8 => timestamp = p.kept_str()?,
            _ => message = Some(p.message()?),
        }
        Some(())
    })?;
    p.blanks();
    if p.at != p.bytes.len() || kind.as_deref() != Some("message") {
        return None;
    }
    let mut raw = RawLine::empty();
    raw.kind = kind;
    raw.id = id;
    raw.parent_id = parent_id;
    raw.timestamp = timestamp;
    raw.message = message;
    Some(raw)
}

/// A cursor over one line. Every method returns `None` for "not sure".
struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// JSON whitespace, as serde_json skips it.
    fn blanks(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at.checked_add(word.len())?;
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// `null` (then `true`) or not (then nothing is consumed).
    fn null(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(true);
        }
        Some(false)
    }

    /// An object: `field` is called with each key (the cursor on its value, blanks skipped) and
    /// must consume the value. Keys with escapes are "not sure" (serde matches them decoded).
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.blanks();
        self.eat(b'{')?;
        self.blanks();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let (key, escaped) = self.string()?;
            if escaped {
                return None;
            }
            self.blanks();
            self.eat(b':')?;
            self.blanks();
            field(self, key.as_bytes())?;
            self.blanks();
            match self.peek()? {
                b',' => {
                    self.at += 1;
                    self.blanks();
                }
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An array: `element` is called with the cursor on each element and must consume it.
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        self.blanks();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            element(self)?;
            self.blanks();
            match self.peek()? {
                b',' => {
                    self.at += 1;
                    self.blanks();
                }
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string at the cursor: its raw text between the quotes and whether it has an escape.
    /// Checked as serde_json checks a string it decodes: no control character, every escape one
    /// of JSON's, a `\u` escape of a surrogate only as the first of a pair; anything else is "not
    /// sure".
    /// The text is valid UTF-8 already (`&str`).
    fn string(&mut self) -> Option<(&'a str, bool)> {
        self.eat(b'"')?;
        let start = self.at;
        let bytes = self.bytes;
        let mut at = start;
        let mut escaped = false;
        loop {
            at = special_from(bytes, at)?;
            if bytes.get(at) == Some(&b'"') {
                break;
            }
            match bytes.get(at..at + 2)? {
                [b'\\', b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't'] => at += 2,
                [b'\\', b'u'] => {
                    self.at = at + 2;
                    match self.hex_unit()? {
                        0xD800..=0xDBFF => {
                            // The first half of a pair: the second must follow at once.
                            self.literal(b"\\u")?;
                            if !(0xDC00..=0xDFFF).contains(&self.hex_unit()?) {
                                return None;
                            }
                        }
                        0xDC00..=0xDFFF => return None,
                        _ => {}
                    }
                    at = self.at;
                }
                // A control character, or a backslash that escapes nothing JSON knows.
                _ => return None,
            }
            escaped = true;
        }
        let text = self.text.get(start..at)?;
        self.at = at + 1;
        Some((text, escaped))
    }

    /// The four hex digits of a `\u` escape.
    fn hex_unit(&mut self) -> Option<u16> {
        let hex = self.text.get(self.at..self.at.checked_add(4)?)?;
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u16::from_str_radix(hex, 16).ok()
    }

    /// An `Option<Cow<str>>` field: `null`, or a string without escapes (borrowed, as serde
    /// borrows it). A string with an escape is "not sure" (serde would decode it).
    fn kept_str(&mut self) -> Option<Option<Str<'a>>> {
        if self.null()? {
            return Some(None);
        }
        match self.string()? {
            (text, false) => Some(Some(Cow::Borrowed(text))),
            (_, true) => None,
        }
    }

    /// An `Option<SkimStr>` field: `null` or any string.
    fn skim_str(&mut self) -> Option<Option<SkimStr>> {
        if self.null()? {
            return Some(None);
        }
        self.string()?;
        Some(Some(SkimStr))
    }

    /// An `Option<bool>` field.
    fn bool(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b't' => self.literal(b"true").map(|()| Some(true)),
            b'f' => self.literal(b"false").map(|()| Some(false)),
            _ => None,
        }
    }

    /// A number that is skipped: JSON's grammar without an exponent, at most 300 digits before
    /// the point (so it is finite as an `f64`, as serde_json requires).
    fn skip_number(&mut self) -> Option<()> {
        if self.peek()? == b'-' {
            self.at += 1;
        }
        let digits = self.digits();
        if digits == 0 || digits > 300 {
            return None;
        }
        if digits > 1 && self.bytes.get(self.at - digits) == Some(&b'0') {
            return None; // a leading zero
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        match self.peek() {
            Some(b'e' | b'E') => None,
            _ => Some(()),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        self.at - start
    }

    /// An `Option<f64>` usage count: `null`, or a non-negative integer of at most 15 digits
    /// (exactly the `f64` serde_json gives); any other number is "not sure".
    fn count(&mut self) -> Option<Option<f64>> {
        if self.null()? {
            return Some(None);
        }
        let start = self.at;
        let digits = self.digits();
        if digits == 0 || digits > 15 || (digits > 1 && self.bytes.get(start) == Some(&b'0')) {
            return None;
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let value: u64 = self.text.get(start..self.at)?.parse().ok()?;
        Some(Some(value as f64))
    }

    /// Any JSON value, checked and dropped (both serde's `IgnoredAny` for an unknown field and
    /// [`SkimAny`] accept at least what this accepts).
    fn skip_value(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|p, _| p.skip_value(depth + 1)),
            b'[' => self.array(|p| p.skip_value(depth + 1)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => None,
        }
    }

    /// An `Option<SkimAny>` field (`null` is `None`, as serde's `Option` reads it).
    fn skim_any(&mut self, depth: u32) -> Option<Option<SkimAny>> {
        if self.null()? {
            return Some(None);
        }
        self.skip_value(depth)?;
        Some(Some(SkimAny))
    }

    /// An `Option<Vec<SkimAny>>` field.
    fn skim_list(&mut self, depth: u32) -> Option<Option<Vec<SkimAny>>> {
        if self.null()? {
            return Some(None);
        }
        let mut list = Vec::new();
        self.array(|p| {
            p.skip_value(depth + 1)?;
            list.push(SkimAny);
            Some(())
        })?;
        Some(Some(list))
    }

    /// The line's `message`, as [`SkimMessage`].
    fn message(&mut self) -> Option<SkimMessage<'a>> {
        let mut m = SkimMessage {
            role: None,
            content: None,
            tool_name: None,
            tool_call_id: None,
            is_error: None,
            usage: None,
            stop_reason: None,
            custom_type: None,
            provider: None,
            model: None,
            command: None,
            output: None,
            summary: None,
            sections: None,
            tools_added: None,
            tools_removed: None,
        };
        let mut seen = 0u16;
        self.object(|p, key| {
            let bit: u16 = match key {
                b"role" => 1,
                b"content" => 1 << 1,
                b"toolName" => 1 << 2,
                b"toolCallId" => 1 << 3,
                b"isError" => 1 << 4,
                b"usage" => 1 << 5,
                b"stopReason" => 1 << 6,
                b"customType" => 1 << 7,
                b"command" => 1 << 8,
                b"output" => 1 << 9,
                b"summary" => 1 << 10,
                b"sections" => 1 << 11,
                b"toolsAdded" => 1 << 12,
                b"toolsRemoved" => 1 << 13,
                b"provider" => 1 << 14,
                b"model" => 1 << 15,
                _ => return p.skip_value(2),
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            match key {
                b"role" => m.role = p.kept_str()?,
                b"content" => m.content = p.content()?,
                b"toolName" => m.tool_name = p.kept_str()?,
                b"toolCallId" => m.tool_call_id = p.kept_str()?,
                b"isError" => m.is_error = p.bool()?,
                b"usage" => m.usage = p.usage()?,
                b"stopReason" => m.stop_reason = p.kept_str()?,
                b"customType" => m.custom_type = p.kept_str()?,
                b"command" => m.command = p.skim_str()?,
                b"output" => m.output = p.skim_str()?,
                b"summary" => m.summary = p.skim_str()?,
                b"sections" => m.sections = p.skim_any(2)?,
                b"toolsAdded" => m.tools_added = p.skim_list(2)?,
                b"provider" => m.provider = p.kept_str()?,
                b"model" => m.model = p.kept_str()?,
                _ => m.tools_removed = p.skim_list(2)?,
            }
            Some(())
        })?;
        Some(m)
    }

    /// `Option<SkimContent>`: `null`, a string, or an array of content blocks (objects).
    fn content(&mut self) -> Option<Option<SkimContent>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b'"' => self.string().map(|_| Some(SkimContent)),
            b'[' => self.array(|p| p.block()).map(|()| Some(SkimContent)),
            _ => None,
        }
    }

    /// One content block, as `SkimBlock`.
    fn block(&mut self) -> Option<()> {
        let mut seen = 0u8;
        self.object(|p, key| {
            let bit = match key {
                b"type" => 1,
                b"text" => 2,
                b"name" => 4,
                b"arguments" => 8,
                b"thinking" => 16,
                _ => return p.skip_value(3),
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            if bit == 8 {
                p.skim_any(3).map(drop)
            } else {
                p.skim_str().map(drop)
            }
        })
    }

    /// `Option<RawCost>`: Pi's cost object, of which only `total` is kept.
    fn cost(&mut self) -> Option<Option<RawCost>> {
        if self.null()? {
            return Some(None);
        }
        let mut total = None;
        let mut seen = false;
        self.object(|p, key| {
            if key != b"total" {
                return p.skip_value(4);
            }
            if seen {
                return None;
            }
            seen = true;
            total = p.number()?;
            Some(())
        })?;
        Some(Some(RawCost { total }))
    }

    /// An `Option<f64>`: `null`, or any number JSON allows, read by serde_json itself (so the
    /// value is exactly the one the full reading gives).
    fn number(&mut self) -> Option<Option<f64>> {
        if self.null()? {
            return Some(None);
        }
        let start = self.at;
        self.skip_number()?;
        let text = self.text.get(start..self.at)?;
        serde_json::from_str::<f64>(text).ok().map(Some)
    }

    /// `Option<RawUsage>`.
    fn usage(&mut self) -> Option<Option<RawUsage>> {
        if self.null()? {
            return Some(None);
        }
        let mut u = RawUsage {
            input: None,
            output: None,
            cache_read: None,
            cache_write: None,
            total_tokens: None,
            cost: None,
        };
        let mut seen = 0u8;
        self.object(|p, key| {
            let (bit, slot) = match key {
                b"input" => (1, &mut u.input),
                b"output" => (2, &mut u.output),
                b"cacheRead" => (4, &mut u.cache_read),
                b"cacheWrite" => (8, &mut u.cache_write),
                b"totalTokens" => (16, &mut u.total_tokens),
                b"cost" => {
                    if seen & 32 != 0 {
                        return None;
                    }
                    seen |= 32;
                    u.cost = p.cost()?;
                    return Some(());
                }
                _ => return p.skip_value(3),
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            *slot = p.count()?;
            Some(())
        })?;
        Some(Some(u))
    }
}

/// The first byte at or after `at` that ends a JSON string's run of plain text: `"`, `\\` or a
/// control character (U+0000–U+001F, which JSON strings may not hold). Eight bytes at a time:
/// in each word the lowest byte flagged by the three "has a zero byte" tests is exact (a false
/// flag can only follow a true one), which is all this needs.
fn special_from(bytes: &[u8], mut at: usize) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    while let Some(word) = bytes.get(at..at + 8) {
        let x = u64::from_le_bytes(word.try_into().ok()?);
        let quote = x ^ (ONES * u64::from(b'"'));
        let backslash = x ^ (ONES * u64::from(b'\\'));
        let flagged = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (x.wrapping_sub(ONES * 0x20) & !x);
        let flagged = flagged & HIGH;
        if flagged != 0 {
            return Some(at + (flagged.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    let i = rest
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    Some(at + i)
}
