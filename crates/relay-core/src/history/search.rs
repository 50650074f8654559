//! Finding items: filters (window, role, tool name, tool namespace) resolved against the posting
//! lists, ordered candidate walks, and the literal substring search over the text arena.
//!
//! Contract: a search reports each matching item once, with the byte offset of its FIRST match;
//! a match never spans two items; results come newest first or oldest first as asked and agree
//! with a naive per-item `contains` in both orders. Search runs `memchr::memmem` over the text
//! (or the window's range of it), only in the blocks where the block filter (`blocks.rs`) says
//! the needle may start, and maps a hit back to its item by binary search; only those ranges are
//! read back from the session file when the text is not in memory, through one `SpanReader` per
//! search (`text.rs`): each line is read once per search, and a hit's text is decoded once for
//! its first match and the snippet the tool shows ([`HitText`]). Without a filter
//! verdict (a needle under 4 or over a block's bytes) or with many candidate blocks, a
//! newest-first search of a rare needle scans the rest of a large arena on two scoped threads,
//! or the rest of the text read back chunk by chunk.

use memchr::memmem;

use super::blocks::Needle;
use super::store::{History, ItemMeta, Role};
use super::text::{SpanReader, TextUnavailable};
use super::SNIPPET_CONTEXT_CHARS;
use crate::text::{byte_at_char, byte_before_chars, char_count};

/// A resolved filter: an item index range (a window, or everything) and optional exact matches.
#[derive(Debug, Clone, Copy)]
pub(super) struct Filter {
    pub(super) lo: usize,
    pub(super) hi: usize,
    pub(super) role: Option<Role>,
    pub(super) tool: Option<u32>,
    pub(super) namespace: Option<u32>,
    /// A filter value that no item carries: nothing can match.
    pub(super) impossible: bool,
}

impl History {
    pub(super) fn matches(&self, i: usize, f: &Filter) -> bool {
        let Some(m) = self.items.get(i) else {
            return false;
        };
        !matches!(f.role, Some(r) if m.role != r)
            && !matches!(f.tool, Some(t) if m.tool != t)
            && !matches!(f.namespace, Some(n) if m.namespace != n)
    }

    /// The smallest posting list that restricts `f`, sliced to its item range.
    fn narrowest_list(&self, f: &Filter) -> Option<&[u32]> {
        let mut best: Option<&[u32]> = None;
        // A list that does not exist (never: ids come from the same interners) narrows nothing;
        // `matches` still applies the filter.
        let lists = [
            f.role.and_then(|r| self.roles.get(r as usize)),
            f.tool.and_then(|t| self.tools.postings.get(t as usize)),
            f.namespace
                .and_then(|n| self.namespaces.postings.get(n as usize)),
        ];
        for list in lists.into_iter().flatten() {
            let a = list.partition_point(|&i| (i as usize) < f.lo);
            let b = list.partition_point(|&i| (i as usize) < f.hi);
            let slice = list.get(a..b).unwrap_or_default();
            if !matches!(best, Some(cur) if cur.len() <= slice.len()) {
                best = Some(slice);
            }
        }
        best
    }

    /// Visits matching items in order until `visit` returns false.
    pub(super) fn for_each_candidate(
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

    /// Up to `want` matching items, each with the first match inside it and the text the tools
    /// show around it; an error when a text the search needed could not be read back from the
    /// session file. An item read back from the file is decoded once for all of it.
    pub(super) fn search(
        &self,
        query: &str,
        f: &Filter,
        recent_first: bool,
        want: usize,
    ) -> Result<Vec<Hit>, TextUnavailable> {
        if f.impossible || f.lo >= f.hi {
            return Ok(Vec::new());
        }
        let needle = query.as_bytes();
        let mut scan = Scan {
            h: self,
            f,
            n: needle.len(),
            finder: memmem::Finder::new(needle),
            // The blocks where the needle may start (None: the block filter cannot judge it).
            trigrams: self.blocks.needle(needle),
            reader: SpanReader::new(self),
            want,
            hits: Vec::new(),
        };
        // A selective filter: search only the candidate items.
        if let Some(list) = self.narrowest_list(f) {
            if list.len().saturating_mul(8) < f.hi - f.lo {
                scan.candidates(recent_first)?;
                return Ok(scan.hits);
            }
        }
        if recent_first {
            scan.newest_first()?;
        } else {
            scan.oldest_first()?;
        }
        Ok(scan.hits)
    }
}

/// A matching item: its index and what the tools show of its first match (see [`HitText`]).
#[derive(Debug, Clone)]
pub(super) struct Hit {
    pub(super) item: usize,
    pub(super) text: HitText,
}

/// What the search tool shows of a hit, cut from the item's text while the search held it:
/// where the match starts and where the snippet starts (characters), and the snippet (up to
/// [`SNIPPET_CONTEXT_CHARS`] characters each side of the match).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HitText {
    pub(super) match_chars: usize,
    pub(super) snippet_chars: usize,
    pub(super) snippet: String,
}

