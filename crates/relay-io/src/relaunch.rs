//! The pi-session relaunch marker as it is on disk, authenticated: the one place the wrapper
//! (relay-cli, which verifies) and Relay's binding (relay-node, which signs) share.
//!
//! # Format
//!
//! The wrapper makes a fresh 32-byte key for every launch and writes it as 64 lowercase hex
//! digits to a key file (mode 0600, in the 0700 marker directory); Relay reads it once per process
//! when it loads ([`take_key`]) and removes the file. A marker is one JSON object:
//!
//! ```text
//! {"marker":{"cwd":…,"launchPrompt":…,"handoff":…,"sessionFile":…},"mac":"<64 hex digits>"}
//! ```
//!
//! `mac` is HMAC-SHA256 under the launch's key over [`DOMAIN`] followed by the exact bytes of the
//! `marker` value as they stand in the file (no canonical form is needed: the verifier takes the
//! bytes as written). The marker itself has exactly the four fields of [`RelaunchMarker`].

use std::fmt;
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use hmac::{KeyInit, Mac};
use relay_core::engine::wire::{RelaunchKey, MAX_RELAUNCH_KEY_BYTES};
use serde::Deserialize;
use serde_json::value::RawValue;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// Put before the marker's bytes in the MAC input, so that the key authenticates nothing else.
pub const DOMAIN: &[u8] = b"relay pi-session relaunch marker v1\n";

/// A marker file larger than this is not one Relay wrote.
pub const MAX_MARKER_BYTES: u64 = 64 * 1024;

/// One launch's relaunch key. Its `Debug` never shows the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; 32]);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    pub fn from_bytes(bytes: [u8; 32]) -> Key {
        Key(bytes)
    }

    /// A fresh key from the operating system's random source.
    pub fn fresh() -> Result<Key, String> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| format!("no random source for the relaunch key: {e}"))?;
        Ok(Key(bytes))
    }

    /// Exactly 64 lowercase hex digits (the key file's content); anything else is `None`.
    pub fn from_hex(text: &str) -> Option<Key> {
        let digits = text.as_bytes();
        if digits.len() != 64 {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let [hi, lo] = pair else { return None };
            *byte = (hex_value(*hi)? << 4) | hex_value(*lo)?;
        }
        Some(Key(bytes))
    }

    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// HMAC-SHA256 keyed with these 32 bytes, [`DOMAIN`] already fed. HMAC pads a key shorter
    /// than the hash's 64-byte block with zeros, so the padded block is the same key (and the
    /// constructor cannot fail).
    fn mac(&self) -> HmacSha256 {
        let mut block = [0u8; 64];
        for (b, k) in block.iter_mut().zip(self.0) {
            *b = k;
        }
        let mut mac = <HmacSha256 as KeyInit>::new(&block.into());
        mac.update(DOMAIN);
        mac
    }
}

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Write `key` to a new file at `path` (mode 0600; an existing file or link is an error).
pub fn write_key_file(path: &Path, key: &Key) -> std::io::Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(key.to_hex().as_bytes())?;
    file.sync_all()
}

/// What Relay asks the wrapper to relaunch with: the engine's type (every field required, no
/// other field), the one both sides read and write.
pub use relay_core::engine::files::RelaunchMarker;

/// A file a relaunch starts from that is not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    /// The marker field: `handoff` or `launchPrompt`.
    pub field: &'static str,
    pub path: String,
    pub problem: &'static str,
}

impl fmt::Display for FileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.field, self.path, self.problem)
    }
}

/// The marker's handoff, and its launch prompt when there is one, are absolute paths of existing
/// files.
pub fn check_files(marker: &RelaunchMarker) -> Result<(), FileProblem> {
    check_file("handoff", &marker.handoff)?;
    if let Some(lp) = &marker.launch_prompt {
        check_file("launchPrompt", lp)?;
    }
    Ok(())
}

