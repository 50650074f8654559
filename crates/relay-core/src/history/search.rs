//! Finding items: filters (window, role, tool name, tool namespace) resolved against the posting
//! lists, ordered candidate walks, and the literal substring search over the text arena.
//!
//! Contract: a search reports each matching item once, with the byte offset of its FIRST match;
//! a match never spans two items; results come newest first or oldest first as asked and agree
//! with a naive per-item `contains` in both orders. Search runs `memchr::memmem` over the arena
//! (or the window's slice of it) and maps a hit back to its item by binary search; a newest-first
//! search of a rare needle scans the rest of a large arena on two scoped threads.

use memchr::memmem;

use super::mirror::{History, Role};

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

    /// Up to `want` matching items with the byte offset of the first match inside each.
    pub(super) fn search(
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