impl HitText {
    /// The hit at byte `at` (a match of `n` bytes) of `text`; `None` when `at` is not where a
    /// match of the item can be.
    fn of(text: &str, at: usize, n: usize) -> Option<HitText> {
        let before = text.get(..at)?;
        let after = text.get(at + n..)?;
        let match_chars = char_count(before);
        let snippet_from = byte_before_chars(before, SNIPPET_CONTEXT_CHARS);
        let snippet_to = at + n + byte_at_char(after, SNIPPET_CONTEXT_CHARS);
        let lead = before.get(snippet_from..)?;
        Some(HitText {
            match_chars,
            snippet_chars: match_chars - char_count(lead),
            snippet: text.get(snippet_from..snippet_to)?.to_string(),
        })
    }
}

/// One search in progress: the needle, the filter, the reader of the text and the hits so far.
struct Scan<'h, 'f> {
    h: &'h History,
    f: &'f Filter,
    n: usize,
    finder: memmem::Finder<'f>,
    trigrams: Option<Needle>,
    reader: SpanReader<'h>,
    want: usize,
    hits: Vec<Hit>,
}

impl Scan<'_, '_> {
    fn done(&self) -> bool {
        self.hits.len() >= self.want
    }

    /// Item `i` when it matches: its first match, found in its text (decoded once, also for the
    /// snippet).
    fn item_hit(&mut self, i: usize) -> Result<Option<Hit>, TextUnavailable> {
        let Some(m) = self.h.items.get(i) else {
            return Ok(None);
        };
        if self
            .trigrams
            .as_ref()
            .is_some_and(|w| !self.h.may_hold(m, w, self.n))
        {
            return Ok(None);
        }
        let text = self.reader.item_text(i)?;
        let Some(at) = self.finder.find(text.as_bytes()) else {
            return Ok(None);
        };
        Ok(HitText::of(&text, at, self.n).map(|text| Hit { item: i, text }))
    }

    /// The candidate items of a selective filter, in order, each searched alone.
    fn candidates(&mut self, recent_first: bool) -> Result<(), TextUnavailable> {
        let (h, f) = (self.h, self.f);
        let mut failed = None;
        h.for_each_candidate(f, recent_first, |i| match self.item_hit(i) {
            Ok(found) => {
                self.hits.extend(found);
                !self.done()
            }
            Err(e) => {
                failed = Some(e);
                false
            }
        });
        failed.map_or(Ok(()), Err)
    }

    /// The text range of the filter's items (`lo < hi <= items.len()` in every filter).
    fn range(&self) -> Option<(usize, usize)> {
        let first = self.h.items.get(self.f.lo)?;
        let last = self.h.items.get(self.f.hi - 1)?;
        Some((first.start, last.end))
    }

    fn item_at(&self, p: usize) -> usize {
        self.h.items.partition_point(|m| m.end <= p)
    }