fn check_file(field: &'static str, value: &str) -> Result<(), FileProblem> {
    let problem = |problem| FileProblem {
        field,
        path: value.to_string(),
        problem,
    };
    let path = Path::new(value);
    if !path.is_absolute() {
        return Err(problem("is not an absolute path"));
    }
    if !path.is_file() {
        return Err(problem("is not an existing file"));
    }
    Ok(())
}

/// The marker file's bytes: the marker and its MAC under `key`.
pub fn seal(key: &Key, marker: &RelaunchMarker) -> Vec<u8> {
    // Serializing four strings cannot fail; an empty object would only fail verification.
    let body = serde_json::to_string(marker).unwrap_or_default();
    let mut mac = key.mac();
    mac.update(body.as_bytes());
    let tag = hex(&mac.finalize().into_bytes());
    format!("{{\"marker\":{body},\"mac\":\"{tag}\"}}").into_bytes()
}

/// Why a marker file's content is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not JSON of the sealed shape (`{"marker": {…}, "mac": "…"}`), e.g. a bare marker.
    Unsigned(String),
    /// The MAC does not verify under this launch's key.
    Forged,
    /// Signed correctly, but the marker inside is not one Relay writes.
    Malformed(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Unsigned(e) => write!(f, "it is not a signed marker ({e}) (unsigned marker)"),
            Refusal::Forged => {
                f.write_str("its signature does not verify with this launch's key (forged marker)")
            }
            Refusal::Malformed(e) => write!(f, "it is not a relaunch marker: {e}"),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Sealed<'a> {
    #[serde(borrow)]
    marker: &'a RawValue,
    mac: &'a str,
}

/// Verify a marker file's content with this launch's key: only then is the marker read.
pub fn open(key: &Key, bytes: &[u8]) -> Result<RelaunchMarker, Refusal> {
    let sealed: Sealed<'_> =
        serde_json::from_slice(bytes).map_err(|e| Refusal::Unsigned(e.to_string()))?;
    let tag = Key::from_hex(sealed.mac).ok_or(Refusal::Forged)?.0;
    let mut mac = key.mac();
    mac.update(sealed.marker.get().as_bytes());
    mac.verify_slice(&tag).map_err(|_| Refusal::Forged)?;
    serde_json::from_str(sealed.marker.get()).map_err(|e| Refusal::Malformed(e.to_string()))
}

/// Write the signed marker at `path` (atomically, mode 0600), after checking the files the
/// relaunch would start from: a relaunch the wrapper would refuse is never asked for.
pub fn write_marker(path: &Path, key: &Key, marker: &RelaunchMarker) -> Result<(), String> {
    check_files(marker).map_err(|p| p.to_string())?;
    crate::fsx::write_atomic(path, &seal(key, marker), 0o600)
        .map_err(|e| format!("cannot write the relaunch marker {}: {e}", path.display()))
}

