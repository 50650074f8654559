//! File primitives: atomic replacement and append-only lines, private to the user (files 0600,
//! created folders 0700). A crash at any step of a write leaves the old file whole, and a symbolic
//! link planted at the final or the temporary path is never followed.
//!
//! - [`write_atomic`]: a temp file beside the target (`O_CREAT | O_EXCL`, so a link planted at
//!   the temp name makes the write fail instead of being followed), written, fsynced, renamed
//!   over the target (a rename replaces a planted link itself, never the file it points to).
//! - [`write_atomic_new`]: the same temp file, published by a hard link that fails when anything
//!   (a file or a link) already has the name.
//! - [`append_line`]: one `O_APPEND | O_NOFOLLOW` write of a whole line; when the file's last
//!   line was torn by a crash, a `\n` goes first so that the new line stays whole. Readers skip a
//!   torn line ([`read_lines`]).
//!
//! Folders: missing ones are created 0700; an existing folder keeps its mode (it may be the
//! user's, e.g. a repository's `.ai-work`), and a folder that is a link is followed (a user may
//! keep `.ai-work` elsewhere). Files are 0600 in any case; an existing log with wider modes is
//! narrowed to 0600 on the next append.
//!
//! A crash can leave a hidden `.<name>.tmp.<pid>.<n>.<nanos>` file beside the target (never in
//! its place); nothing reads those names.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The steps of a write at which a fault-injection build can make the process kill itself
/// (`RELAY_TEST_CRASH=<step>[:<file name part>]`, `SIGKILL`): only in relay-io's own tests and
/// with the `fault-injection` feature, never in the addon or the CLI users run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The temp file exists and is empty.
    TempCreated,
    /// The bytes are written to the temp file, not yet fsynced.
    TempWritten,
    /// The temp file is fsynced.
    TempSynced,
    /// Right before the rename (or the hard link) publishes the temp file.
    BeforeRename,
    /// Right after the rename (or the hard link), before the folder is fsynced.
    AfterRename,
    /// Half of an appended line is written.
    AppendTorn,
}

impl Step {
    /// Every step, in the order a write reaches them.
    pub const ALL: [Step; 6] = [
        Step::TempCreated,
        Step::TempWritten,
        Step::TempSynced,
        Step::BeforeRename,
        Step::AfterRename,
        Step::AppendTorn,
    ];

    /// The step's name in `RELAY_TEST_CRASH`.
    pub fn name(self) -> &'static str {
        match self {
            Step::TempCreated => "temp-created",
            Step::TempWritten => "temp-written",
            Step::TempSynced => "temp-synced",
            Step::BeforeRename => "before-rename",
            Step::AfterRename => "after-rename",
            Step::AppendTorn => "append-torn",
        }
    }
}

#[cfg(any(test, feature = "fault-injection"))]
fn crash_wanted(step: Step, path: &Path) -> bool {
    let Ok(spec) = std::env::var("RELAY_TEST_CRASH") else {
        return false;
    };
    let (name, part) = match spec.split_once(':') {
        Some((name, part)) => (name, Some(part)),
        None => (spec.as_str(), None),
    };
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name == step.name() && part.is_none_or(|p| file.contains(p))
}

#[cfg(any(test, feature = "fault-injection"))]
fn crash_point(step: Step, path: &Path) {
    if crash_wanted(step, path) {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }
}

#[cfg(not(any(test, feature = "fault-injection")))]
#[inline(always)]
fn crash_point(_step: Step, _path: &Path) {}

/// Create `dir` and its missing parents with mode 0700 (existing folders are left as they are).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

fn temp_path(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = format!(
        ".{}.tmp.{}.{n}.{nanos}",
        name.to_string_lossy(),
        std::process::id()
    );
    Ok(path.with_file_name(tmp))
}

fn write_temp(path: &Path, bytes: &[u8], mode: u32) -> io::Result<PathBuf> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_private_dir(parent)?;
    }
    let tmp = temp_path(path)?;
    write_temp_at(path, tmp, bytes, mode)
}