    /// Oldest first: the next match from the end of the last hit on, mapped to its item.
    fn oldest_first(&mut self) -> Result<(), TextUnavailable> {
        let Some((mut start, hi)) = self.range() else {
            return Ok(());
        };
        while start < hi && !self.done() {
            let Some(p) = self.h.next_match(
                &mut self.reader,
                &self.finder,
                self.trigrams.as_ref(),
                start,
                hi,
                self.n,
            )?
            else {
                break;
            };
            let i = self.item_at(p);
            let Some(m) = self.h.items.get(i) else {
                break;
            };
            if p + self.n <= m.end && self.h.matches(i, self.f) {
                // The item's text is the reader's (read for the match) or in memory.
                let text = self.reader.item_text(i)?;
                if let Some(shown) = HitText::of(&text, p - m.start, self.n) {
                    self.hits.push(Hit {
                        item: i,
                        text: shown,
                    });
                }
            }
            start = m.end;
        }
        Ok(())
    }

    /// Newest first. memmem's reverse finder has no SIMD prefilter; instead scan chunks from
    /// the end with the forward finder and walk each chunk's matches backwards. The chunk starts
    /// small (a common needle stops early) and doubles after every chunk that did not finish
    /// the search, up to a few MiB, so that a rare needle scans at forward speed.
    fn newest_first(&mut self) -> Result<(), TextUnavailable> {
        let Some((lo, hi)) = self.range() else {
            return Ok(());
        };
        let (n, tuning) = (self.n, self.h.tuning);
        let mut chunk = tuning.first_chunk.max(4 * n);
        let mut end = hi;
        let mut positions = Vec::new();
        while end > lo && !self.done() {
            let cstart = self.chunk_matches(lo, end, chunk, &mut positions)?;
            let bound = self.walk_back(&positions, end)?;
            if cstart == lo {
                break;
            }
            // Matches starting before the chunk but ending inside it come next.
            end = bound.min(cstart + n - 1);
            chunk = (chunk * 2).min(tuning.max_chunk.max(4 * n));
        }
        Ok(())
    }

    /// Every match in the chunk of `chunk` bytes that ends at `end` into `positions`
    /// (ascending); the chunk's start is returned. Still searching after the largest chunk (the
    /// needle is rare here), the chunk is everything left: the blocks where the needle may start
    /// when they are few, else all of it.
    fn chunk_matches(
        &mut self,
        lo: usize,
        end: usize,
        chunk: usize,
        positions: &mut Vec<usize>,
    ) -> Result<usize, TextUnavailable> {
        let (h, n) = (self.h, self.n);
        positions.clear();
        let cstart = end.saturating_sub(chunk).max(lo);
        if chunk >= h.tuning.max_chunk && end - lo >= h.tuning.bulk_scan_min {
            let runs = self
                .trigrams
                .as_ref()
                .map(|w| h.candidate_runs(w, lo, end, n));
            match runs {
                Some(runs) if runs.iter().map(|(a, b)| b - a).sum::<usize>() * 4 < end - lo => {
                    for (a, b) in runs {
                        h.collect_all(&mut self.reader, &self.finder, a, b, positions)?;
                    }
                }
                _ => h.all_matches(&mut self.reader, &self.finder, lo, end, n, positions)?,
            }
            return Ok(lo);
        }
        if let Some(w) = &self.trigrams {
            for (a, b) in h.candidate_runs(w, cstart, end, n) {
                h.collect_all(&mut self.reader, &self.finder, a, b, positions)?;
            }
        } else {
            // Overlapping matches too: a later overlapping one may be the valid one.
            h.collect_all(&mut self.reader, &self.finder, cstart, end, positions)?;
        }
        Ok(cstart)
    }

    /// Walks a chunk's matches backwards (none past `end`), adding each matching item once
    /// with its first match; returns the start of the oldest item walked (`end` if none).
    fn walk_back(&mut self, positions: &[usize], end: usize) -> Result<usize, TextUnavailable> {
        let n = self.n;
        let mut bound = end;
        for &p in positions.iter().rev() {
            if p + n > bound {
                continue;
            }
            let i = self.item_at(p);
            let Some(m) = self.h.items.get(i) else {
                continue;
            };
            if p + n > m.end {
                // Spans into the next item: not a match.
                continue;
            }
            if self.h.matches(i, self.f) {
                // There is a match inside the item (at `p`), so its first one exists.
                if let Some(hit) = self.item_hit(i)? {
                    self.hits.push(hit);
                    if self.done() {
                        break;
                    }
                }
            }
            bound = m.start;
        }
        Ok(bound)
    }
}

