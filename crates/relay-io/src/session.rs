//! Reading Pi session files from disk.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender};

use relay_core::entry::{
    branch_indices, last_entry_of_line, parse_session, push_entries_of_lines,
    push_located_entries_of_lines, skim_entry_of_line, stream_branch_by_parents_at, BranchSink,
    Entry, EntryKind, LineAt, LinearFeed, ParsedSession,
};

mod tail;
#[cfg(test)]
use tail::stream_session_tail_with;
pub use tail::{session_header_id, stream_session_tail, Leaf, TailLoad};

/// A session file or folder that could not be read: the path and the operating system's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct SessionReadError {
    pub path: PathBuf,
    pub message: String,
}

impl SessionReadError {
    fn new(path: &Path, err: impl std::fmt::Display) -> Self {
        SessionReadError {
            path: path.to_path_buf(),
            message: err.to_string(),
        }
    }
}

/// Reads and parses a whole session file. Malformed lines are listed in `errors` and skipped.
/// Bytes that are not valid UTF-8 are replaced (U+FFFD) rather than failing the whole file.
pub fn read_session(path: &Path) -> Result<ParsedSession, SessionReadError> {
    let bytes = fs::read(path).map_err(|e| SessionReadError::new(path, e))?;
    let parsed = match std::str::from_utf8(&bytes) {
        Ok(text) => parse_session(text),
        Err(_) => parse_session(&String::from_utf8_lossy(&bytes)),
    };
    Ok(parsed)
}

/// Reads a session file as text, in one read. Bytes that are not valid UTF-8 are replaced
/// (U+FFFD), as [`read_session`] does.
pub fn read_session_text(path: &Path) -> Result<String, SessionReadError> {
    let bytes = fs::read(path).map_err(|e| SessionReadError::new(path, e))?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Reads a session file and feeds the branch that ends at the entry `leaf_id` to `sink`, root
/// first, one entry at a time (see [`stream_branch`]). `Ok(false)` when the file has no entry
/// `leaf_id`: the sink may then have begun a branch that is not the one asked for (the caller
/// drops it, or begins again).
///
/// When every entry up to the leaf follows the one before it (a session without branches, the
/// leaf its last entry or not), the file is read in chunks into one reused buffer up to the leaf,
/// and each complete line is decoded and handed over as it arrives ([`LinearFeed::until`]), so
/// the whole file is never held in memory. A file with branches before the leaf is read whole
/// and its branch found from the entries' parents. A sink that stops wanting the branch stops
/// either reader at its next entry (`Ok(false)`).
pub fn stream_session_branch(
    path: &Path,
    leaf_id: &str,
    sink: &mut impl BranchSink,
) -> Result<bool, SessionReadError> {
    stream_session_branch_with(path, leaf_id, sink, Threads::Two)
}

fn stream_session_branch_with(
    path: &Path,
    leaf_id: &str,
    sink: &mut impl BranchSink,
    threads: Threads,
) -> Result<bool, SessionReadError> {
    let file = fs::File::open(path).map_err(|e| SessionReadError::new(path, e))?;
    // Read up to the leaf only: Pi may have written more since the leaf was taken (a `pi -p`
    // run's prompt and answer land while its whole history loads).
    let mut feed = LinearFeed::until(leaf_id);
    sink.begin();
    feed_lines(file, &mut feed, sink, threads).map_err(|e| SessionReadError::new(path, e))?;
    if feed.finish(leaf_id) {
        return Ok(true);
    }
    if !sink.wanted() {
        // Nobody waits for this branch any more: stop here rather than read the file again.
        return Ok(false);
    }
    let bytes = fs::read(path).map_err(|e| SessionReadError::new(path, e))?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => stream_branch_by_parents_at(&text, leaf_id, sink, true),
        Err(e) => {
            let text = String::from_utf8_lossy(e.as_bytes());
            stream_branch_by_parents_at(&text, leaf_id, sink, false)
        }
    })
}

/// The lines of one session file, read back by offset ([`relay_core::history::LineSource`]) for
/// a history that keeps its items' places rather than their texts. The file stays open, so a
/// file renamed or deleted meanwhile still reads as it was; one rewritten in place or cut is
/// caught by the history's check of each line it reads back.
#[derive(Debug)]
pub struct SessionLines {
    path: PathBuf,
    file: fs::File,
}

impl SessionLines {
    pub fn open(path: &Path) -> Result<SessionLines, SessionReadError> {
        let file = fs::File::open(path).map_err(|e| SessionReadError::new(path, e))?;
        Ok(SessionLines {
            path: path.to_path_buf(),
            file,
        })
    }
}

impl relay_core::history::LineSource for SessionLines {
    fn read(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> Result<(), String> {
        use std::os::unix::fs::FileExt;
        let from = out.len();
        out.resize(from + len, 0);
        let mut got = 0;
        while got < len {
            let buf = out.get_mut(from + got..).unwrap_or_default();
            match self.file.read_at(buf, offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    out.truncate(from);
                    return Err(format!("{}: {e}", self.path.display()));
                }
            }
        }
        out.truncate(from + got);
        Ok(())
    }
}

/// The skimmed entries of a file (or part of one), the byte offset of each one's line, and
/// whether every block was UTF-8 (the offsets are the file's only then).
struct Skimmed {
    entries: Vec<Entry>,
    starts: Vec<u64>,
    exact: bool,
}

/// Skim every line `reader` gives, the first of which starts at byte `at` of the file.
fn skim_from(reader: &mut impl Read, mut at: u64) -> io::Result<Skimmed> {
    let mut out = Skimmed {
        entries: Vec::new(),
        starts: Vec::new(),
        exact: true,
    };
    for_each_block_exact(reader, |block, lossy| {
        out.exact &= !lossy;
        let mut line_at = at;
        for line in block.split('\n') {
            if let Some(entry) = skim_entry_of_line(line) {
                out.entries.push(entry);
                out.starts.push(line_at);
            }
            line_at += line.len() as u64 + 1;
        }
        at = line_at;
        true
    })?;
    Ok(out)
}

