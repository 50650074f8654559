//! `context_handoff`: argument validation (decoded by [`crate::args`]) and the duplicate
//! back-off (the JSON sidecar is [`crate::engine::files::HandoffSidecar`]); the markdown under the section budgets is [`crate::render::handoff`]. Pure: metadata (time, cwd, git) arrives in [`HandoffMeta`],
//! collected by the caller independently of the model.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::args;
use crate::text::{char_count, floor_char_boundary};
use crate::ToolOutput;

/// The whole markdown file is capped at 48 KiB of UTF-8.
pub const MAX_MARKDOWN_BYTES: usize = 49_152;
/// The narrative sections (goal, next step, facts, decisions, open items, hypotheses) share 12 KiB.
pub const NARRATIVE_BUDGET_BYTES: usize = 12_288;
/// Duplicate back-off window.
pub const DUPLICATE_WINDOW_MS: i64 = 15 * 60 * 1000;
/// Similarity above which a handoff counts as a duplicate.
pub const DUPLICATE_SIMILARITY: f64 = 0.9;

/// Validated `context_handoff` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffArgs {
    pub goal: String,
    pub next_step: String,
    pub facts: String,
    pub decisions: Option<String>,
    pub user_constraints: Option<String>,
    pub open_items: Option<String>,
    pub hypotheses: Option<String>,
    pub files_to_read: Vec<String>,
    pub launch_prompt: Option<String>,
}

/// Why a handoff cannot be written. `Display` is the model-facing tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandoffError {
    /// An argument is missing or wrong; the message is in the one argument error format of
    /// [`crate::args`] (`context_handoff: argument "goal" is required`).
    #[error("{0}")]
    InvalidArgument(String),
    #[error(
        "context_handoff: the handoff would be {bytes} UTF-8 bytes, over the limit of {limit} bytes \
         (48 KiB). The narrative sections are already at their 12 KiB budget and Relay's own \
         sections at their smallest ({relay} bytes, their details are in the JSON sidecar); what \
         is left is user_constraints ({constraints} bytes) and files_to_read ({files} bytes), \
         which are never cut. Quote only the constraints that still apply (keep their wording) or \
         list fewer files_to_read, then call context_handoff again. Nothing was written."
    )]
    Oversize {
        bytes: usize,
        limit: usize,
        /// Bytes of Relay's own sections (metadata, the compact integrations note, the resume
        /// check's reserve) that remained.
        relay: usize,
        /// Bytes of `user_constraints` as the model gave them.
        constraints: usize,
        /// Bytes of the `files_to_read` list.
        files: usize,
    },
}

impl HandoffError {
    pub fn to_tool_output(&self) -> ToolOutput {
        ToolOutput::error(self.to_string())
    }
}

impl From<ToolOutput> for HandoffError {
    fn from(out: ToolOutput) -> Self {
        HandoffError::InvalidArgument(out.text)
    }
}

impl HandoffArgs {
    /// Decodes and validates the tool arguments ([`args::ContextHandoff`] lists them). Required:
    /// `goal`, `next_step`, `facts` (strings with some non-blank text). Optional strings may be
    /// absent, null or blank (= absent). `files_to_read` is an array of non-blank strings;
    /// `launch_prompt` an absolute path. An unknown argument is an error.
    pub fn parse(args: &Value) -> Result<HandoffArgs, HandoffError> {
        let a: args::ContextHandoff = args::decode(args::CONTEXT_HANDOFF, args)?;
        let text = |t: Option<args::Text>| t.map(|t| t.0).filter(|s| !s.trim().is_empty());
        let launch_prompt = text(a.launch_prompt);
        if let Some(p) = &launch_prompt {
            if !p.starts_with('/') {
                return Err(args::invalid(
                    args::CONTEXT_HANDOFF,
                    "launch_prompt",
                    format!(
                        "must be an absolute path, got {}",
                        args::quote(&p.as_str().into())
                    ),
                )
                .into());
            }
        }
        Ok(HandoffArgs {
            goal: a.goal.0,
            next_step: a.next_step.0,
            facts: a.facts.0,
            decisions: text(a.decisions),
            user_constraints: text(a.user_constraints),
            open_items: text(a.open_items),
            hypotheses: text(a.hypotheses),
            files_to_read: a.files_to_read.0,
            launch_prompt,
        })
    }
}

/// Git state as collected by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum GitState {
    /// Inside a repository with a branch checked out.
    Repo,
    /// Inside a repository on a detached HEAD.
    Detached,
    /// Not a repository, or git is not installed.
    NoGit,
    /// Git could not be queried (timeout, error).
    Unknown,
}