impl History {
    /// Whether the block filter lets item `m` hold a match of a needle of `n` bytes.
    fn may_hold(&self, m: &ItemMeta, trigrams: &Needle, n: usize) -> bool {
        if m.end < m.start + n {
            return false;
        }
        let block = self.blocks.block();
        (m.start / block..=(m.end - n) / block).any(|b| self.blocks.may_start_in(b, trigrams))
    }

    /// The text ranges to scan for every match of a needle of `n` bytes (`trigrams`, from
    /// [`super::blocks::Blocks::needle`]) that lies wholly inside `[from, to)`: runs of consecutive blocks
    /// where a match may start, each range reaching `n - 1` bytes past its run. Ascending,
    /// disjoint in where their matches start.
    fn candidate_runs(
        &self,
        trigrams: &Needle,
        from: usize,
        to: usize,
        n: usize,
    ) -> Vec<(usize, usize)> {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        if to < from + n {
            return runs;
        }
        let block = self.blocks.block();
        // Blocks where a match inside [from, to) may start: its start is at most `to - n`.
        let (first, last) = (from / block, (to - n) / block);
        for b in first..=last {
            if !self.blocks.may_start_in(b, trigrams) {
                continue;
            }
            let a = (b * block).max(from);
            let e = ((b + 1) * block + n - 1).min(to);
            match runs.last_mut() {
                Some(run) if run.1 + 1 >= a + n => run.1 = e,
                _ => runs.push((a, e)),
            }
        }
        runs
    }

    /// The first match of the needle wholly inside `[start, hi)`, skipping the blocks where it
    /// cannot start when the block filter can judge it.
    fn next_match(
        &self,
        reader: &mut SpanReader<'_>,
        finder: &memmem::Finder<'_>,
        trigrams: Option<&Needle>,
        start: usize,
        hi: usize,
        n: usize,
    ) -> Result<Option<usize>, TextUnavailable> {
        let Some(trigrams) = trigrams else {
            return self.find_first(reader, finder, start, hi, n);
        };
        if hi < start + n {
            return Ok(None);
        }
        let block = self.blocks.block();
        let last = (hi - n) / block;
        let mut b = start / block;
        while b <= last {
            if !self.blocks.may_start_in(b, trigrams) {
                b += 1;
                continue;
            }
            // A run of candidate blocks from `b` to `e`.
            let mut e = b;
            while e < last && self.blocks.may_start_in(e + 1, trigrams) {
                e += 1;
            }
            let a = (b * block).max(start);
            let z = ((e + 1) * block + n - 1).min(hi);
            if let Some(p) = self.find_first(reader, finder, a, z, n)? {
                return Ok(Some(p));
            }
            b = e + 1;
        }
        Ok(None)
    }

    /// The first match wholly inside `[from, to)`: one scan of the arena, or chunk by chunk of
    /// text read back.
    fn find_first(
        &self,
        reader: &mut SpanReader<'_>,
        finder: &memmem::Finder<'_>,
        from: usize,
        to: usize,
        n: usize,
    ) -> Result<Option<usize>, TextUnavailable> {
        if let Some(hay) = self.arena_span(from, to) {
            return Ok(finder.find(hay).map(|r| from + r));
        }
        let mut at = from;
        while at + n <= to {
            let stop = (at + self.tuning.max_chunk + n - 1).min(to);
            let hay = reader.span(at, stop)?;
            if let Some(r) = finder.find(&hay) {
                return Ok(Some(at + r));
            }
            at = stop + 1 - n.max(1);
        }
        Ok(None)
    }

    /// Every (also overlapping) match wholly inside `[from, to)`, appended in ascending order.
    fn collect_all(
        &self,
        reader: &mut SpanReader<'_>,
        finder: &memmem::Finder<'_>,
        from: usize,
        to: usize,
        out: &mut Vec<usize>,
    ) -> Result<(), TextUnavailable> {
        let hay = reader.span(from, to)?;
        let mut at = 0;
        while let Some(r) = hay.get(at..).and_then(|h| finder.find(h)) {
            out.push(from + at + r);
            at += r + 1;
        }
        Ok(())
    }