/// Skim the whole file: on two threads when it holds `parallel_from` bytes or more and a line
/// starts near its middle (the second half on a thread of its own, read through a second handle),
/// else on this one. The result is the same either way. Both threads run at Pi's priority: the
/// first request waits for this pass, and a yielding second thread made it later on a 2-core
/// machine (docs/performance.md).
fn skim_file(path: &Path, file: &mut fs::File, parallel_from: u64) -> io::Result<Skimmed> {
    let len = file.metadata()?.len();
    let split = if len >= parallel_from.max(1) {
        line_start_after(file, len / 2, len)?
    } else {
        None
    };
    file.seek(SeekFrom::Start(0))?;
    let Some(split) = split else {
        return skim_from(file, 0);
    };
    let mut second = fs::File::open(path)?;
    second.seek(SeekFrom::Start(split))?;
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("relay-session-skim".into())
            .spawn_scoped(scope, move || skim_from(&mut second, split));
        let Ok(handle) = spawned else {
            // No thread to be had: the whole file on this one.
            return skim_from(file, 0);
        };
        let mut first = skim_from(&mut file.by_ref().take(split), 0)?;
        let rest = handle
            .join()
            .map_err(|_| io::Error::other("the session skim thread panicked"))??;
        first.entries.extend(rest.entries);
        first.starts.extend(rest.starts);
        first.exact &= rest.exact;
        Ok(first)
    })
}

/// The offset of the first line that starts after byte `from` (a line break at `from` or later,
/// plus one), looking at most 16 MiB ahead; `None` when there is none before `len`.
fn line_start_after(file: &mut fs::File, from: u64, len: u64) -> io::Result<Option<u64>> {
    const STEP: usize = 64 << 10;
    const LOOK: u64 = 16 << 20;
    file.seek(SeekFrom::Start(from))?;
    let mut buf = vec![0u8; STEP];
    let mut at = from;
    while at < len && at - from < LOOK {
        let n = match file.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Some(i) = memchr::memchr(b'\n', buf.get(..n).unwrap_or_default()) {
            let start = at + i as u64 + 1;
            return Ok((start < len).then_some(start));
        }
        at += n as u64;
    }
    Ok(None)
}

/// Entry lines per message from the reading thread to the caller's.
const BATCH: usize = 256;
/// One batch in this many is always sent undecoded, to be decoded by the caller's thread; so is
/// any batch begun while at most one batch is left for that thread (it would soon wait
/// otherwise), so that the two threads share the decoding whatever their other work costs.
const CALLER_DECODES_ONE_IN: usize = 8;

/// What the reading thread sends: entries it decoded (with their lines' places when the file's
/// offsets are known), or lines for the caller to decode (with the offset of the first).
enum Batch {
    Entries(Vec<Entry>, Vec<LineAt>),
    Lines(String, Option<u64>),
}

/// How [`feed_lines`] shares the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Threads {
    /// A reading and decoding thread beside the caller's (falls back to `One` when no thread
    /// can be started).
    Two,
    /// Everything on the caller's thread (the fallback; the tests also ask for it directly).
    #[cfg_attr(not(test), allow(dead_code))]
    One,
}

/// Feeds every entry line of `file` to `feed` until it says no (then `Ok(false)`). With
/// [`Threads::Two`], a second thread reads the file and decodes lines while this one decodes the
/// rest and hands the entries to `sink` in file order, so the work is shared by two cores; at
/// most a few batches are in flight. When that thread cannot be started, the caller's thread
/// does it all.
fn feed_lines(
    mut file: fs::File,
    feed: &mut LinearFeed,
    sink: &mut impl BranchSink,
    threads: Threads,
) -> io::Result<bool> {
    if threads == Threads::Two {
        if let Some(result) = feed_lines_parallel(&mut file, feed, sink) {
            return result;
        }
    }
    feed_lines_sequential(&mut file, feed, sink)
}

/// The caller's thread reads, decodes and feeds, one block of lines at a time.
fn feed_lines_sequential(
    file: &mut fs::File,
    feed: &mut LinearFeed,
    sink: &mut impl BranchSink,
) -> io::Result<bool> {
    let mut entries = Vec::with_capacity(BATCH);
    let mut places = Vec::with_capacity(BATCH);
    let mut all_fed = true;
    for_each_block_at(file, |block, at| {
        entries.clear();
        places.clear();
        match at {
            Some(base) => push_located_entries_of_lines(block, base, &mut entries, &mut places),
            None => push_entries_of_lines(block, &mut entries),
        }
        if !feed_entries(feed, sink, &entries, &places) {
            all_fed = false;
            return false;
        }
        true
    })?;
    Ok(all_fed)
}

/// Feeds `entries` in order, each with its line's place when `places` has them (one per entry).
fn feed_entries(
    feed: &mut LinearFeed,
    sink: &mut impl BranchSink,
    entries: &[Entry],
    places: &[LineAt],
) -> bool {
    if places.len() == entries.len() {
        entries
            .iter()
            .zip(places)
            .all(|(entry, &at)| feed.entry_at(entry, at, sink))
    } else {
        entries.iter().all(|entry| feed.entry_ref(entry, sink))
    }
}

