//! The handoff renderer (`relay_core::handoff`, `relay_core::render::handoff`): `context_handoff` arguments to the markdown file
//! and the JSON sidecar, under the section budgets.
//!
//! Input: bytes that parse as JSON are the tool's arguments (with fixed metadata); any other
//! bytes drive a generator of arguments (every parameter, sometimes of the wrong type; texts
//! with markdown that could open a block of its own — `#` headings, `\n## Next step`, setext
//! underlines, code fences, HTML, `\r` line breaks — and sizes around the 12 KiB narrative budget
//! and the 48 KiB file limit) and of the metadata (cwd, branch and HEAD with the same texts).
//!
//! Properties checked:
//! - `HandoffArgs::parse`, `narrative_cuts`, `render_markdown(_with)`, `HandoffSidecar::new` and
//!   `shortened_reply` never panic;
//! - a refused call is an argument error that starts with `context_handoff: ` and names an
//!   argument; an accepted one has non-blank goal, next step and facts, non-blank file paths and
//!   an absolute launch prompt;
//! - the sidecar keeps every argument whole;
//! - a cut section is shorter than written, its marker `…(cut, N chars)` is in the markdown with
//!   the right N, and the narrative that is kept fits the 12 KiB budget;
//! - the markdown is at most 48 KiB (with a reservation: at most 48 KiB less the reservation),
//!   and it is refused as oversize only when the parts that are never cut are large;
//! - **no section can be forged**: parsed as CommonMark, the file's top-level headings are exactly
//!   Relay's own (`# Handoff <session>-<n>`, then Goal, Next step, Facts, the optional sections
//!   present, Files to read, Automatic metadata), whatever the fields contain.
use arbitrary::{Result, Unstructured};
use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use relay_core::engine::files::HandoffSidecar;
use relay_core::handoff::{
    heading, narrative_cuts, GitState, HandoffArgs, HandoffError, HandoffMeta, MAX_MARKDOWN_BYTES,
    NARRATIVE_BUDGET_BYTES,
};
use relay_core::render::handoff::{render_markdown, render_markdown_with, shortened_reply};
use serde_json::{json, Map, Value};

/// The target's body: panics when a property does not hold.
pub fn check(data: &[u8]) {
    let (v, meta) = match serde_json::from_slice::<Value>(data) {
        Ok(v) => (v, fixed_meta()),
        Err(_) => {
            let mut u = Unstructured::new(data);
            match (gen_args(&mut u), gen_meta(&mut u)) {
                (Ok(a), Ok(m)) => (a, m),
                _ => return,
            }
        }
    };
    let a = match HandoffArgs::parse(&v) {
        Err(HandoffError::InvalidArgument(text)) => {
            assert!(
                text.starts_with("context_handoff: argument")
                    || text.starts_with("context_handoff: unknown argument \"")
                    || text.starts_with("context_handoff: arguments must be an object"),
                "an argument error that names no argument: {text:?}"
            );
            return;
        }
        Err(e) => panic!("parse gave {e:?}"),
        Ok(a) => a,
    };
    for (name, t) in [
        ("goal", &a.goal),
        ("next_step", &a.next_step),
        ("facts", &a.facts),
    ] {
        assert!(!t.trim().is_empty(), "{name} accepted blank");
    }
    for f in &a.files_to_read {
        assert!(!f.trim().is_empty(), "blank file path accepted");
    }
    if let Some(p) = &a.launch_prompt {
        assert!(p.starts_with('/'), "relative launch prompt accepted: {p:?}");
    }

    let side = serde_json::to_value(HandoffSidecar::new(&a, &meta, "/h/handoff.md"))
        .expect("a sidecar serializes");
    for (key, want) in [
        ("goal", json!(a.goal)),
        ("nextStep", json!(a.next_step)),
        ("facts", json!(a.facts)),
        ("decisions", json!(a.decisions)),
        ("userConstraints", json!(a.user_constraints)),
        ("openItems", json!(a.open_items)),
        ("hypotheses", json!(a.hypotheses)),
        ("filesToRead", json!(a.files_to_read)),
        ("launchPrompt", json!(a.launch_prompt)),
    ] {
        assert_eq!(side[key], want, "the sidecar lost {key}");
    }

    let cuts = narrative_cuts(&a);
    let mut narrative: Vec<(&str, &str)> = vec![
        ("goal", &a.goal),
        ("next_step", &a.next_step),
        ("facts", &a.facts),
    ];
    for (name, t) in [
        ("decisions", &a.decisions),
        ("open_items", &a.open_items),
        ("hypotheses", &a.hypotheses),
    ] {
        if let Some(t) = t {
            narrative.push((name, t));
        }
    }
    let mut kept = 0;
    for (name, t) in &narrative {
        match cuts.iter().find(|c| c.section == *name) {
            Some(c) => {
                assert_eq!(c.bytes_before, t.len());
                assert!(c.bytes_after < c.bytes_before && c.chars_after < c.chars_before);
                kept += c.bytes_after;
            }
            None => kept += t.len(),
        }
    }
    assert!(
        kept <= NARRATIVE_BUDGET_BYTES,
        "kept {kept} bytes of narrative"
    );
    assert_eq!(
        shortened_reply(&cuts, "/h/s.json").is_some(),
        !cuts.is_empty()
    );

    // The parts the budget never cuts, as bytes (escaping may add one byte to a line).
    let fixed: usize = a.user_constraints.as_ref().map_or(0, String::len)
        + a.files_to_read.iter().map(|f| f.len() + 3).sum::<usize>()
        + a.launch_prompt.as_ref().map_or(0, String::len)
        + meta.cwd.len()
        + meta.repo_root.as_ref().map_or(0, String::len)
        + meta.git_branch.as_ref().map_or(0, String::len)
        + meta.git_head.as_ref().map_or(0, String::len)
        + meta.session_id.len()
        + meta.window_id.len();
    match render_markdown(&a, &meta) {
        Err(HandoffError::Oversize { bytes, limit, .. }) => {
            assert_eq!(limit, MAX_MARKDOWN_BYTES);
            assert!(bytes > limit);
            assert!(
                fixed > 14 * 1024,
                "oversize ({bytes} bytes) with only {fixed} bytes that are never cut"
            );
        }
        Err(e) => panic!("render gave {e:?}"),
        Ok(md) => {
            assert!(md.len() <= MAX_MARKDOWN_BYTES);
            assert!(md.starts_with(&format!("# {}\n\n", heading(&meta))));
            for c in &cuts {
                let marker = format!("…(cut, {} chars)", c.removed_chars());
                assert!(md.contains(&marker), "no {marker} for {}", c.section);
            }
            assert_eq!(
                top_level_headings(&md),
                expected_headings(&a, &meta),
                "the fields forged or hid a section:\n{md}"
            );
            match render_markdown_with(&a, &meta, "", 4096) {
                Ok(md2) => {
                    assert_eq!(md2, md);
                    assert!(md.len() + 4096 <= MAX_MARKDOWN_BYTES);
                }
                Err(HandoffError::Oversize { bytes, .. }) => {
                    assert_eq!(bytes, md.len() + 4096);
                }
                Err(e) => panic!("render with a reservation gave {e:?}"),
            }
        }
    }
}

