//! The first pass of a large session's load: the current window read in full, the earlier
//! windows skimmed (see [`stream_session_tail`]), and what it needs (the session's id, where
//! the branch ends, how it shares the machine).

use super::*;

/// What [`stream_session_tail`] fed to its sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailLoad {
    /// The file has no entry with the leaf's id; the sink is untouched.
    NoLeaf,
    /// The branch has no compaction (its one window is all of it), or the file is not valid
    /// UTF-8 throughout: there is no tail to read apart, the sink is untouched, and the caller
    /// loads the whole branch ([`stream_session_branch`]) that ends at `leaf` (the leaf asked
    /// for, or the file's last entry for [`Leaf::Last`]).
    NoTail { leaf: String },
    /// The sink got the whole branch, root first: the entries before the current window (from
    /// its opening compaction on) skimmed ([`skim_entry_of_line`]: messages without their texts),
    /// the window's in full.
    Tail,
}

/// Where the branch [`stream_session_tail`] reads ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf<'a> {
    /// The entry with this id.
    Id(&'a str),
    /// The file's last entry: the leaf Pi gives a session it opens from its file (a read ahead
    /// of Pi's `session_start` has no other).
    Last,
}

/// Reads a session file for what the current window needs first: every line skimmed (ids,
/// parents, roles, Relay's entries; no message text is copied or measured), the branch that
/// ends at `leaf` found from the parents, then the lines from its last compaction on read
/// again and decoded in full. The sink gets the branch as [`TailLoad::Tail`] describes; about a
/// seventh of the work of a whole load on a large session. Only the skimmed entries are held
/// (no text), never the file.
pub fn stream_session_tail(
    path: &Path,
    leaf: Leaf<'_>,
    sink: &mut impl BranchSink,
) -> Result<TailLoad, SessionReadError> {
    stream_session_tail_with(path, leaf, sink, Some(PARALLEL_SKIM_BYTES))
}

/// The id in the header line of a session file (`{"type":"session","id":…}`, its first line;
/// at most 1 MiB of it is read): `None` when the first line is not a session header.
pub fn session_header_id(path: &Path) -> Result<Option<String>, SessionReadError> {
    let fail = |e: io::Error| SessionReadError::new(path, e);
    let file = fs::File::open(path).map_err(fail)?;
    let mut line = String::new();
    io::BufRead::read_line(&mut io::BufReader::new(file.take(1 << 20)), &mut line).map_err(fail)?;
    Ok(match relay_core::entry::parse_line(line.trim_end()) {
        Ok(relay_core::entry::Line::Header(header)) => Some(header.id),
        _ => None,
    })
}

/// A file at least this large is skimmed on two threads, one half each (split at a line break):
/// the skim is the first pass's main cost, and Pi's hooks wait for it.
const PARALLEL_SKIM_BYTES: u64 = 32 << 20;

/// [`stream_session_tail`], skimming on two threads from `parallel_from` bytes on (`None`: all
/// on this thread).
pub(super) fn stream_session_tail_with(
    path: &Path,
    leaf: Leaf<'_>,
    sink: &mut impl BranchSink,
    parallel_from: Option<u64>,
) -> Result<TailLoad, SessionReadError> {
    let fail = |e: io::Error| SessionReadError::new(path, e);
    let mut file = fs::File::open(path).map_err(fail)?;
    let Skimmed {
        entries,
        starts,
        exact,
    } = skim_file(path, &mut file, parallel_from.unwrap_or(u64::MAX)).map_err(fail)?;
    let leaf_id = match leaf {
        Leaf::Id(id) => id.to_string(),
        Leaf::Last => match entries.last() {
            Some(entry) => entry.id.clone(),
            None => return Ok(TailLoad::NoLeaf),
        },
    };
    let path_ix = branch_indices(&entries, Some(&leaf_id));
    if path_ix.is_empty() {
        return Ok(TailLoad::NoLeaf);
    }
    let no_tail = || TailLoad::NoTail {
        leaf: leaf_id.clone(),
    };
    let opening = path_ix.iter().rposition(|&i| {
        matches!(
            entries.get(i).map(|e| &e.kind),
            Some(EntryKind::Compaction { .. })
        )
    });
    let (Some(k), true) = (opening, exact) else {
        return Ok(no_tail());
    };
    let (before, window) = path_ix.split_at(k);
    let from = window
        .first()
        .and_then(|&i| starts.get(i))
        .copied()
        .unwrap_or(0);
    file.seek(SeekFrom::Start(from)).map_err(fail)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(fail)?;
    let text = String::from_utf8_lossy(&bytes);
    let read = |part: &[usize]| read_window(&text, from, &starts, &entries, part);
    // A large window is read in full on two threads, one half (by bytes) each.
    let half = from.saturating_add(text.len() as u64 / 2);
    let split = if parallel_from.is_some_and(|p| text.len() as u64 >= p.min(PARALLEL_WINDOW_BYTES))
    {
        window.partition_point(|&i| starts.get(i).is_some_and(|&s| s < half))
    } else {
        0
    };
    let tail = match window.split_at(split) {
        ([], _) | (_, []) => read(window),
        (first, second) => std::thread::scope(|scope| {
            let spawned = std::thread::Builder::new()
                .name("relay-session-window".into())
                .spawn_scoped(scope, || read(second));
            let Ok(handle) = spawned else {
                return read(window);
            };
            let mut tail = read(first);
            match (&mut tail, handle.join()) {
                (Some(tail), Ok(Some(rest))) => tail.extend(rest),
                _ => return None,
            }
            tail
        }),
    };
    // `None`: the file changed under the reader, no tail to trust.
    let Some(tail) = tail else {
        return Ok(no_tail());
    };
    drop(text);
    drop(bytes);
    // Each skimmed entry is handed over by value, so that what it holds is freed as the branch
    // grows (the first pass's peak is the skimmed entries and the branch built from them).
    let mut entries = entries;
    sink.begin();
    for &i in before {
        if let Some(entry) = entries.get_mut(i) {
            let placeholder = Entry {
                id: String::new(),
                parent_id: None,
                timestamp: String::new(),
                kind: EntryKind::Usage,
            };
            sink.entry(std::mem::replace(entry, placeholder));
        }
    }
    for entry in tail {
        sink.entry(entry);
    }
    Ok(TailLoad::Tail)
}

/// A current window at least this large (in bytes) is read in full on two threads (a file at
/// least `parallel_from` large when that is smaller: the tests).
const PARALLEL_WINDOW_BYTES: u64 = 4 << 20;

/// The entries `window` names (indices into the skimmed `entries`, whose lines start at
/// `starts`), read in full from `text`, the file from byte `from` on; `None` when a line no
/// longer holds its skimmed entry (the file changed under the reader).
fn read_window(
    text: &str,
    from: u64,
    starts: &[u64],
    entries: &[Entry],
    window: &[usize],
) -> Option<Vec<Entry>> {
    let mut tail = Vec::with_capacity(window.len());
    for &i in window {
        let line = starts
            .get(i)
            .and_then(|&s| s.checked_sub(from))
            .and_then(|o| usize::try_from(o).ok())
            .and_then(|o| text.get(o..))
            .map(|rest| rest.split('\n').next().unwrap_or_default());
        match line.and_then(last_entry_of_line) {
            // The same line read in full: the same entry, with its texts.
            Some(entry) if entries.get(i).is_some_and(|e| e.id == entry.id) => tail.push(entry),
            _ => return None,
        }
    }
    Some(tail)
}