/// The two-thread form of [`feed_lines`]; `None` (with nothing read) when the second thread
/// cannot be started.
fn feed_lines_parallel(
    file: &mut fs::File,
    feed: &mut LinearFeed,
    sink: &mut impl BranchSink,
) -> Option<io::Result<bool>> {
    // Batches sent and not yet fully handed to the sink.
    let pending = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(4);
        // Spent batches go back to the reading thread, which frees (and reuses) what it
        // allocated: a block freed by another thread than the one that allocated it makes both
        // contend for the allocator's lock.
        let (back_tx, back_rx) = std::sync::mpsc::channel::<Batch>();
        let pending = &pending;
        let spawned = std::thread::Builder::new()
            .name("relay-session-reader".into())
            .spawn_scoped(scope, move || read_batches(file, &tx, &back_rx, pending));
        let reader = match spawned {
            Ok(reader) => reader,
            // No thread (resource limits): nothing was read, the caller's thread does it all.
            Err(_) => return None,
        };
        let all_fed = feed_batches(rx, &back_tx, feed, sink, pending);
        let read: io::Result<()> = reader
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the session reader thread panicked")));
        Some(read.map(|()| all_fed))
    })
}

/// The reading thread of [`feed_lines_parallel`]: the file's lines in batches of [`BATCH`],
/// decoded here unless the caller's thread is about to wait for one (then it decodes them);
/// stops when the caller stopped receiving.
fn read_batches(
    file: &mut fs::File,
    tx: &SyncSender<Batch>,
    back_rx: &Receiver<Batch>,
    pending: &AtomicUsize,
) -> io::Result<()> {
    let mut buffers = ReaderBuffers::new();
    let mut batches = 0usize;
    for_each_block_at(file, |block, block_at| {
        let mut ends = memchr::memchr_iter(b'\n', block.as_bytes());
        let mut start = 0;
        while start <= block.len() {
            let end = ends.nth(BATCH - 1).unwrap_or(block.len());
            // `start` and `end` are 0, a line end + 1 or the block's end: char boundaries.
            let text = block.get(start..end).unwrap_or_default();
            let text_at = block_at.map(|b| b + start as u64);
            start = end + 1;
            buffers.take_back(back_rx);
            // At most the batch just sent is left for the caller's thread: it is about
            // to wait, so this batch is its to decode.
            let raw = batches % CALLER_DECODES_ONE_IN == CALLER_DECODES_ONE_IN - 1
                || pending.load(Ordering::Relaxed) <= 1;
            batches += 1;
            let batch = if raw {
                buffers.lines(text, text_at)
            } else {
                buffers.entries(text, text_at)
            };
            pending.fetch_add(1, Ordering::Relaxed);
            // The receiver is gone only when the caller stopped feeding.
            if tx.send(batch).is_err() {
                return false;
            }
        }
        true
    })?;
    Ok(())
}

/// The reading thread's vectors: the ones it decodes into, and the spent ones the caller sent
/// back for reuse.
struct ReaderBuffers {
    entries: Vec<Entry>,
    places: Vec<LineAt>,
    spare_entries: Vec<(Vec<Entry>, Vec<LineAt>)>,
    spare_lines: Vec<String>,
}

impl ReaderBuffers {
    fn new() -> Self {
        ReaderBuffers {
            entries: Vec::with_capacity(BATCH),
            places: Vec::with_capacity(BATCH),
            spare_entries: Vec::new(),
            spare_lines: Vec::new(),
        }
    }

    /// Keeps (emptied) every spent batch the caller sent back so far.
    fn take_back(&mut self, back_rx: &Receiver<Batch>) {
        for spent in back_rx.try_iter() {
            match spent {
                Batch::Entries(mut v, mut p) => {
                    v.clear();
                    p.clear();
                    self.spare_entries.push((v, p));
                }
                Batch::Lines(mut l, _) => {
                    l.clear();
                    self.spare_lines.push(l);
                }
            }
        }
    }

    /// A batch of `text`'s lines for the caller's thread to decode.
    fn lines(&mut self, text: &str, text_at: Option<u64>) -> Batch {
        let mut lines = self.spare_lines.pop().unwrap_or_default();
        lines.push_str(text);
        Batch::Lines(lines, text_at)
    }

    /// A batch of the entries `text`'s lines decode to, decoded here.
    fn entries(&mut self, text: &str, text_at: Option<u64>) -> Batch {
        match text_at {
            Some(base) => {
                push_located_entries_of_lines(text, base, &mut self.entries, &mut self.places)
            }
            None => push_entries_of_lines(text, &mut self.entries),
        }
        let (next, next_places) = self
            .spare_entries
            .pop()
            .unwrap_or_else(|| (Vec::with_capacity(BATCH), Vec::with_capacity(BATCH)));
        Batch::Entries(
            std::mem::replace(&mut self.entries, next),
            std::mem::replace(&mut self.places, next_places),
        )
    }
}

/// The caller's side of [`feed_lines_parallel`]: every batch fed in order (lines decoded here
/// first), spent batches sent back to the reading thread. False when the sink stopped the feed
/// (dropping `rx` then stops the reader).
fn feed_batches(
    rx: Receiver<Batch>,
    back_tx: &Sender<Batch>,
    feed: &mut LinearFeed,
    sink: &mut impl BranchSink,
    pending: &AtomicUsize,
) -> bool {
    let mut decoded = Vec::with_capacity(BATCH);
    let mut decoded_at = Vec::with_capacity(BATCH);
    for batch in rx {
        let (entries, places, spent) = match batch {
            Batch::Entries(entries, places) => (entries, places, None),
            Batch::Lines(lines, at) => {
                match at {
                    Some(base) => {
                        push_located_entries_of_lines(&lines, base, &mut decoded, &mut decoded_at)
                    }
                    None => push_entries_of_lines(&lines, &mut decoded),
                }
                (
                    std::mem::take(&mut decoded),
                    std::mem::take(&mut decoded_at),
                    Some(lines),
                )
            }
        };
        if !feed_entries(feed, sink, &entries, &places) {
            return false;
        }
        match spent {
            // Decoded here: freed here, and the vectors kept for the next batch of lines.
            Some(lines) => {
                decoded = entries;
                decoded.clear();
                decoded_at = places;
                decoded_at.clear();
                let _ = back_tx.send(Batch::Lines(lines, None));
            }
            None => {
                let _ = back_tx.send(Batch::Entries(entries, places));
            }
        }
        pending.fetch_sub(1, Ordering::Relaxed);
    }
    true
}