fn expected_headings(a: &HandoffArgs, meta: &HandoffMeta) -> Vec<(u8, String)> {
    let mut h = vec![
        (1, heading(meta)),
        (2, "Goal".to_string()),
        (2, "Next step".to_string()),
        (
            2,
            "Facts (claimed by the agent, not checked by Relay)".to_string(),
        ),
    ];
    let mut opt = |present: bool, title: &str| {
        if present {
            h.push((2, title.to_string()));
        }
    };
    opt(a.decisions.is_some(), "Decisions");
    opt(
        a.user_constraints.is_some(),
        "User constraints (verbatim, as the agent quoted them)",
    );
    opt(a.open_items.is_some(), "Open items");
    opt(
        a.hypotheses.is_some(),
        "Hypotheses (unverified guesses of the agent)",
    );
    opt(!a.files_to_read.is_empty(), "Files to read");
    opt(true, "Automatic metadata (recorded by Relay)");
    h
}

/// The headings outside any container (list, quote), with their plain text, as CommonMark reads
/// the file.
fn top_level_headings(md: &str) -> Vec<(u8, String)> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut current: Option<(u8, String)> = None;
    for ev in Parser::new(md) {
        match ev {
            Event::Start(Tag::Heading { level, .. }) => {
                current = (depth == 0).then(|| (level as u8, String::new()));
            }
            Event::End(TagEnd::Heading(_)) => out.extend(current.take()),
            Event::Start(
                Tag::BlockQuote(_) | Tag::List(_) | Tag::Item | Tag::FootnoteDefinition(_),
            ) => depth += 1,
            Event::End(
                TagEnd::BlockQuote(_) | TagEnd::List(_) | TagEnd::Item | TagEnd::FootnoteDefinition,
            ) => depth -= 1,
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, s)) = &mut current {
                    s.push_str(&t);
                }
            }
            _ => {}
        }
    }
    out
}

fn fixed_meta() -> HandoffMeta {
    HandoffMeta {
        timestamp_ms: 1_740_000_000_000,
        tz_offset_minutes: 60,
        cwd: "/work/repo".into(),
        repo_root: Some("/work/repo".into()),
        git_branch: Some("main".into()),
        git_head: Some("0123456789abcdef".into()),
        git_state: GitState::Repo,
        session_id: "s1".into(),
        sequence: 1,
        window_id: "w1".into(),
    }
}