fn write_temp_at(path: &Path, tmp: PathBuf, bytes: &[u8], mode: u32) -> io::Result<PathBuf> {
    // `create_new` is O_CREAT | O_EXCL: an existing name, a planted link included, is an error.
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)?;
    let result = (|| {
        crash_point(Step::TempCreated, path);
        f.write_all(bytes)?;
        crash_point(Step::TempWritten, path);
        f.sync_all()?;
        crash_point(Step::TempSynced, path);
        Ok(())
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(tmp)
}

fn sync_parent(path: &Path) {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Ok(d) = File::open(parent) {
            let _ = d.sync_all();
        }
    }
}

/// Replace `path` atomically: write a temp file in the same folder, fsync, rename over `path`.
/// Missing parent folders are created with mode 0700; the file gets `mode` (e.g. 0o600).
/// A link at `path` is replaced by the file, its target is left alone.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let tmp = write_temp(path, bytes, mode)?;
    crash_point(Step::BeforeRename, path);
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    crash_point(Step::AfterRename, path);
    sync_parent(path);
    Ok(())
}

/// Like [`write_atomic`], but never replaces an existing file: fails with
/// [`io::ErrorKind::AlreadyExists`] instead (publication by hard link; a link at `path` counts
/// as existing).
pub fn write_atomic_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let tmp = write_temp(path, bytes, mode)?;
    crash_point(Step::BeforeRename, path);
    let linked = fs::hard_link(&tmp, path);
    crash_point(Step::AfterRename, path);
    let _ = fs::remove_file(&tmp);
    linked?;
    sync_parent(path);
    Ok(())
}

/// Append one line (a `\n` is added when missing) with a single `O_APPEND` write; the file is
/// created with mode 0600 and its folder with 0700. A link at `path` is an error, not followed.
/// When the file does not end with `\n` (a torn line), the line starts with one.
pub fn append_line(path: &Path, line: &str) -> io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_private_dir(parent)?;
    }
    let mut f = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                io::Error::new(
                    e.kind(),
                    format!("{} is a symbolic link: not followed", path.display()),
                )
            } else {
                e
            }
        })?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        f.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    let mut buf = String::with_capacity(line.len() + 2);
    if meta.len() > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::End(-1))?;
        f.read_exact(&mut last)?;
        if last != [b'\n'] {
            buf.push('\n');
        }
    }
    buf.push_str(line);
    if !buf.ends_with('\n') {
        buf.push('\n');
    }
    #[cfg(any(test, feature = "fault-injection"))]
    if crash_wanted(Step::AppendTorn, path) {
        let half = buf.len() / 2;
        f.write_all(buf.as_bytes().get(..half).unwrap_or_default())?;
        crash_point(Step::AppendTorn, path);
    }
    f.write_all(buf.as_bytes())
}

/// The lines of an append-only log, each parsed by `parse`; a line that does not parse (a line
/// torn by a crash, or garbage) is skipped with a warning naming the file and the line number.
/// A missing file has no lines.
pub fn read_lines<T>(
    path: &Path,
    mut parse: impl FnMut(&str) -> Option<T>,
) -> io::Result<(Vec<T>, Vec<String>)> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let ends_whole = bytes.last().is_none_or(|b| *b == b'\n');
    let count = bytes.split(|b| *b == b'\n').count();
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        if raw.is_empty() {
            continue;
        }
        let last_torn = !ends_whole && i + 1 == count;
        match std::str::from_utf8(raw).ok().and_then(&mut parse) {
            Some(v) if !last_torn => out.push(v),
            _ => warnings.push(format!(
                "relay: {} line {}: {}; skipped",
                path.display(),
                i + 1,
                if last_torn {
                    "torn last line (no line end)"
                } else {
                    "not a valid line"
                }
            )),
        }
    }
    Ok((out, warnings))
}

