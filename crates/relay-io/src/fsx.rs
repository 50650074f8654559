//! File primitives: atomic replacement and append-only lines, private to the user (files 0600,
//! created folders 0700). A crash mid-write leaves the old file whole.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

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
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
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
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let tmp = write_temp(path, bytes, mode)?;
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    sync_parent(path);
    Ok(())
}

/// Like [`write_atomic`], but never replaces an existing file: fails with
/// [`io::ErrorKind::AlreadyExists`] instead (publication by hard link).
pub fn write_atomic_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let tmp = write_temp(path, bytes, mode)?;
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    linked?;
    sync_parent(path);
    Ok(())
}

/// Append one line (a `\n` is added when missing) with a single `O_APPEND` write; the file is
/// created with mode 0600 and its folder with 0700.
pub fn append_line(path: &Path, line: &str) -> io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_private_dir(parent)?;
    }
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    if !buf.ends_with('\n') {
        buf.push('\n');
    }
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(buf.as_bytes())
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
}

#[cfg(test)]
mod tests {
    use super::test_support::TempDir;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

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
    fn errors_are_returned_not_panics() {
        let t = TempDir::new("err");
        let file = t.0.join("plain");
        fs::write(&file, b"x").unwrap();
        // A file where a folder is needed.
        assert!(write_atomic(&file.join("sub/x.json"), b"{}", 0o600).is_err());
        assert!(append_line(&file.join("e.jsonl"), "x").is_err());
    }
}
