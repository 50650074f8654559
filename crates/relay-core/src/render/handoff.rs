//! The `context_handoff` texts: the handoff markdown under the section budgets (the agent's
//! sections, the narrative ones sharing [`NARRATIVE_BUDGET_BYTES`], then Relay's metadata, further
//! sections and the resume check's reserve, within [`MAX_MARKDOWN_BYTES`]) and the tool result's
//! note on shortened sections. The arguments, the sidecar and the duplicate back-off are
//! [`crate::handoff`].

use serde_json::{json, Value};

use crate::handoff::{
    fit_narrative, format_timestamp, heading, narrative, GitState, HandoffArgs, HandoffError,
    HandoffMeta, SectionCut, MAX_MARKDOWN_BYTES, NARRATIVE_BUDGET_BYTES,
};

/// A section body that cannot start a section of its own: every line that would open a top-level
/// markdown block able to end or hide the sections after it (an ATX heading `#`, a setext
/// underline of `=` or `-`, a code fence of backticks or tildes, an HTML block `<`) gets a
/// backslash before its first character, so it reads as the same text in the paragraph. Line
/// breaks `\r\n` and `\r` (markdown line endings too) become `\n`. Only these lines change; the
/// JSON sidecar keeps the text as written.
fn inert_lines(body: &str) -> String {
    let body = body.replace("\r\n", "\n").replace('\r', "\n");
    let mut out = String::with_capacity(body.len() + 16);
    for (i, line) in body.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let rest = line.trim_start_matches(' ');
        let indent = line.len() - rest.len();
        out.push_str(line.get(..indent).unwrap_or_default());
        // Four spaces of indentation make a code block, which opens nothing.
        if indent <= 3 && opens_block(rest) {
            out.push('\\');
        }
        out.push_str(rest);
    }
    out
}

/// Whether a line (without its indentation) opens a markdown block that [`inert_lines`] escapes.
fn opens_block(rest: &str) -> bool {
    // CommonMark's whitespace after an underline includes line tabulation and form feed (finding
    // 6: `title` over `- \u{b}` made a level-2 heading).
    let t = rest.trim_end_matches([' ', '\t', '\u{b}', '\u{c}']);
    rest.starts_with('#')
        || rest.starts_with('<')
        || rest.starts_with("```")
        || rest.starts_with("~~~")
        || (!t.is_empty() && (t.bytes().all(|b| b == b'=') || t.bytes().all(|b| b == b'-')))
}

/// The first line of a handoff's body: whose words the sections are.
pub const AGENT_PART_NOTE: &str = "Written by the previous agent: the sections from Goal to Files to read are its own account (claims, not verified by Relay). Check them against the workspace before relying on them.";

/// What `context_handoff` tells the model about sections the 12 KiB narrative budget shortened:
/// `None` when nothing was cut, else which sections, from how much to how much, and that the
/// JSON sidecar keeps them whole.
pub fn shortened_reply(cuts: &[SectionCut], sidecar_path: &str) -> Option<Value> {
    if cuts.is_empty() {
        return None;
    }
    let list: Vec<String> = cuts
        .iter()
        .map(|c| {
            format!(
                "{} {} → {} bytes ({} → {} chars)",
                c.section, c.bytes_before, c.bytes_after, c.chars_before, c.chars_after
            )
        })
        .collect();
    let message = format!(
        "The narrative sections (goal, next_step, facts, decisions, open_items, hypotheses) share a budget of {NARRATIVE_BUDGET_BYTES} bytes and were over it, so the handoff markdown the next window reads has these sections shortened, each ending with a …(cut, N chars) marker: {}. The JSON sidecar {sidecar_path} keeps every section whole.",
        list.join("; ")
    );
    Some(json!({
        "budget_bytes": NARRATIVE_BUDGET_BYTES,
        "sections": cuts.iter().map(|c| json!({
            "section": c.section,
            "bytes_before": c.bytes_before,
            "bytes_after": c.bytes_after,
            "chars_before": c.chars_before,
            "chars_after": c.chars_after,
        })).collect::<Vec<_>>(),
        "message": message,
    }))
}

/// Render the handoff markdown.
///
/// Sections, in order: a line saying the agent wrote what follows, Goal, Next step, Facts (the
/// agent's claims), Decisions, User constraints (verbatim, as the agent quoted them), Open items,
/// Hypotheses (unverified), Files to read, then the automatic metadata recorded by Relay (absent
/// optional sections are omitted). Nothing the agent supplied is called verified: it is the
/// agent's statement until the next window checks it; only the metadata is Relay's record. The narrative sections share [`NARRATIVE_BUDGET_BYTES`] of body text: when they
/// exceed it, the longest are cut to a common length, each cut ending with `…(cut, N chars)` where
/// N is the number of characters removed. User constraints and file paths are never cut; when the
/// file would still exceed [`MAX_MARKDOWN_BYTES`], the result is [`HandoffError::Oversize`].
pub fn render_markdown(args: &HandoffArgs, meta: &HandoffMeta) -> Result<String, HandoffError> {
    render_markdown_with(args, meta, "", 0)
}