impl GitState {
    pub fn as_str(self) -> &'static str {
        match self {
            GitState::Repo => "repo",
            GitState::Detached => "detached",
            GitState::NoGit => "noGit",
            GitState::Unknown => "unknown",
        }
    }
}

/// Automatic metadata, collected independently of the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffMeta {
    pub timestamp_ms: i64,
    pub tz_offset_minutes: i32,
    pub cwd: String,
    pub repo_root: Option<String>,
    /// `None` = detached HEAD or no git.
    pub git_branch: Option<String>,
    pub git_head: Option<String>,
    pub git_state: GitState,
    pub session_id: String,
    pub sequence: u32,
    pub window_id: String,
}

/// ISO 8601 local time with offset, e.g. `2025-03-01T14:05:09+01:00` (the one formatter, see
/// [`crate::time`]).
pub use crate::time::format_local_iso as format_timestamp;

/// One narrative section the budget shortened: its size as the agent wrote it and as the
/// markdown keeps it (the kept text, without the `…(cut, N chars)` marker).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SectionCut {
    pub section: String,
    pub chars_before: usize,
    pub chars_after: usize,
    pub bytes_before: usize,
    pub bytes_after: usize,
}

impl SectionCut {
    /// Characters the cut removed (the N of the marker).
    pub fn removed_chars(&self) -> usize {
        self.chars_before - self.chars_after
    }
}

// ---------------------------------------------------------------------------------------------
// The narrative budget: which sections the markdown shortens, and to what (the markdown itself
// is render/handoff.rs)

/// The unique heading text (without `# `).
pub fn heading(meta: &HandoffMeta) -> String {
    format!("Handoff {}-{}", meta.session_id, meta.sequence)
}

pub(crate) fn narrative(args: &HandoffArgs) -> Vec<(&'static str, &str)> {
    let mut v = vec![
        ("goal", args.goal.as_str()),
        ("next_step", args.next_step.as_str()),
        ("facts", args.facts.as_str()),
    ];
    if let Some(d) = &args.decisions {
        v.push(("decisions", d));
    }
    if let Some(o) = &args.open_items {
        v.push(("open_items", o));
    }
    if let Some(h) = &args.hypotheses {
        v.push(("hypotheses", h));
    }
    v
}

/// The narrative sections cut by the 12 KiB budget (empty when everything fits).
pub fn narrative_cuts(args: &HandoffArgs) -> Vec<SectionCut> {
    fit_narrative(&narrative(args), NARRATIVE_BUDGET_BYTES).1
}

/// Cut `text` to at most `keep` bytes (at a char boundary) and append the marker; also the
/// number of bytes kept.
fn cut_text(text: &str, keep: usize) -> (String, usize) {
    let end = floor_char_boundary(text, keep);
    let kept = text.get(..end).unwrap_or_default().trim_end();
    let removed = char_count(text.get(kept.len()..).unwrap_or_default());
    (format!("{kept}\n…(cut, {removed} chars)"), kept.len())
}

/// Fit the narrative sections into `budget` bytes: the longest sections are cut to a common length
/// (water-filling) so that short sections stay whole.
pub(crate) fn fit_narrative(
    sections: &[(&str, &str)],
    budget: usize,
) -> (Vec<String>, Vec<SectionCut>) {
    let total: usize = sections.iter().map(|(_, t)| t.len()).sum();
    if total <= budget {
        return (
            sections.iter().map(|(_, t)| t.to_string()).collect(),
            Vec::new(),
        );
    }
    let size_at = |cap: usize| -> usize {
        sections
            .iter()
            .map(|(_, t)| {
                if t.len() <= cap {
                    t.len()
                } else {
                    cut_text(t, cap).0.len()
                }
            })
            .sum()
    };
    let max_len = sections.iter().map(|(_, t)| t.len()).max().unwrap_or(0);
    // Largest cap whose rendering fits; size_at is non-decreasing in cap for practical purposes,
    // and the result is re-checked below.
    let (mut lo, mut hi) = (0usize, max_len);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if size_at(mid) <= budget {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let mut cap = lo;
    while cap > 0 && size_at(cap) > budget {
        cap -= 1;
    }
    let mut out = Vec::new();
    let mut cuts = Vec::new();
    for (name, text) in sections {
        if text.len() <= cap {
            out.push(text.to_string());
        } else {
            let (t, kept) = cut_text(text, cap);
            cuts.push(SectionCut {
                section: name.to_string(),
                chars_before: char_count(text),
                chars_after: char_count(text.get(..kept).unwrap_or_default()),
                bytes_before: text.len(),
                bytes_after: kept,
            });
            out.push(t);
        }
    }
    (out, cuts)
}

/// Whether `c` is written without spaces between words (Han ideographs, Hiragana): each such
/// character is its own word, as in Unicode word segmentation (UAX #29).
fn is_ideographic(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x309F      // Hiragana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x3FFFF) // CJK Extensions B and later
}

/// Lowercase Unicode words: runs of `char::is_alphanumeric` characters, lowercased; every Han
/// ideograph and Hiragana character is a word of its own. Punctuation, symbols and whitespace
/// separate words. Note: combining accents are not alphanumeric, so decomposed (NFD) text splits
/// where precomposed (NFC) text does not.
pub fn words(text: &str) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    let mut cur = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            if is_ideographic(c) {
                if !cur.is_empty() {
                    set.insert(std::mem::take(&mut cur));
                }
                set.insert(c.to_string());
            } else {
                cur.extend(c.to_lowercase());
            }
        } else if !cur.is_empty() {
            set.insert(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        set.insert(cur);
    }
    set
}

