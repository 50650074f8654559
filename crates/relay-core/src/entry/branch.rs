//! Walking a session's tree: the branch that ends at a leaf, from a list of entries
//! ([`branch_indices`]) or streamed from a whole session file into a [`BranchSink`]
//! ([`stream_branch`], with [`LinearFeed`] as its one-pass fast path).
//!
//! Contract: a branch is the path from the root to the leaf following `parent_id`. An unknown
//! leaf gives no branch; a missing parent ends the walk (that entry is the root); a cycle is cut
//! where it closes; a repeated id resolves to its last occurrence. Every way of walking gives the
//! same entries in the same order.

use rustc_hash::FxHashMap as HashMap;

use super::decode::{last_entry_of_line, parse_line};
use super::types::{Entry, Line, LineAt};

/// The indices (into `entries`) of the path from the root to `leaf_id`, following `parent_id`.
/// Without a leaf, the last entry is the leaf. An unknown leaf gives an empty path; a missing
/// parent ends the walk (that entry is the root); a cycle is cut where it closes.
pub fn branch_indices(entries: &[Entry], leaf_id: Option<&str>) -> Vec<usize> {
    branch_path(
        entries.len(),
        |i| {
            entries
                .get(i)
                .map_or(("", None), |e| (e.id.as_str(), e.parent_id.as_deref()))
        },
        leaf_id,
    )
}

/// [`branch_indices`] over `len` entries given as `(id, parent_id)` by `at`.
fn branch_path<'a>(
    len: usize,
    at: impl Fn(usize) -> (&'a str, Option<&'a str>),
    leaf_id: Option<&str>,
) -> Vec<usize> {
    let mut by_id: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(len, Default::default());
    for i in 0..len {
        by_id.insert(at(i).0, i);
    }
    let start = match leaf_id {
        Some(id) => by_id.get(id).copied(),
        None => len.checked_sub(1),
    };
    let mut path = Vec::new();
    let mut seen = vec![false; len];
    let mut cursor = start;
    while let Some(i) = cursor {
        match seen.get_mut(i) {
            Some(seen) if !*seen => *seen = true,
            _ => break,
        }
        path.push(i);
        cursor = at(i).1.and_then(|p| by_id.get(p).copied());
    }
    path.reverse();
    path
}

/// Receives the entries of a branch from [`stream_branch`].
pub trait BranchSink {
    /// Starts (or starts over): forget every entry received since the previous `begin`.
    fn begin(&mut self);
    /// The next entry of the branch, root first.
    fn entry(&mut self, entry: Entry);
    /// [`BranchSink::entry`] for an entry the caller keeps (to free or reuse it where it was
    /// made). By default the sink gets a copy; a sink that only reads the entry should take it
    /// as is.
    fn entry_ref(&mut self, entry: &Entry) {
        self.entry(entry.clone());
    }
    /// [`BranchSink::entry_ref`] for an entry whose line is at `at` in the file (the line reads
    /// back as the same entry). By default the place is not kept.
    fn entry_at(&mut self, entry: &Entry, at: LineAt) {
        let _ = at;
        self.entry_ref(entry);
    }
    /// Whether the sink still wants the branch: a reader stops at the next entry once it does
    /// not (a load nobody waits for any more, e.g. at Pi's shutdown).
    fn wanted(&self) -> bool {
        true
    }
}

/// What the general path of [`stream_branch`] keeps of each entry line.
struct LineRec {
    id: String,
    parent_id: Option<String>,
    start: usize,
    end: usize,
}

/// The non-blank lines of a session file with their byte ranges (`\r\n` endings trimmed).
fn lines_with_ranges(text: &str) -> impl Iterator<Item = (usize, usize, &str)> {
    let ends = memchr::memchr_iter(b'\n', text.as_bytes()).chain(std::iter::once(text.len()));
    let mut start = 0;
    ends.filter_map(move |end| {
        let raw = text.get(start..end).unwrap_or_default();
        let from = start;
        start = end + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        (!line.trim().is_empty()).then_some((from, from + line.len(), line))
    })
}