/// Size of the buffer [`for_each_block_at`] reads into (it grows only for a longer line). Small
/// enough that what one read copies in is still in the CPU cache when it is decoded (measured:
/// 1 MiB loads a large session about a tenth faster than 8 MiB).
const CHUNK: usize = 1 << 20;

/// Calls `f` with the lines of `file` in order, as blocks of whole lines joined by `\n` (the
/// `\n` after a block's last line left out; a block is at most one buffer of `CHUNK` bytes,
/// or one longer line), reading into one reused buffer, until `f` returns false (then
/// `Ok(false)`). Bytes that are not valid UTF-8 are replaced (U+FFFD), as [`read_session_text`]
/// does for the whole text (a `\n` never belongs to an invalid sequence, so the lines are
/// the same).
///
/// `f` also gets the file offset of each block's first byte, while it is known: a block that had
/// to be repaired (bytes that are not UTF-8 replaced) is not the file's bytes, so from it on the
/// offset is `None`.
fn for_each_block_at(
    file: &mut fs::File,
    mut f: impl FnMut(&str, Option<u64>) -> bool,
) -> io::Result<bool> {
    let mut at = Some(0u64);
    for_each_block_exact(file, |block, lossy| {
        if lossy {
            at = None;
        }
        let here = at;
        // Each block but the last is followed by one `\n`, which the block leaves out.
        at = at.map(|a| a + block.len() as u64 + 1);
        f(block, here)
    })
}

/// [`for_each_block_at`] for any reader: `f` also hears whether the block had to be
/// repaired (bytes that are not UTF-8 replaced), when the block's length is no longer the file's.
fn for_each_block_exact(
    file: &mut impl Read,
    mut f: impl FnMut(&str, bool) -> bool,
) -> io::Result<bool> {
    let mut buf = vec![0u8; CHUNK];
    let mut filled = 0;
    let mut emit = |bytes: &[u8]| match std::str::from_utf8(bytes) {
        Ok(block) => f(block, false),
        Err(_) => f(&String::from_utf8_lossy(bytes), true),
    };
    loop {
        if filled == buf.len() {
            // One line longer than the buffer: make room for more of it.
            buf.resize(buf.len() * 2, 0);
        }
        let n = match file.read(buf.get_mut(filled..).unwrap_or_default()) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(filled == 0 || emit(buf.get(..filled).unwrap_or_default()));
        }
        let scanned = filled;
        filled += n;
        let Some(last_nl) = buf
            .get(scanned..filled)
            .and_then(|fresh| memchr::memrchr(b'\n', fresh))
            .map(|i| scanned + i)
        else {
            continue;
        };
        if !emit(buf.get(..last_nl).unwrap_or_default()) {
            return Ok(false);
        }
        // `last_nl < filled <= buf.len()`: the range is in bounds.
        buf.copy_within(last_nl + 1..filled, 0);
        filled -= last_nl + 1;
    }
}