    /// [`History::collect_all`] over `[lo, end)` when it may be long: on two threads when the
    /// text is in the arena (a scan this long is bound by memory bandwidth, which one core does
    /// not fill), else chunk by chunk of text read back, so that no more than a chunk is held.
    fn all_matches(
        &self,
        reader: &mut SpanReader<'_>,
        finder: &memmem::Finder<'_>,
        lo: usize,
        end: usize,
        n: usize,
        out: &mut Vec<usize>,
    ) -> Result<(), TextUnavailable> {
        if let Some(hay) = self.arena_span(lo, end) {
            out.extend(
                all_matches_parallel(finder, hay, 0, hay.len(), n)
                    .into_iter()
                    .map(|p| lo + p),
            );
            return Ok(());
        }
        let chunk = self.tuning.max_chunk.max(n);
        let mut at = lo;
        while at < end {
            // Matches that start in [at, at + chunk), reading n - 1 bytes on for their ends.
            let starts_before = (at + chunk).min(end);
            let stop = (starts_before + n - 1).min(end);
            let mut found = Vec::new();
            self.collect_all(reader, finder, at, stop, &mut found)?;
            out.extend(found.into_iter().filter(|&p| p < starts_before));
            at = starts_before;
        }
        Ok(())
    }
}

/// Start positions of every (also overlapping) match of the needle that lies wholly inside
/// `hay[lo..end]`, ascending, collected on two threads: the newer half on a scoped helper
/// thread, the older half on this one. When the helper cannot be spawned (the system refuses a
/// thread) or fails, this thread scans the newer half too: a failure costs time, never results.
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
        while let Some(r) = hay.get(at..to).and_then(|h| finder.find(h)) {
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
    fallback::note_scan();
    let (mut older, newer) = std::thread::scope(|scope| {
        let helper = spawn_scoped(scope, || collect(mid, end, end));
        let older = collect(lo, older_to, mid);
        let newer = match helper {
            Ok(handle) => handle.join().ok(),
            Err(_) => None,
        };
        // No helper, or a failed one: scan its half here, sequentially.
        let newer = newer.unwrap_or_else(|| {
            fallback::note_fallback();
            collect(mid, end, end)
        });
        (older, newer)
    });
    older.extend(newer);
    older
}

/// Spawns the search's helper thread with a fallible builder (never `thread::spawn`, which
/// panics when the system refuses a thread).
fn spawn_scoped<'scope, 'env, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::io::Result<std::thread::ScopedJoinHandle<'scope, T>> {
    if fallback::forced() {
        return Err(std::io::Error::other("thread spawn refused (test switch)"));
    }
    std::thread::Builder::new()
        .name("relay-search".into())
        .spawn_scoped(scope, f)
}

/// The test-only switch that makes spawning the helper fail, and counts of the two-thread scans
/// and of those that fell back to this thread, all per calling thread (tests run in parallel).
/// Nothing in other builds.
#[cfg(test)]
pub(super) mod fallback {
    use std::cell::Cell;

    thread_local! {
        static FORCE: Cell<bool> = const { Cell::new(false) };
        static SCANS: Cell<usize> = const { Cell::new(0) };
        static FALLBACKS: Cell<usize> = const { Cell::new(0) };
    }

    /// Makes every helper spawn on this thread fail (or succeed again).
    pub(in crate::history) fn force(on: bool) {
        FORCE.with(|f| f.set(on));
    }

    pub(super) fn forced() -> bool {
        FORCE.with(Cell::get)
    }

    pub(super) fn note_scan() {
        SCANS.with(|c| c.set(c.get() + 1));
    }

    pub(super) fn note_fallback() {
        FALLBACKS.with(|c| c.set(c.get() + 1));
    }

    /// How many two-thread scans this thread started, and how many of them fell back to
    /// scanning both halves on this thread.
    pub(in crate::history) fn counts() -> (usize, usize) {
        (SCANS.with(Cell::get), FALLBACKS.with(Cell::get))
    }
}

#[cfg(not(test))]
mod fallback {
    pub(super) fn forced() -> bool {
        false
    }
    pub(super) fn note_scan() {}
    pub(super) fn note_fallback() {}
}