/// The last entry of a session file, as [`parse_session`] would list it.
fn last_entry(text: &str) -> Option<Entry> {
    text.rsplit('\n').find_map(last_entry_of_line)
}

/// The fast path of [`stream_branch`], fed one line at a time: for a file without branches whose
/// last entry is the leaf, every entry line is decoded once and handed to the sink at once.
///
/// Use: check that the file's last entry is the leaf (see [`last_entry_of_line`]), call
/// `sink.begin()`, feed every line in file order to [`LinearFeed::line`] while it returns true,
/// then ask [`LinearFeed::finish`]. When either says no, the sink holds a partial branch: take
/// the general path ([`stream_branch_by_parents`]), which begins the sink again.
#[derive(Debug, Default)]
pub struct LinearFeed {
    prev_id: Option<String>,
    /// Hashes of the ids pushed so far; a repeated hash (a repeated id, or a rare collision)
    /// sends the caller to the general path, which is right in both cases.
    seen: rustc_hash::FxHashSet<u64>,
    repeated: bool,
    /// Stop once this entry is fed ([`LinearFeed::until`]).
    stop_at: Option<String>,
}

impl LinearFeed {
    pub fn new() -> Self {
        LinearFeed::default()
    }

    /// A feed that stops (returns false) right after the entry `leaf_id`: the entries a file holds
    /// after the leaf (Pi went on writing since the leaf was taken) are not read at all, and
    /// [`LinearFeed::finish`] then holds when every entry up to the leaf followed the one before.
    pub fn until(leaf_id: &str) -> Self {
        LinearFeed {
            stop_at: Some(leaf_id.to_string()),
            ..LinearFeed::default()
        }
    }

    /// Feeds the next line of the file (without its `\n`; a `\r` ending and blank lines are
    /// allowed). Returns false when the entry does not follow the previous one: the file has
    /// branches, so stop feeding. Malformed lines and headers are passed over.
    pub fn line(&mut self, raw: &str, sink: &mut impl BranchSink) -> bool {
        match last_entry_of_line(raw) {
            Some(entry) => self.entry(entry, sink),
            None => true,
        }
    }

    /// [`LinearFeed::line`] for a line already decoded (with [`last_entry_of_line`], which may
    /// run on another thread): the entry of the next entry line of the file.
    pub fn entry(&mut self, entry: Entry, sink: &mut impl BranchSink) -> bool {
        if !sink.wanted() || !self.follows(&entry) {
            return false;
        }
        sink.entry(entry);
        !self.stopped()
    }

    /// [`LinearFeed::entry`] for an entry the caller keeps: the sink gets it through
    /// [`BranchSink::entry_ref`].
    pub fn entry_ref(&mut self, entry: &Entry, sink: &mut impl BranchSink) -> bool {
        if !sink.wanted() || !self.follows(entry) {
            return false;
        }
        sink.entry_ref(entry);
        !self.stopped()
    }

    /// [`LinearFeed::entry_ref`] for an entry whose line is at `at`: the sink gets it through
    /// [`BranchSink::entry_at`].
    pub fn entry_at(&mut self, entry: &Entry, at: LineAt, sink: &mut impl BranchSink) -> bool {
        if !sink.wanted() || !self.follows(entry) {
            return false;
        }
        sink.entry_at(entry, at);
        !self.stopped()
    }

    /// Whether the last entry fed is the one [`LinearFeed::until`] stops at.
    fn stopped(&self) -> bool {
        self.stop_at.is_some() && self.stop_at == self.prev_id
    }

    /// Whether `entry` follows the previous one; if so, it becomes the previous one.
    fn follows(&mut self, entry: &Entry) -> bool {
        if let Some(prev) = &self.prev_id {
            if entry.parent_id.as_deref() != Some(prev.as_str()) {
                return false;
            }
        }
        {
            use std::hash::BuildHasher;
            let h = rustc_hash::FxBuildHasher.hash_one(entry.id.as_str());
            if !self.seen.insert(h) {
                self.repeated = true;
            }
        }
        let prev = self.prev_id.get_or_insert_with(String::new);
        prev.clear();
        prev.push_str(&entry.id);
        true
    }