/// Why a small file (a settings file, the budget file, a marker) was not read.
#[derive(Debug)]
pub enum SmallFileError {
    /// The path names something else than a regular file: `what` says what ("a FIFO", "a
    /// character device", …). Nothing was read from it.
    NotRegular { what: &'static str },
    /// The file is larger than the cap; nothing was read past the cap.
    TooLarge { cap: u64 },
    /// A symbolic link where links are refused.
    Link,
    /// Opening or reading failed.
    Io(io::Error),
}

impl std::fmt::Display for SmallFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SmallFileError::NotRegular { what } => write!(f, "{what}, not a regular file"),
            SmallFileError::TooLarge { cap } => write!(f, "larger than the {} limit", size(*cap)),
            SmallFileError::Link => write!(f, "a symbolic link, not followed"),
            SmallFileError::Io(e) => write!(f, "{e}"),
        }
    }
}

fn size(bytes: u64) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

fn kind_of(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// Open a small file that someone else may have replaced by anything, and judge it: `Ok(None)`
/// when it does not exist, else the open file and its length, when it is a regular file within
/// `cap`. It is opened without blocking (`O_NONBLOCK`: a FIFO opens at once, with no writer) and
/// judged by `fstat` on the opened descriptor, never by a look at the path first, so a FIFO, a
/// device (`/dev/zero`) or a folder swapped in at any moment is refused without a byte read, and
/// so is a file larger than `cap`. With `follow_links` false a symbolic link at `path` is
/// refused too (`O_NOFOLLOW`). Never blocks.
fn open_small_file(
    path: &Path,
    cap: u64,
    follow_links: bool,
) -> Result<Option<(File, u64)>, SmallFileError> {
    let mut flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    if !follow_links {
        flags |= rustix::fs::OFlags::NOFOLLOW;
    }
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e)
            if !follow_links
                && e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) =>
        {
            return Err(SmallFileError::Link)
        }
        Err(e) => return Err(SmallFileError::Io(e)),
    };
    let meta = file.metadata().map_err(SmallFileError::Io)?;
    if !meta.is_file() {
        return Err(SmallFileError::NotRegular {
            what: kind_of(meta.file_type()),
        });
    }
    if meta.len() > cap {
        return Err(SmallFileError::TooLarge { cap });
    }
    Ok(Some((file, meta.len())))
}

/// Read a small file that someone else may have replaced by anything: `Ok(None)` when it does
/// not exist. It is opened and judged as [`open_small_file`] says (a FIFO, a device, a folder,
/// a refused link or a file larger than `cap` is refused without a byte read), and a file that
/// grew past `cap` since is refused after at most `cap + 1` bytes. Never blocks on anything but
/// a regular file's own reads.
pub fn read_small_file(
    path: &Path,
    cap: u64,
    follow_links: bool,
) -> Result<Option<Vec<u8>>, SmallFileError> {
    let Some((file, len)) = open_small_file(path, cap, follow_links)? else {
        return Ok(None);
    };
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(SmallFileError::Io)?;
    // It may have grown since the fstat.
    if bytes.len() as u64 > cap {
        return Err(SmallFileError::TooLarge { cap });
    }
    Ok(Some(bytes))
}

/// [`read_small_file`] as UTF-8 text, a leading byte order mark removed; invalid UTF-8 is an
/// [`io::ErrorKind::InvalidData`] error.
pub fn read_small_text(
    path: &Path,
    cap: u64,
    follow_links: bool,
) -> Result<Option<String>, SmallFileError> {
    let Some(bytes) = read_small_file(path, cap, follow_links)? else {
        return Ok(None);
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        SmallFileError::Io(io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
    })?;
    Ok(Some(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    }))
}