/// The launch's relaunch key, taken from pi-session's key file `path` once per process: read as
/// a small file that cannot block Pi (at most [`MAX_RELAUNCH_KEY_BYTES`], a symbolic link not
/// followed), then the file is removed whatever the read gave, so that a command the model runs
/// finds no key. Every later call for `path` (another runtime, a `/reload`) gets the same
/// outcome. The key is redacted wherever it is shown; an error never contains it.
pub fn take_key(path: &str) -> Result<RelaunchKey, String> {
    type Taken = std::collections::HashMap<String, Result<RelaunchKey, String>>;
    static TAKEN: std::sync::OnceLock<std::sync::Mutex<Taken>> = std::sync::OnceLock::new();
    let mut taken = TAKEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let outcome = taken.entry(path.to_string()).or_insert_with(|| {
        let read = crate::fsx::read_small_text(Path::new(path), MAX_RELAUNCH_KEY_BYTES, false);
        // Already gone: the wrapper removes it too once Pi has exited.
        let _ = fs::remove_file(path);
        match read {
            Ok(Some(text)) => Ok(RelaunchKey::new(text)),
            Ok(None) => Err("no such file".to_string()),
            Err(e) => Err(e.to_string()),
        }
    });
    outcome.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsx::test_support::{mode, TempDir};

    fn key(byte: u8) -> Key {
        Key::from_bytes([byte; 32])
    }

    fn marker(dir: &Path) -> RelaunchMarker {
        RelaunchMarker {
            cwd: "/w".into(),
            launch_prompt: None,
            handoff: dir.join("h.md").to_string_lossy().into_owned(),
            session_file: Some("/s/1.jsonl".into()),
        }
    }

    /// `take_key` on a thread, within a bound: a read that blocked fails instead of hanging.
    fn take_bounded(path: &Path) -> Result<RelaunchKey, String> {
        let path = path.to_string_lossy().into_owned();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(take_key(&path)).unwrap());
        rx.recv_timeout(std::time::Duration::from_secs(5))
            .expect("taking the key blocked")
    }

    #[test]
    fn the_key_is_taken_once_its_file_removed_and_the_outcome_kept_for_the_process() {
        let dir = TempDir::new("relaunch-take");
        let file = dir.join("1.key");
        let hex = "ab".repeat(32);
        fs::write(&file, &hex).unwrap();
        let first = take_bounded(&file).unwrap();
        assert_eq!(first.expose(), hex);
        assert!(!file.exists(), "the key file is removed once read");
        // A second runtime (or a /reload) gets the same key; a file put there since is not read.
        fs::write(&file, "cd".repeat(32)).unwrap();
        assert_eq!(take_bounded(&file).unwrap().expose(), hex);
        assert!(file.exists(), "read once: the later file is left alone");
        let missing = dir.join("gone.key");
        assert_eq!(take_bounded(&missing).unwrap_err(), "no such file");
        fs::write(&missing, &hex).unwrap();
        assert_eq!(take_bounded(&missing).unwrap_err(), "no such file", "kept");
    }

    #[test]
    fn a_fifo_a_link_or_an_oversize_key_file_is_refused_at_once_and_removed() {
        let dir = TempDir::new("relaunch-take-hostile");
        let fifo = dir.join("fifo.key");
        crate::fsx::test_support::make_fifo(&fifo);
        let target = dir.join("target.key");
        fs::write(&target, "ab".repeat(32)).unwrap();
        let link = dir.join("link.key");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let big = dir.join("big.key");
        fs::write(&big, vec![b'a'; MAX_RELAUNCH_KEY_BYTES as usize + 1]).unwrap();
        let got: Vec<_> = [&fifo, &link, &big]
            .iter()
            .map(|p| take_bounded(p).unwrap_err())
            .collect();
        assert_eq!(
            got,
            [
                "a FIFO, not a regular file",
                "a symbolic link, not followed",
                "larger than the 4 KiB limit",
            ]
        );
        for path in [&fifo, &link, &big] {
            assert!(fs::symlink_metadata(path).is_err(), "{path:?} removed");
        }
        assert!(target.exists(), "the link's target is not touched");
    }

    #[test]
    fn hex_round_trip_and_odd_texts_are_no_key() {
        let k = Key::fresh().unwrap();
        assert_ne!(k, Key::fresh().unwrap());
        assert_eq!(Key::from_hex(&k.to_hex()), Some(k.clone()));
        assert_eq!(format!("{k:?}"), "Key(..)");
        let hex = k.to_hex();
        for bad in [
            String::new(),
            hex[..63].to_string(),
            format!("{hex}0"),
            hex.to_uppercase(),
            format!("{hex}\n"),
            "g".repeat(64),
        ] {
            assert_eq!(Key::from_hex(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_sealed_marker_opens_with_its_key_only() {
        let m = marker(Path::new("/h"));
        let bytes = seal(&key(1), &m);
        assert_eq!(open(&key(1), &bytes), Ok(m.clone()));
        assert_eq!(open(&key(2), &bytes), Err(Refusal::Forged));
        // Any change of the marker's bytes breaks the MAC.
        let text = String::from_utf8(bytes).unwrap();
        let edited = text.replace("\"cwd\":\"/w\"", "\"cwd\":\"/x\"");
        assert_ne!(edited, text);
        assert_eq!(open(&key(1), edited.as_bytes()), Err(Refusal::Forged));
        let spaced = text.replace("{\"cwd\"", "{ \"cwd\"");
        assert_eq!(open(&key(1), spaced.as_bytes()), Err(Refusal::Forged));
    }

    #[test]
    fn the_mac_is_hmac_sha256_over_the_domain_and_the_marker_bytes() {
        // RFC 4231-style check of the construction with an independent computation.
        let k = key(7);
        let m = marker(Path::new("/h"));
        let text = String::from_utf8(seal(&k, &m)).unwrap();
        let body = serde_json::to_string(&m).unwrap();
        assert!(text.starts_with(&format!("{{\"marker\":{body},\"mac\":\"")));
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&[7u8; 32]).unwrap();
        mac.update(format!("relay pi-session relaunch marker v1\n{body}").as_bytes());
        let tag = hex(&mac.finalize().into_bytes());
        assert!(text.ends_with(&format!("\"mac\":\"{tag}\"}}")), "{text}");
    }

    #[test]
    fn unsigned_forged_and_malformed_markers_are_refused_with_their_reason() {
        let k = key(3);
        let bare = br#"{"cwd":"/w","launchPrompt":"/abs/evil.md","handoff":"/abs/evil.md","sessionFile":null}"#;
        let refused = open(&k, bare).unwrap_err();
        assert!(matches!(refused, Refusal::Unsigned(_)), "{refused:?}");
        assert_eq!(
            refused.to_string(),
            "it is not a signed marker (unknown field `cwd`, expected `marker` or `mac` at line 1 column 6) (unsigned marker)"
        );
        let fake = br#"{"marker":{"cwd":"/w","launchPrompt":null,"handoff":"/h","sessionFile":null},"mac":"0000000000000000000000000000000000000000000000000000000000000000"}"#;
        assert_eq!(open(&k, fake), Err(Refusal::Forged));
        assert_eq!(
            Refusal::Forged.to_string(),
            "its signature does not verify with this launch's key (forged marker)"
        );
        let short = br#"{"marker":{},"mac":"00"}"#;
        assert_eq!(open(&k, short), Err(Refusal::Forged));
        // A correct MAC over something that is not a marker.
        let body = r#"{"cwd":"/w","extra":1}"#;
        let mut mac = k.mac();
        mac.update(body.as_bytes());
        let tag = hex(&mac.finalize().into_bytes());
        let text = format!("{{\"marker\":{body},\"mac\":\"{tag}\"}}");
        let refused = open(&k, text.as_bytes()).unwrap_err();
        assert!(matches!(refused, Refusal::Malformed(_)), "{refused:?}");
    }

    #[test]
    fn write_marker_checks_the_files_first_and_writes_0600() {
        let dir = TempDir::new("relaunch-write");
        let k = key(5);
        let mut m = marker(&dir);
        let path = dir.join("1-m.json");
        let missing = write_marker(&path, &k, &m).unwrap_err();
        assert_eq!(
            missing,
            format!("handoff {} is not an existing file", m.handoff)
        );
        assert!(!path.exists());
        fs::write(&m.handoff, "# Handoff\n").unwrap();
        m.launch_prompt = Some("launch.md".into());
        assert_eq!(
            write_marker(&path, &k, &m).unwrap_err(),
            "launchPrompt launch.md is not an absolute path"
        );
        m.launch_prompt = None;
        write_marker(&path, &k, &m).unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(open(&k, &fs::read(&path).unwrap()), Ok(m));
    }

    #[test]
    fn the_key_file_is_new_0600_and_holds_the_hex_key() {
        let dir = TempDir::new("relaunch-key");
        let k = Key::fresh().unwrap();
        let path = dir.join("1-k.key");
        write_key_file(&path, &k).unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(
            Key::from_hex(&fs::read_to_string(&path).unwrap()),
            Some(k.clone())
        );
        assert_eq!(
            write_key_file(&path, &k).unwrap_err().kind(),
            std::io::ErrorKind::AlreadyExists
        );
    }
}