// ---------------------------------------------------------------------------------------------
// Structured generation
// ---------------------------------------------------------------------------------------------

/// Pieces of markdown that open blocks, and plain words.
const PIECES: [&str; 24] = [
    "\n## Next step\n",
    "\n# Goal\n",
    "## Goal",
    "\n\n## Automatic metadata (recorded by Relay)\n\nforged",
    "\n```\n",
    "\n~~~\n",
    "\n    ## indented\n",
    "\n---\n",
    "\n===\n",
    "\n-\n",
    "\n<!--\n",
    "\n<script>\n",
    "\r## Next step",
    "\r\n## Next step\r\n",
    "\n> ## quoted\n",
    "\n- ## listed\n",
    "\n   # three spaces\n",
    "\n\t## tab\n",
    "\\",
    "word ",
    "é",
    "\n",
    " ",
    "`",
];

fn gen_text(u: &mut Unstructured<'_>) -> Result<String> {
    let mut s = String::new();
    match u.int_in_range(0..=15u8)? {
        // Sizes around the budgets.
        0 => {
            let n = *u.choose(&[
                NARRATIVE_BUDGET_BYTES / 3,
                NARRATIVE_BUDGET_BYTES / 2,
                NARRATIVE_BUDGET_BYTES,
                NARRATIVE_BUDGET_BYTES + 1,
                MAX_MARKDOWN_BYTES / 2,
                MAX_MARKDOWN_BYTES,
            ])?;
            let fill = *u.choose(&["x", "é ", "#\n", "word ", "\n"])?;
            s = fill.repeat(n / fill.len());
        }
        1 => {
            let n = u.int_in_range(0..=40)?;
            s = String::from_utf8_lossy(u.bytes(n.min(u.len()))?).into_owned();
        }
        _ => {
            for _ in 0..u.int_in_range(1..=8)? {
                s.push_str(u.choose(&PIECES)?);
            }
        }
    }
    Ok(s)
}

fn gen_args(u: &mut Unstructured<'_>) -> Result<Value> {
    const TEXT_KEYS: [&str; 7] = [
        "goal",
        "next_step",
        "facts",
        "decisions",
        "user_constraints",
        "open_items",
        "hypotheses",
    ];
    let mut obj = Map::new();
    for (i, key) in TEXT_KEYS.iter().enumerate() {
        // Required ones nearly always, optional ones half the time.
        let present = if i < 3 {
            u.ratio(31, 32)?
        } else {
            u.ratio(1, 2)?
        };
        if present {
            let v = if u.ratio(1, 24)? {
                junk(u)?
            } else {
                json!(gen_text(u)?)
            };
            obj.insert(key.to_string(), v);
        }
    }
    if u.ratio(1, 2)? {
        let mut files = Vec::new();
        for _ in 0..u.int_in_range(0..=5)? {
            files.push(match u.int_in_range(0..=7u8)? {
                0 => junk(u)?,
                1 => json!(gen_text(u)?),
                2 => json!("f".repeat(*u.choose(&[1, 4096, 16 * 1024, 40 * 1024])?)),
                _ => {
                    json!(*u.choose(&["src/lib.rs", "a b.md", "x\n## Next step", "```", "<x>"])?)
                }
            });
        }
        obj.insert("files_to_read".into(), json!(files));
    }
    if u.ratio(1, 4)? {
        let v = match u.int_in_range(0..=3u8)? {
            0 => junk(u)?,
            1 => json!("relative/prompt.md"),
            2 => json!("/abs/prompt.md\n## Next step"),
            _ => json!("/abs/prompt.md"),
        };
        obj.insert("launch_prompt".into(), v);
    }
    if u.ratio(1, 32)? {
        obj.insert("goa1".into(), json!("x"));
    }
    Ok(Value::Object(obj))
}

fn junk(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=6u8)? {
        0 => Value::Null,
        1 => json!(u.arbitrary::<bool>()?),
        2 => json!(u.arbitrary::<i32>()?),
        3 => json!([]),
        4 => json!(["a", 1]),
        5 => json!({}),
        _ => json!("   "),
    })
}

fn gen_meta(u: &mut Unstructured<'_>) -> Result<HandoffMeta> {
    let mut m = fixed_meta();
    if u.ratio(1, 4)? {
        m.cwd = format!("/work/{}", gen_text(u)?);
    }
    if u.ratio(1, 8)? {
        m.git_branch = Some(gen_text(u)?);
    }
    m.git_state = *u.choose(&[
        GitState::Repo,
        GitState::Detached,
        GitState::NoGit,
        GitState::Unknown,
    ])?;
    m.timestamp_ms = u.int_in_range(-1_000_000_000_000i64..=4_000_000_000_000)?;
    m.tz_offset_minutes = u.int_in_range(-900..=900)?;
    m.sequence = u.arbitrary()?;
    Ok(m)
}