/// The session files at `path`: a file is returned as is; a directory yields every `*.jsonl`
/// file below it (recursively, symbolic links to directories not followed), sorted by path.
pub fn find_sessions(path: &Path) -> Result<Vec<PathBuf>, SessionReadError> {
    let meta = fs::metadata(path).map_err(|e| SessionReadError::new(path, e))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut found = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| SessionReadError::new(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| SessionReadError::new(&dir, e))?;
            let p = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| SessionReadError::new(&p, e))?;
            if kind.is_dir() {
                pending.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") && (kind.is_file() || p.is_file())
            {
                found.push(p);
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::test_support::TempDir;
    use relay_core::entry::Entry;

    #[test]
    fn reads_and_reports_malformed_lines() {
        let dir = TempDir::new("read");
        let file = dir.join("s.jsonl");
        fs::write(
            &file,
            "{\"type\":\"session\",\"id\":\"S\"}\n{broken\n{\"type\":\"custom\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"T\",\"customType\":\"k\"}\n",
        )
        .unwrap();
        let parsed = read_session(&file).unwrap();
        assert_eq!(parsed.header.unwrap().id, "S");
        assert_eq!(parsed.entries.len(), 1);
        assert_eq!(parsed.errors[0].line, 2);
        let missing = read_session(&dir.join("nope.jsonl")).unwrap_err();
        assert!(missing.to_string().contains("nope.jsonl"), "{missing}");
    }

    /// Collects what a sink is fed.
    #[derive(Default)]
    struct Collect(Vec<Entry>, usize);

    impl BranchSink for Collect {
        fn begin(&mut self) {
            self.0.clear();
            self.1 += 1;
        }
        fn entry(&mut self, entry: Entry) {
            self.0.push(entry);
        }
    }

    /// A sink that stops wanting the branch after `keep` entries (a load nobody waits for).
    struct StopAfter {
        keep: usize,
        got: usize,
    }

    impl BranchSink for StopAfter {
        fn begin(&mut self) {
            self.got = 0;
        }
        fn entry(&mut self, _entry: Entry) {
            self.got += 1;
        }
        fn wanted(&self) -> bool {
            self.got < self.keep
        }
    }

    #[test]
    fn a_load_nobody_wants_any_more_stops_without_reading_the_file_again() {
        let dir = TempDir::new("unwanted");
        let file = linear_session_file(&dir, 5_000, "");
        for threads in [Threads::One, Threads::Two] {
            let mut sink = StopAfter { keep: 10, got: 0 };
            let found = stream_session_branch_with(&file, "e4999", &mut sink, threads).unwrap();
            assert!(!found, "the branch is not reported as loaded");
            assert_eq!(sink.got, 10, "no entry after the sink stopped wanting them");
            let mut all = Collect::default();
            assert!(stream_session_branch_with(&file, "e4999", &mut all, threads).unwrap());
            assert_eq!(all.0.len(), 5_000);
        }
    }

    /// A linear session file, `n` custom entries `e0`… each the child of the one before.
    fn linear_session(n: usize) -> String {
        let mut text = String::from("{\"type\":\"session\",\"id\":\"S\"}\n");
        for i in 0..n {
            let parent = i.checked_sub(1).map(|p| format!("e{p}"));
            text.push_str(&custom_line(&format!("e{i}"), parent.as_deref()));
        }
        text
    }

    /// A custom entry's line (a `\n` ends it): `id`, the child of `parent`.
    fn custom_line(id: &str, parent: Option<&str>) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!("{{\"type\":\"custom\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"T\",\"customType\":\"k\"}}\n")
    }

    /// `s.jsonl` in `dir`: [`linear_session`] of `n` entries, then the lines `more`.
    fn linear_session_file(dir: &Path, n: usize, more: &str) -> PathBuf {
        let file = dir.join("s.jsonl");
        fs::write(&file, linear_session(n) + more).unwrap();
        file
    }

    /// Pi goes on writing while a whole history loads (a `pi -p` run's prompt and answer): the
    /// reader stops at the leaf it was given, in one pass, whatever follows it.
    #[test]
    fn a_leaf_before_the_end_of_the_file_is_read_up_to_it_in_one_pass() {
        let dir = TempDir::new("leaf-before-end");
        // After the leaf: more of the same branch, a line that is not JSON, and a sibling.
        let more = format!("not json\n{}", custom_line("x", Some("e5")));
        let file = linear_session_file(&dir, 5_000, &more);
        for threads in [Threads::One, Threads::Two] {
            for leaf in ["e2999", "e4999"] {
                let mut sink = Collect::default();
                assert!(stream_session_branch_with(&file, leaf, &mut sink, threads).unwrap());
                let want: usize = leaf[1..].parse::<usize>().unwrap() + 1;
                assert_eq!(sink.0.len(), want, "{leaf}");
                assert_eq!(sink.0.last().map(|e| e.id.as_str()), Some(leaf));
                assert_eq!(
                    sink.1, 1,
                    "one pass, no second read by parents ({leaf}, {threads:?})"
                );
            }
            // The sibling written after the leaf is a branch: found from the parents.
            let mut sink = Collect::default();
            assert!(stream_session_branch_with(&file, "x", &mut sink, threads).unwrap());
            let ids: Vec<&str> = sink.0.iter().map(|e| e.id.as_str()).collect();
            assert_eq!(ids, ["e0", "e1", "e2", "e3", "e4", "e5", "x"]);
        }
    }

    /// A file with branches is read whole and its branch found from the parents: a load nobody
    /// waits for stops there too, without handing over the rest.
    #[test]
    fn a_load_by_parents_nobody_wants_any_more_stops() {
        let dir = TempDir::new("unwanted-parents");
        let file = linear_session_file(&dir, 5_000, &custom_line("x", Some("e4000")));
        let mut sink = StopAfter { keep: 10, got: 0 };
        assert!(!stream_session_branch_with(&file, "x", &mut sink, Threads::One).unwrap());
        assert_eq!(sink.got, 10, "no entry after the sink stopped wanting them");
        let mut all = Collect::default();
        assert!(stream_session_branch_with(&file, "x", &mut all, Threads::One).unwrap());
        assert_eq!(all.0.len(), 4_002);
    }

    /// Skimming on two threads gives what one thread gives, wherever the middle of the file falls
    /// (inside a short line, a long one, a `\r\n`, a line that is not UTF-8, the last line), and
    /// so does the tail load built on it.
    #[test]
    fn skimming_in_two_halves_gives_what_one_thread_gives() {
        use serde_json::json;
        let dir = TempDir::new("halves");
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut split_seen = 0;
        for case in 0..60 {
            let mut text = format!("{}\n", json!({"type": "session", "id": "S"}));
            let mut parent: Option<String> = None;
            let mut last = String::new();
            for i in 0..(2 + next(40)) {
                let id = format!("e{case}-{i}");
                let cap = if next(8) == 0 { 200_000 } else { 300 };
                let body = "x".repeat(next(cap) as usize);
                let line = if next(9) == 0 {
                    json!({"type": "compaction", "id": id, "parentId": parent, "timestamp": "T",
                           "summary": body, "firstKeptEntryId": parent, "tokensBefore": 1})
                } else {
                    json!({"type": "message", "id": id, "parentId": parent, "timestamp": "T",
                           "message": {"role": "user", "content": [{"type": "text", "text": body}]}})
                };
                text.push_str(&line.to_string());
                text.push_str(if next(5) == 0 { "\r\n" } else { "\n" });
                parent = Some(id.clone());
                last = id;
            }
            let mut bytes = text.into_bytes();
            if case % 10 == 3 {
                // A line that is not UTF-8: the offsets are not the file's, so no tail either way.
                bytes.extend_from_slice(b"{\"type\":\"message\xff\"}\n");
            }
            if case % 10 == 7 {
                // No line break at the end.
                bytes.pop();
            }
            let file = dir.join(format!("s{case}.jsonl"));
            fs::write(&file, &bytes).unwrap();
            let one = skim_file(&file, &mut fs::File::open(&file).unwrap(), u64::MAX).unwrap();
            let two = skim_file(&file, &mut fs::File::open(&file).unwrap(), 0).unwrap();
            let len = bytes.len() as u64;
            if line_start_after(&mut fs::File::open(&file).unwrap(), len / 2, len)
                .unwrap()
                .is_some()
            {
                split_seen += 1;
            }
            assert_eq!(one.entries, two.entries, "case {case}");
            assert_eq!(one.starts, two.starts, "case {case}");
            assert_eq!(one.exact, two.exact, "case {case}");
            let (mut a, mut b) = (Collect::default(), Collect::default());
            assert_eq!(
                stream_session_tail_with(&file, Leaf::Id(&last), &mut a, None).unwrap(),
                stream_session_tail_with(&file, Leaf::Id(&last), &mut b, Some(0)).unwrap(),
                "case {case}"
            );
            assert_eq!(a.0, b.0, "case {case}");
            // At the file's last entry (a read ahead's leaf).
            let mut c = Collect::default();
            stream_session_tail(&file, Leaf::Last, &mut c).unwrap();
            assert_eq!(a.0, c.0, "case {case}");
        }
        // The cases did run on two threads.
        assert!(split_seen >= 50, "{split_seen} of 60 split");
    }

    #[test]
    fn the_tail_load_feeds_the_branch_with_its_earlier_windows_skimmed() {
        use serde_json::json;
        let dir = TempDir::new("tail");
        let file = dir.join("s.jsonl");
        let msg = |id: &str, parent: Option<&str>, role: &str, text: &str| {
            json!({"type": "message", "id": id, "parentId": parent, "timestamp": "T",
                   "message": {"role": role, "content": [{"type": "text", "text": text}], "usage": {"totalTokens": 7}}})
        };
        let compaction = |id: &str, parent: &str| {
            json!({"type": "compaction", "id": id, "parentId": parent, "timestamp": "T",
                   "summary": "s", "firstKeptEntryId": parent, "tokensBefore": 1})
        };
        // Two branches from b: the leaf's (c1, k2, d1: its window opens at k2) and an abandoned
        // one written after it (x1, k3, x2); `\r\n` line ends.
        let lines = [
            json!({"type": "session", "id": "S"}),
            msg("a", None, "user", "first é"),
            msg("b", Some("a"), "assistant", "answer"),
            compaction("k1", "b"),
            msg("c1", Some("k1"), "user", "kept"),
            compaction("k2", "c1"),
            msg("x1", Some("k1"), "user", "abandoned"),
            compaction("k3", "x1"),
            msg("d1", Some("k2"), "user", "window text"),
            msg("x2", Some("k3"), "assistant", "abandoned answer"),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\r\n")).collect();
        fs::write(&file, &text).unwrap();
        let mut tail = Collect::default();
        assert_eq!(
            stream_session_tail(&file, Leaf::Id("d1"), &mut tail).unwrap(),
            TailLoad::Tail
        );
        assert_eq!(tail.1, 1);
        let mut whole = Collect::default();
        assert!(stream_session_branch(&file, "d1", &mut whole).unwrap());
        let ids: Vec<&str> = tail.0.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "k1", "c1", "k2", "d1"]);
        for (i, (t, w)) in tail.0.iter().zip(&whole.0).enumerate() {
            if i < 4 {
                assert_eq!(
                    Some(t.clone()),
                    skim_entry_of_line(&lines[i + 1].to_string()),
                    "{}",
                    t.id
                );
                // Messages lose their texts; other entries are read in full.
                assert_eq!(
                    t == w,
                    matches!(t.kind, relay_core::entry::EntryKind::Compaction { .. }),
                    "{}",
                    t.id
                );
            } else {
                assert_eq!(t, w, "{} is read in full", t.id);
            }
        }
        // The file's last entry is the leaf Pi opens a session at: here the abandoned branch's.
        let mut last = Collect::default();
        assert_eq!(
            stream_session_tail(&file, Leaf::Last, &mut last).unwrap(),
            TailLoad::Tail
        );
        let ids: Vec<&str> = last.0.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "k1", "x1", "k3", "x2"]);
        // No leaf; a branch without a compaction (nothing to read apart).
        assert_eq!(
            stream_session_tail(&file, Leaf::Id("zz"), &mut Collect::default()).unwrap(),
            TailLoad::NoLeaf
        );
        assert_eq!(
            stream_session_tail(&file, Leaf::Id("b"), &mut Collect::default()).unwrap(),
            TailLoad::NoTail { leaf: "b".into() }
        );
        let empty = dir.join("empty.jsonl");
        fs::write(&empty, "").unwrap();
        assert_eq!(
            stream_session_tail(&empty, Leaf::Last, &mut Collect::default()).unwrap(),
            TailLoad::NoLeaf
        );
        assert_eq!(session_header_id(&file).unwrap().as_deref(), Some("S"));
        assert_eq!(session_header_id(&empty).unwrap(), None);
    }

    /// Replays a streamed branch into a `LoadedBranch` (texts held), as a load at once does.
    struct Replay(relay_core::engine::LoadedBranch, bool);

    impl BranchSink for Replay {
        fn begin(&mut self) {
            self.0 = relay_core::engine::LoadedBranch::new("S");
            self.1 = true;
        }
        fn entry(&mut self, entry: Entry) {
            self.0.push(&entry);
        }
        fn entry_ref(&mut self, entry: &Entry) {
            self.0.push(entry);
        }
    }

    /// The engine whose mirror is `branch` of session `S`, resynced.
    fn resynced(branch: &[Entry]) -> relay_core::engine::Engine {
        relay_core::engine::Engine::from(relay_core::engine::LoadedBranch::of("S", branch))
    }

    /// Loads a branch as the addon's whole load does: into a `LoadedBranch` that keeps each
    /// item's line in the file (read back through [`SessionLines`]), not its text.
    struct Located {
        lines: std::sync::Arc<SessionLines>,
        branch: Option<relay_core::engine::LoadedBranch>,
    }

    impl BranchSink for Located {
        fn begin(&mut self) {
            let mut branch = relay_core::engine::LoadedBranch::new("S");
            branch.read_texts_from(self.lines.clone());
            self.branch = Some(branch);
        }
        fn entry(&mut self, entry: Entry) {
            self.entry_ref(&entry);
        }
        fn entry_ref(&mut self, entry: &Entry) {
            self.branch.as_mut().unwrap().push(entry);
        }
        fn entry_at(&mut self, entry: &Entry, at: LineAt) {
            self.branch.as_mut().unwrap().push_at(entry, at);
        }
    }

    /// The engine a located load of `leaf` installs, and the history's bytes of text held in
    /// memory.
    fn located_load(
        file: &Path,
        leaf: &str,
        threads: Threads,
    ) -> (relay_core::engine::Engine, usize) {
        let lines = std::sync::Arc::new(SessionLines::open(file).unwrap());
        let mut sink = Located {
            lines,
            branch: None,
        };
        assert!(stream_session_branch_with(file, leaf, &mut sink, threads).unwrap());
        let engine = relay_core::engine::Engine::from(sink.branch.unwrap());
        let held = engine.history().held_text_bytes();
        (engine, held)
    }

    fn history_view(engine: &relay_core::engine::Engine) -> Vec<String> {
        use serde_json::json;
        let h = engine.history();
        let mut out = vec![
            format!("{:?} {} {}", h.tip(), h.entry_count(), h.item_count()),
            h.list_windows(&json!({})).text,
        ];
        for w in h.window_ids() {
            out.push(h.list_items(&json!({"window_id": w, "limit": 1000})).text);
        }
        for q in ["body", "7", "summary"] {
            out.push(h.search_contents(&json!({"query": q, "limit": 100})).text);
        }
        out
    }

    #[test]
    fn streamed_load_equals_resync() {
        let dir = TempDir::new("stream");
        let msg = |id: &str, parent: &str, role: &str, text: &str| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"T","message":{{"role":"{role}","content":[{{"type":"text","text":"{text}"}}]}}}}"#
            )
        };
        let mut linear = vec![
            r#"{"type":"session","version":3,"id":"S","timestamp":"T","cwd":"/w"}"#.to_string(),
        ];
        let mut prev = "null".to_string();
        for i in 0..40 {
            let id = format!("m{i}");
            if i % 15 == 14 {
                linear.push(format!(
                    r#"{{"type":"compaction","id":"{id}","parentId":{prev},"timestamp":"T","summary":"summary {i}","firstKeptEntryId":null,"tokensBefore":10}}"#
                ));
            } else {
                let role = ["user", "assistant", "toolResult"][i % 3];
                linear.push(msg(&id, &prev, role, &format!("body {i} line\\nnext é😀")));
            }
            prev = format!("\"{id}\"");
        }
        // A second branch off m20, written after the first one.
        let mut branched = linear.clone();
        branched.push(msg("x1", "\"m20\"", "user", "body x1"));
        branched.push(msg("x2", "\"x1\"", "assistant", "body x2"));
        for (name, lines, leaves) in [
            ("linear", &linear, vec!["m39", "m30"]),
            ("branched", &branched, vec!["x2", "m39", "x1", "m5"]),
        ] {
            let file = dir.join(format!("{name}.jsonl"));
            fs::write(&file, lines.join("\n") + "\n").unwrap();
            for leaf in leaves {
                let parsed = read_session(&file).unwrap();
                let branch: Vec<Entry> =
                    relay_core::entry::branch_indices(&parsed.entries, Some(leaf))
                        .into_iter()
                        .map(|i| parsed.entries[i].clone())
                        .collect();
                let expected = resynced(&branch);
                let mut replay = Replay(relay_core::engine::LoadedBranch::new("S"), false);
                let found = stream_session_branch(&file, leaf, &mut replay).unwrap();
                assert!(found && replay.1, "{name} {leaf}");
                let got = relay_core::engine::Engine::from(replay.0);
                assert_eq!(got.tip(), Some(leaf));
                assert_eq!(history_view(&got), history_view(&expected), "{name} {leaf}");
                // The same, with the texts left in the file and read back by offset.
                let (located, held) = located_load(&file, leaf, Threads::Two);
                assert_eq!(held, 0, "{name} {leaf}: no text held in memory");
                assert_eq!(
                    history_view(&located),
                    history_view(&expected),
                    "{name} {leaf}"
                );
            }
            let mut replay = Replay(relay_core::engine::LoadedBranch::new("S"), false);
            assert!(!stream_session_branch(&file, "nope", &mut replay).unwrap());
        }
    }

    /// Long enough for many batches, some decoded by each thread, with escapes, a malformed
    /// line and (in the second file) a branch that breaks the chain after many batches.
    #[test]
    fn long_files_stream_like_resync() {
        let dir = TempDir::new("long");
        let mut lines =
            vec![r#"{"type":"session","version":3,"id":"S","timestamp":"T"}"#.to_string()];
        let mut prev = "null".to_string();
        for i in 0..(BATCH * CALLER_DECODES_ONE_IN * 2 + 37) {
            let id = format!("{i:08x}");
            let role = ["user", "assistant", "toolResult"][i % 3];
            lines.push(format!(
                r#"{{"type":"message","id":"{id}","parentId":{prev},"timestamp":"T","message":{{"role":"{role}","content":[{{"type":"text","text":"body {i}\n\"q\" \u00e9\ud83d\ude00"}}]}}}}"#
            ));
            if i == 500 {
                lines.push("{broken".to_string());
            }
            prev = format!("\"{id}\"");
        }
        let leaf = format!("{:08x}", BATCH * CALLER_DECODES_ONE_IN * 2 + 36);
        let mut branched = lines.clone();
        branched.insert(
            lines.len() - 3,
            lines[lines.len() - 1].replace(&leaf, "ffffffff"),
        );
        for (name, lines) in [("linear", lines), ("branched", branched)] {
            let file = dir.join(format!("{name}.jsonl"));
            fs::write(&file, lines.join("\n")).unwrap();
            let parsed = read_session(&file).unwrap();
            let branch: Vec<Entry> =
                relay_core::entry::branch_indices(&parsed.entries, Some(&leaf))
                    .into_iter()
                    .map(|i| parsed.entries[i].clone())
                    .collect();
            assert!(branch.len() > 2000, "{name}");
            let expected = resynced(&branch);
            // Two threads, and the one-thread fallback used when no thread can be started.
            for threads in [Threads::Two, Threads::One] {
                let mut replay = Replay(relay_core::engine::LoadedBranch::new("S"), false);
                assert!(stream_session_branch_with(&file, &leaf, &mut replay, threads).unwrap());
                let got = relay_core::engine::Engine::from(replay.0);
                assert_eq!(got.tip(), Some(leaf.as_str()));
                assert_eq!(
                    history_view(&got),
                    history_view(&expected),
                    "{name} {threads:?}"
                );
                let (located, held) = located_load(&file, &leaf, threads);
                assert_eq!(held, 0, "{name} {threads:?}: no text held in memory");
                assert_eq!(
                    history_view(&located),
                    history_view(&expected),
                    "{name} {threads:?}, texts read back"
                );
            }
        }
    }

    #[test]
    fn finds_jsonl_files_recursively() {
        let dir = TempDir::new("find");
        fs::create_dir_all(dir.join("b/c")).unwrap();
        for f in ["b/c/2.jsonl", "a.jsonl", "b/1.jsonl", "b/notes.txt"] {
            fs::write(dir.join(f), "").unwrap();
        }
        let found = find_sessions(&dir).unwrap();
        let rel: Vec<_> = found
            .iter()
            .map(|p| p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(rel, ["a.jsonl", "b/1.jsonl", "b/c/2.jsonl"]);
        assert_eq!(
            find_sessions(&dir.join("b/notes.txt")).unwrap(),
            [dir.join("b/notes.txt")]
        );
        assert!(find_sessions(&dir.join("missing")).is_err());
    }
}

#[cfg(test)]
mod probe {
    use super::*;
    use relay_core::entry::Entry;

    struct Count(usize);
    impl BranchSink for Count {
        fn begin(&mut self) {
            self.0 = 0;
        }
        fn entry(&mut self, _e: Entry) {
            self.0 += 1;
        }
        fn entry_ref(&mut self, _e: &Entry) {
            self.0 += 1;
        }
    }

    /// `RELAY_PROBE_FILE=<session> RELAY_PROBE_LEAF=<id> cargo test --profile bench -p relay-io
    /// tail_probe -- --ignored --nocapture`: the first pass's parts, timed.
    #[test]
    #[ignore = "a timing probe on a given session file"]
    fn tail_probe() {
        let file = PathBuf::from(std::env::var("RELAY_PROBE_FILE").unwrap());
        let leaf = std::env::var("RELAY_PROBE_LEAF").unwrap();
        if std::env::var("RELAY_PROBE_ONLY").is_ok_and(|v| v == "tail") {
            // CPU time of the whole process (all threads), from /proc/self/stat, in ms.
            let cpu = || {
                let stat = fs::read_to_string("/proc/self/stat").unwrap();
                let fields: Vec<&str> = stat
                    .rsplit(')')
                    .next()
                    .unwrap()
                    .split_whitespace()
                    .collect();
                (fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()) * 10
            };
            for _ in 0..5 {
                let (t, c) = (std::time::Instant::now(), cpu());
                let mut sink = Count(0);
                let r = stream_session_tail(&file, Leaf::Id(&leaf), &mut sink).unwrap();
                eprintln!(
                    "tail {:?} wall, {} ms CPU, {r:?} {} entries",
                    t.elapsed(),
                    cpu() - c,
                    sink.0
                );
            }
            return;
        }
        if std::env::var("RELAY_PROBE_ONLY").is_ok_and(|v| v == "skim1") {
            for _ in 0..3 {
                let t = std::time::Instant::now();
                let one = skim_file(&file, &mut fs::File::open(&file).unwrap(), u64::MAX).unwrap();
                eprintln!(
                    "skim 1 thread {:?} ({} entries)",
                    t.elapsed(),
                    one.entries.len()
                );
            }
            return;
        }
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let mut f = fs::File::open(&file).unwrap();
            let mut n = 0usize;
            for_each_block_exact(&mut f, |b, _| {
                n += b.len();
                true
            })
            .unwrap();
            let read = t.elapsed();
            let t = std::time::Instant::now();
            let one = skim_file(&file, &mut fs::File::open(&file).unwrap(), u64::MAX).unwrap();
            let skim1 = t.elapsed();
            let t = std::time::Instant::now();
            let two = skim_file(&file, &mut fs::File::open(&file).unwrap(), 0).unwrap();
            let skim2 = t.elapsed();
            let t = std::time::Instant::now();
            let mut sink = Count(0);
            let r = stream_session_tail(&file, Leaf::Id(&leaf), &mut sink).unwrap();
            let tail = t.elapsed();
            eprintln!(
                "read+utf8 {read:?} ({n} B) | skim 1 thread {skim1:?} | skim 2 threads {skim2:?} ({} entries) | tail {tail:?} {r:?} {} entries",
                one.entries.len(),
                sink.0
            );
            assert_eq!(one.entries.len(), two.entries.len());
        }
    }
}
