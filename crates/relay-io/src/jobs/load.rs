//! The session-load job: a branch of a session file read on a worker into a [`LoadedBranch`]
//! (the engine installs it when the job's `Done` comes back).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use relay_core::engine::{LoadPass, LoadedBranch};
use relay_core::entry::{BranchSink, Entry, LineAt};

use crate::boundary;
use crate::session::{Leaf, TailLoad};

/// Feeds a [`LoadedBranch`] from the file's entries until `cancel` is set.
struct Sink<'a> {
    session_id: &'a str,
    branch: Option<LoadedBranch>,
    cancel: &'a AtomicBool,
    lines: Option<Arc<dyn relay_core::history::LineSource>>,
}

impl BranchSink for Sink<'_> {
    fn wanted(&self) -> bool {
        !self.cancel.load(Ordering::Relaxed)
    }
    fn begin(&mut self) {
        let mut branch = LoadedBranch::new(self.session_id);
        if let Some(lines) = &self.lines {
            branch.read_texts_from(lines.clone());
        }
        self.branch = Some(branch);
    }
    fn entry(&mut self, entry: Entry) {
        self.entry_ref(&entry);
    }
    fn entry_ref(&mut self, entry: &Entry) {
        if let Some(branch) = self.branch.as_mut() {
            branch.push(entry);
        }
    }
    fn entry_at(&mut self, entry: &Entry, at: LineAt) {
        if let Some(branch) = self.branch.as_mut() {
            branch.push_at(entry, at);
        }
    }
}

/// Read the branch of `path` that ends at `leaf` (`None`: the file's last entry), of session
/// `session_id` (`None`: the file header's). [`LoadPass::Current`] reads the current window in
/// full and skims the earlier ones (a branch without an earlier window is read whole);
/// [`LoadPass::Rest`] reads the whole branch keeping only where each text is in the file;
/// [`LoadPass::All`] reads it whole with its texts. `None` when the file does not hold the leaf,
/// cannot be read, or the load was cancelled.
pub fn load_branch(
    path: &Path,
    session_id: Option<&str>,
    leaf: Option<&str>,
    pass: LoadPass,
    cancel: &AtomicBool,
) -> Option<LoadedBranch> {
    boundary::inject("load", &|| path.display().to_string());
    let session_id = match session_id {
        Some(id) => id.to_string(),
        None => crate::session::session_header_id(path).ok()??,
    };
    let mut sink = Sink {
        session_id: &session_id,
        branch: None,
        cancel,
        lines: None,
    };
    let mut leaf_id = leaf.map(str::to_string);
    let mut with_lines = pass == LoadPass::Rest;
    if pass == LoadPass::Current {
        boundary::hold("TAIL");
        let at = match &leaf_id {
            Some(id) => Leaf::Id(id),
            None => Leaf::Last,
        };
        match crate::session::stream_session_tail(path, at, &mut sink) {
            Ok(TailLoad::Tail) => {
                return sink.branch.map(|mut branch| {
                    branch.skimmed();
                    branch
                });
            }
            Ok(TailLoad::NoLeaf) | Err(_) => return None,
            Ok(TailLoad::NoTail { leaf }) => leaf_id = Some(leaf),
        }
        with_lines = true;
    }
    let leaf_id = leaf_id?;
    if pass != LoadPass::All {
        boundary::hold_unless("LOAD", cancel);
    }
    if with_lines {
        sink.lines = crate::session::SessionLines::open(path)
            .ok()
            .map(|l| Arc::new(l) as Arc<dyn relay_core::history::LineSource>);
    }
    let found = crate::session::stream_session_branch(path, &leaf_id, &mut sink);
    match (found, sink.branch) {
        (Ok(true), Some(branch)) if !cancel.load(Ordering::Relaxed) => Some(branch),
        _ => None,
    }
}

/// Hand the pages a dropped mirror leaves free back to the system (glibc keeps them otherwise).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}