/// What [`read_small_file`] (links followed) would make of `path`, for a file someone else
/// imports (the guard library): there, refused (why), or missing. Judged by the same open and
/// `fstat` alone: not a byte of the file is read.
pub fn vet_small_file(path: &Path, cap: u64) -> relay_core::engine::wire::Vetted {
    use relay_core::engine::wire::Vetted;
    match open_small_file(path, cap, true) {
        Ok(Some(_)) => Vetted::Regular,
        Ok(None) => Vetted::Missing,
        Err(e) => Vetted::Refused { why: e.to_string() },
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU64, Ordering};

    static N: AtomicU64 = AtomicU64::new(0);

    /// A fresh, unique folder under the system temp dir (removed on drop).
    pub struct TempDir(pub PathBuf);

    impl TempDir {
        pub fn new(tag: &str) -> Self {
            let p = std::env::temp_dir().join(format!(
                "relay-io-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    impl std::ops::Deref for TempDir {
        type Target = std::path::Path;
        fn deref(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl AsRef<std::path::Path> for TempDir {
        fn as_ref(&self) -> &std::path::Path {
            &self.0
        }
    }

    /// The permission bits of `p` (links followed).
    pub fn mode(p: &std::path::Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    /// A FIFO at `path` that no writer opens (a blocking open or read of it would hang).
    pub fn make_fifo(path: &std::path::Path) {
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            path,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{mode, TempDir};
    use super::*;

    #[test]
    fn write_atomic_creates_private_dirs_and_files_and_replaces() {
        let t = TempDir::new("atomic");
        let path = t.0.join("a/b/status.json");
        write_atomic(&path, b"one", 0o600).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&t.0.join("a")), 0o700);
        assert_eq!(mode(&t.0.join("a/b")), 0o700);
        write_atomic(&path, b"two", 0o600).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        // No temp files are left behind.
        let names: Vec<_> = fs::read_dir(t.0.join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn write_atomic_new_refuses_to_replace() {
        let t = TempDir::new("new");
        let path = t.0.join("h.md");
        write_atomic_new(&path, b"first", 0o600).unwrap();
        let err = write_atomic_new(&path, b"second", 0o600).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"first");
        assert_eq!(fs::read_dir(&t.0).unwrap().count(), 1);
    }

    #[test]
    fn append_line_appends_private_lines() {
        let t = TempDir::new("append");
        let path = t.0.join("logs/events.jsonl");
        append_line(&path, "{\"a\":1}").unwrap();
        append_line(&path, "{\"b\":2}\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}\n{\"b\":2}\n");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&t.0.join("logs")), 0o700);
    }

    #[test]
    fn a_link_planted_at_the_temp_path_is_never_followed() {
        let t = TempDir::new("temp-link");
        let outside = t.0.join("outside.txt");
        fs::write(&outside, "keep").unwrap();
        let path = t.0.join("status.json");
        let tmp = temp_path(&path).unwrap();
        std::os::unix::fs::symlink(&outside, &tmp).unwrap();
        let err = write_temp_at(&path, tmp.clone(), b"new", 0o600).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&outside).unwrap(), "keep");
        assert!(!path.exists());
        // The planted link is left where it was (it is not Relay's to remove).
        assert!(fs::symlink_metadata(&tmp).unwrap().file_type().is_symlink());
    }

    #[test]
    fn read_lines_skips_garbage_and_a_torn_last_line_with_warnings() {
        let t = TempDir::new("read-lines");
        let path = t.0.join("log.jsonl");
        assert_eq!(
            read_lines(&path, |l| Some(l.len())).unwrap(),
            (vec![], vec![])
        );
        fs::write(&path, "{\"a\":1}\nnot json\n\n{\"b\":2}\n{\"c\":").unwrap();
        let (lines, warnings) =
            read_lines(&path, |l| serde_json::from_str::<serde_json::Value>(l).ok()).unwrap();
        assert_eq!(
            lines,
            [serde_json::json!({"a": 1}), serde_json::json!({"b": 2})]
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("line 2: not a valid line"),
            "{warnings:?}"
        );
        assert!(
            warnings[1].contains("line 5: torn last line"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_small_file_is_read_and_an_absent_one_is_none() {
        let t = TempDir::new("small");
        let path = t.0.join("settings.json");
        assert!(read_small_file(&path, 16, true).unwrap().is_none());
        fs::write(&path, "\u{feff}{\"a\":1}").unwrap();
        assert_eq!(
            read_small_text(&path, 16, true).unwrap().as_deref(),
            Some("{\"a\":1}")
        );
    }

    #[test]
    fn a_fifo_a_device_a_folder_and_an_oversize_file_are_refused_at_once() {
        let t = TempDir::new("small-hostile");
        let fifo = t.0.join("fifo.json");
        crate::fsx::test_support::make_fifo(&fifo);
        let zero = t.0.join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let big = t.0.join("big.json");
        fs::write(&big, vec![b' '; 17]).unwrap();
        // Each on a thread: a read that blocked would fail the bounded wait instead of hanging.
        let (tx, rx) = std::sync::mpsc::channel();
        let paths = [fifo.clone(), zero.clone(), t.0.clone(), big.clone()];
        std::thread::spawn(move || {
            for p in paths {
                let r = read_small_file(&p, 16, true).map(|_| ());
                tx.send(r.map_err(|e| e.to_string())).unwrap();
            }
        });
        let got: Vec<_> = (0..4)
            .map(|_| {
                rx.recv_timeout(std::time::Duration::from_secs(5))
                    .expect("a hostile file blocked the read")
            })
            .collect();
        assert_eq!(
            got,
            [
                Err("a FIFO, not a regular file".to_string()),
                Err("a character device, not a regular file".to_string()),
                Err("a directory, not a regular file".to_string()),
                Err("larger than the 16 bytes limit".to_string()),
            ]
        );
        // Links are refused when asked.
        let link = t.0.join("link.json");
        std::os::unix::fs::symlink(&big, &link).unwrap();
        assert_eq!(
            read_small_file(&link, 64, false).unwrap_err().to_string(),
            "a symbolic link, not followed"
        );
        assert_eq!(
            SmallFileError::TooLarge { cap: 1 << 20 }.to_string(),
            "larger than the 1 MiB limit"
        );
    }

    #[test]
    fn a_vet_says_missing_regular_or_why_it_was_refused() {
        use relay_core::engine::wire::Vetted;
        let t = TempDir::new("vet");
        let file = t.0.join("guards.ts");
        assert_eq!(vet_small_file(&file, 8), Vetted::Missing);
        fs::write(&file, "export {}").unwrap();
        assert_eq!(
            vet_small_file(&file, 8),
            Vetted::Refused {
                why: "larger than the 8 bytes limit".into()
            }
        );
        assert_eq!(vet_small_file(&file, 9), Vetted::Regular);
        let fifo = t.0.join("fifo.ts");
        crate::fsx::test_support::make_fifo(&fifo);
        assert_eq!(
            vet_small_file(&fifo, 9),
            Vetted::Refused {
                why: "a FIFO, not a regular file".into()
            }
        );
    }

    #[test]
    fn a_vet_refuses_a_device_and_a_folder_and_follows_a_link_as_the_read_does() {
        use relay_core::engine::wire::Vetted;
        let t = TempDir::new("vet-kinds");
        let zero = t.0.join("zero.ts");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let file = t.0.join("guards.ts");
        fs::write(&file, "export {}").unwrap();
        let link = t.0.join("link.ts");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        for (path, why) in [
            (&zero, "a character device, not a regular file"),
            (&t.0, "a directory, not a regular file"),
        ] {
            assert_eq!(
                vet_small_file(path, 64),
                Vetted::Refused { why: why.into() }
            );
        }
        assert_eq!(vet_small_file(&link, 64), Vetted::Regular);
    }

    #[test]
    fn errors_are_returned_not_panics() {
        let t = TempDir::new("err");
        let file = t.0.join("plain");
        fs::write(&file, b"x").unwrap();
        // A file where a folder is needed.
        assert!(write_atomic(&file.join("sub/x.json"), b"{}", 0o600).is_err());
        assert!(append_line(&file.join("e.jsonl"), "x").is_err());
    }
}