/// [`render_markdown`] with Relay's further sections (`extra`, markdown placed after the automatic
/// metadata: the integration sections, each bounded by its own allowance) and `reserved` bytes
/// kept free for a section appended afterwards (the resume check's 4 KiB), so that neither the
/// agent's text nor another section can take that allowance.
pub fn render_markdown_with(
    args: &HandoffArgs,
    meta: &HandoffMeta,
    extra: &str,
    reserved: usize,
) -> Result<String, HandoffError> {
    let mut md = String::new();
    md.push_str(AGENT_PART_NOTE);
    md.push_str("\n\n");
    push_agent_sections(&mut md, args);
    let meta_body = metadata_lines(args, meta).join("\n");
    // Relay's own part of the file: the heading, the note on what the agent wrote, the metadata.
    let own_bytes = heading(meta).len()
        + 4
        + AGENT_PART_NOTE.len()
        + 2
        + META_TITLE.len()
        + 7
        + inert_lines(meta_body.trim_end()).len();
    push_section(&mut md, META_TITLE, &meta_body);
    let head = format!("# {}\n\n", heading(meta));
    let finish = |extra: &str| {
        let mut body = md.clone();
        if !extra.trim().is_empty() {
            body.push_str(extra.trim_end());
            body.push_str("\n\n");
        }
        format!("{head}{}\n", body.trim_end())
    };
    let out = finish(extra);
    if out.len() + reserved <= MAX_MARKDOWN_BYTES {
        return Ok(out);
    }
    // Relay's own sections give way first: the integrations shrink to one line (the sidecar
    // keeps them whole), so that what the model wrote fits.
    let compact = compact_extra(extra);
    let out = finish(&compact);
    if out.len() + reserved <= MAX_MARKDOWN_BYTES {
        return Ok(out);
    }
    Err(HandoffError::Oversize {
        bytes: out.len() + reserved,
        limit: MAX_MARKDOWN_BYTES,
        relay: own_bytes + compact.len() + reserved,
        constraints: args.user_constraints.as_ref().map_or(0, String::len),
        files: args.files_to_read.iter().map(|f| f.len() + 3).sum(),
    })
}

/// The title of the metadata section, Relay's record of the workspace.
const META_TITLE: &str = "Automatic metadata (recorded by Relay)";

/// One `## title` section; its body cannot open a section of its own ([`inert_lines`]).
fn push_section(md: &mut String, title: &str, body: &str) {
    md.push_str("## ");
    md.push_str(title);
    md.push_str("\n\n");
    md.push_str(&inert_lines(body.trim_end()));
    md.push_str("\n\n");
}

/// The agent's sections, from Goal to Files to read, the narrative ones within
/// [`NARRATIVE_BUDGET_BYTES`]; absent optional sections are omitted.
fn push_agent_sections(md: &mut String, args: &HandoffArgs) {
    let (texts, _) = fit_narrative(&narrative(args), NARRATIVE_BUDGET_BYTES);
    let mut it = texts.into_iter();
    let mut next = || it.next().unwrap_or_default();
    let goal = next();
    let next_step = next();
    let facts = next();
    let decisions = args.decisions.as_ref().map(|_| next());
    let open_items = args.open_items.as_ref().map(|_| next());
    let hypotheses = args.hypotheses.as_ref().map(|_| next());
    push_section(md, "Goal", &goal);
    push_section(md, "Next step", &next_step);
    push_section(
        md,
        "Facts (claimed by the agent, not checked by Relay)",
        &facts,
    );
    if let Some(d) = &decisions {
        push_section(md, "Decisions", d);
    }
    if let Some(u) = &args.user_constraints {
        push_section(
            md,
            "User constraints (verbatim, as the agent quoted them)",
            u,
        );
    }
    if let Some(o) = &open_items {
        push_section(md, "Open items", o);
    }
    if let Some(h) = &hypotheses {
        push_section(md, "Hypotheses (unverified guesses of the agent)", h);
    }
    if !args.files_to_read.is_empty() {
        let list: Vec<String> = args
            .files_to_read
            .iter()
            .map(|f| format!("- {f}"))
            .collect();
        push_section(md, "Files to read", &list.join("\n"));
    }
}

/// The metadata section's lines: what Relay recorded of the workspace, not the agent's claims.
fn metadata_lines(args: &HandoffArgs, meta: &HandoffMeta) -> Vec<String> {
    let git_line = match meta.git_state {
        GitState::Repo => meta.git_branch.clone().unwrap_or_else(|| "-".into()),
        GitState::Detached => "(detached HEAD)".into(),
        GitState::NoGit => "(no git repository)".into(),
        GitState::Unknown => "(unknown: git could not be queried)".into(),
    };
    let mut meta_lines = vec![
        "Recorded by Relay from the workspace when the handoff was written, independently of the agent's claims above.".to_string(),
        String::new(),
        format!(
            "- Timestamp: {}",
            format_timestamp(meta.timestamp_ms, meta.tz_offset_minutes)
        ),
        format!("- Session: {}", meta.session_id),
        format!("- Window: {}", meta.window_id),
        format!("- cwd: {}", meta.cwd),
        format!(
            "- Repository root: {}",
            meta.repo_root.as_deref().unwrap_or("-")
        ),
        format!("- Git branch: {git_line}"),
        format!("- HEAD: {}", meta.git_head.as_deref().unwrap_or("-")),
    ];
    if let Some(lp) = &args.launch_prompt {
        meta_lines.push(format!("- Launch prompt: {lp}"));
    }
    meta_lines
}

/// The integration sections shrunk to one line when the handoff would pass its cap (or `extra`
/// as it is, when that is shorter).
fn compact_extra(extra: &str) -> String {
    let compact = format!(
        "## Pending work and integrations (recorded by Relay)\n\nOmitted here to keep the handoff within 48 KiB ({} bytes); the JSON sidecar beside this file keeps them.",
        extra.len()
    );
    if compact.len() < extra.trim_end().len() {
        compact
    } else {
        extra.to_string()
    }
}

#[cfg(test)]
#[path = "handoff_tests.rs"]
mod tests;