/// Token-set Jaccard similarity (|A ∩ B| / |A ∪ B|) over [`words`].
///
/// Two texts without any word (empty or punctuation only) have similarity **0.0**: with nothing to
/// compare there is no evidence of a repeat, and the back-off must only refuse a handoff that
/// demonstrably repeats real content.
pub fn jaccard(a: &str, b: &str) -> f64 {
    let wa = words(a);
    let wb = words(b);
    let union = wa.union(&wb).count();
    if union == 0 {
        return 0.0;
    }
    let inter = wa.intersection(&wb).count();
    inter as f64 / union as f64
}

/// The comparison data of a handoff, kept in the tool result's `details` so that it survives a
/// session reload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffFingerprint {
    pub at_ms: i64,
    pub head: Option<String>,
    /// goal + facts + next_step.
    pub text: String,
}

impl HandoffFingerprint {
    pub fn new(args: &HandoffArgs, at_ms: i64, head: Option<&str>) -> Self {
        HandoffFingerprint {
            at_ms,
            head: head.map(str::to_string),
            text: fingerprint_text(args),
        }
    }

    /// `{atMs, head, text}` (in the sidecar and in the `relay/handoff` record).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// Read back from [`HandoffFingerprint::to_value`]; `None` when the value is not a fingerprint.
    pub fn from_value(v: &Value) -> Option<Self> {
        Self::deserialize(v).ok()
    }
}

fn fingerprint_text(args: &HandoffArgs) -> String {
    format!("{}\n{}\n{}", args.goal, args.facts, args.next_step)
}

/// A refused duplicate handoff.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryAfter {
    pub at_ms: i64,
    pub similarity: f64,
}

impl RetryAfter {
    /// The tool error text.
    pub fn message(&self, tz_offset_minutes: i32) -> String {
        format!(
            "context_handoff refused: this handoff repeats the previous one (similarity {:.2} of goal, \
             facts and next_step; HEAD unchanged; less than 15 minutes ago). Retry after {}, or \
             continue working: hand off again once HEAD, the facts or the next step have changed.",
            self.similarity,
            format_timestamp(self.at_ms, tz_offset_minutes)
        )
    }
}

/// Duplicate back-off for voluntary handoffs (forced handoffs must not call this). Refused when
/// all hold: the previous handoff is less than 15 minutes old, both HEADs are known and equal
/// (an unknown HEAD never establishes "unchanged"), and the goal + facts + next_step similarity is
/// above 0.9.
pub fn duplicate_check(
    prev: Option<&HandoffFingerprint>,
    now_ms: i64,
    head: Option<&str>,
    args: &HandoffArgs,
) -> Result<(), RetryAfter> {
    let Some(prev) = prev else { return Ok(()) };
    if now_ms.saturating_sub(prev.at_ms) >= DUPLICATE_WINDOW_MS {
        return Ok(());
    }
    match (head, prev.head.as_deref()) {
        (Some(a), Some(b)) if a == b => {}
        _ => return Ok(()),
    }
    let similarity = jaccard(&prev.text, &fingerprint_text(args));
    if similarity > DUPLICATE_SIMILARITY {
        return Err(RetryAfter {
            at_ms: prev.at_ms + DUPLICATE_WINDOW_MS,
            similarity,
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;

/// Where handoff `sequence` of `session_id` is written under `root` (a repository root or the
/// cwd): `<root>/.ai-work/handoffs/<session>-<n>.md`, as relay-io's `handoff_path` spells it.
pub fn handoff_file_path(root: &str, session_id: &str, sequence: u32) -> String {
    let root = if root.len() > 1 {
        root.trim_end_matches('/')
    } else {
        root
    };
    let sep = if root.ends_with('/') { "" } else { "/" };
    format!("{root}{sep}.ai-work/handoffs/{session_id}-{sequence}.md")
}