    /// After the last line fed (all of them, or up to the one that returned false): true when the
    /// sink now holds exactly the branch that ends at `leaf_id` (the last entry fed is the leaf,
    /// each entry fed followed the one before, and no id was repeated).
    pub fn finish(&self, leaf_id: &str) -> bool {
        !self.repeated && self.prev_id.as_deref() == Some(leaf_id)
    }
}

/// Feeds the branch of a session file that ends at the entry `leaf_id` to `sink`, root first,
/// decoding one line at a time: the whole file is never held as a list of entries.
///
/// The entries the sink receives after its last `begin` are exactly those of
/// `branch_indices(&parse_session(text).entries, Some(leaf_id))`, in that order. Returns false,
/// without calling the sink at all, when no entry of the file has the id `leaf_id`.
///
/// When the leaf is the file's last entry and every entry's parent is the entry before it (a
/// file without branches), each line is decoded once and handed over at once (see
/// [`LinearFeed`]). Otherwise [`stream_branch_by_parents`] does the work.
pub fn stream_branch(text: &str, leaf_id: &str, sink: &mut impl BranchSink) -> bool {
    if last_entry(text).is_some_and(|e| e.id == leaf_id) {
        let mut feed = LinearFeed::new();
        sink.begin();
        let all_fed = lines_with_ranges(text).all(|(_, _, line)| feed.line(line, sink));
        if all_fed && feed.finish(leaf_id) {
            return true;
        }
    }
    stream_branch_by_parents(text, leaf_id, sink)
}

/// The general path of [`stream_branch`], same contract: the ids and parents of all lines are
/// read first, then only the branch's lines are decoded again and handed over. False also when
/// the sink stops wanting the branch ([`BranchSink::wanted`]) before it has it all.
pub fn stream_branch_by_parents(text: &str, leaf_id: &str, sink: &mut impl BranchSink) -> bool {
    stream_branch_by_parents_at(text, leaf_id, sink, false)
}

/// [`stream_branch_by_parents`] for the text of a whole session file read as it is (`exact`: no
/// bytes were replaced, so an offset in `text` is one in the file): each entry goes to the sink
/// with its line's place ([`BranchSink::entry_at`]).
pub fn stream_branch_by_parents_at(
    text: &str,
    leaf_id: &str,
    sink: &mut impl BranchSink,
    exact: bool,
) -> bool {
    let mut recs: Vec<LineRec> = Vec::new();
    for (n, (start, end, line)) in lines_with_ranges(text).enumerate() {
        // A load nobody waits for any more stops here (checked every 256 lines: a flag read).
        if n % 256 == 0 && !sink.wanted() {
            return false;
        }
        if let Ok(Line::Entry(entry)) = parse_line(line) {
            recs.push(LineRec {
                id: entry.id,
                parent_id: entry.parent_id,
                start,
                end,
            });
        }
    }
    let path = branch_path(
        recs.len(),
        |i| {
            recs.get(i)
                .map_or(("", None), |r| (r.id.as_str(), r.parent_id.as_deref()))
        },
        Some(leaf_id),
    );
    if path.is_empty() {
        return false;
    }
    sink.begin();
    for i in path {
        if !sink.wanted() {
            return false;
        }
        let Some(rec) = recs.get(i) else { continue };
        let line = text.get(rec.start..rec.end);
        if let Some(Ok(Line::Entry(entry))) = line.map(parse_line) {
            match u32::try_from(rec.end - rec.start) {
                Ok(len) if exact => {
                    let at = LineAt {
                        offset: rec.start as u64,
                        len,
                    };
                    sink.entry_at(&entry, at);
                }
                _ => sink.entry(entry),
            }
        }
    }
    true
}
