//! The invariants of a session branch and of the engine's mirror, shared by the whole-engine
//! property test (`engine_props/`, on the branch its Pi-like host builds) and the session-file
//! checker (`session_check.rs`, on the JSONL a soak run through the real Pi wrote).
//!
//! User prompts are recognised by their markers (`«user-N»`, see [`marker`]): both the generated
//! sessions and the soak number every user message this way, so a marker found anywhere else
//! (a compaction summary, a Relay message) is a prompt the engine carried or replayed.

// Each includer uses its own part of this module.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};

use relay_core::engine::{
    Engine, Input, Moment, ToolReply, BOOT_TYPE, CONTINUE_TASK_TYPE, CONTINUE_TYPE, REMINDER_TYPE,
    STEER_TYPE,
};
use relay_core::entry::{Entry, EntryKind};
use serde_json::{json, Value};

macro_rules! check {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// The marker of user prompt `n`.
pub fn marker(n: u32) -> String {
    format!("«user-{n}»")
}

/// User prompt markers found in `text`.
pub fn prompts_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("«user-") {
        let tail = &rest[start..];
        match tail.find('»') {
            Some(end) => {
                out.push(tail[..end + '»'.len_utf8()].to_string());
                rest = &tail[end + '»'.len_utf8()..];
            }
            None => break,
        }
    }
    out
}

/// The Relay tools whose answers show the mirror (windows, the newest items, the notes), with the
/// arguments [`check_mirror`] asks them with.
pub const MIRROR_PROBES: [(&str, &str); 3] = [
    ("history_list_windows", "{}"),
    // The newest items, where a mirror that drifted would show it first.
    (
        "history_list_items",
        r#"{"limit":6,"max_chars_per_item":120}"#,
    ),
    ("notes_list_files_by_prefix", r#"{"prefix":""}"#),
];

/// What tool `name` answers, through the engine's one door.
pub fn tool_text(engine: &mut Engine, name: &str, args: &Value, moment: &Moment) -> String {
    tool_reply(engine, name, args, moment).text
}

/// The reply of tool `name`, through the engine's one door.
pub fn tool_reply(engine: &mut Engine, name: &str, args: &Value, moment: &Moment) -> ToolReply {
    let out = engine.handle(Input::Tool {
        call_id: "probe".into(),
        name: name.into(),
        args: args.clone(),
        moment: moment.clone(),
    });
    out.reply.unwrap_or_default()
}

/// The notes an engine holds, by path.
pub fn notes_of(engine: &Engine) -> BTreeMap<String, String> {
    engine
        .notes()
        .iter()
        .map(|n| (n.path.clone(), n.content.clone()))
        .collect()
}

/// The mirror of `live` against `fresh`, an engine resynced from the same branch: windows,
/// entry and item counts, notes, and what the [`MIRROR_PROBES`] answer.
pub fn check_mirror(live: &mut Engine, fresh: &mut Engine, moment: &Moment) -> Result<(), String> {
    check!(
        live.history().window_ids() == fresh.history().window_ids(),
        "window ids {:?} != after a resync {:?}",
        live.history().window_ids(),
        fresh.history().window_ids()
    );
    check!(
        live.history().entry_count() == fresh.history().entry_count()
            && live.history().item_count() == fresh.history().item_count(),
        "entry/item counts differ from a resync"
    );
    check!(
        notes_of(live) == notes_of(fresh),
        "notes differ from a resync"
    );
    for (tool, args) in MIRROR_PROBES {
        let args: Value = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
        let ours = tool_text(live, tool, &args, moment);
        let theirs = tool_text(fresh, tool, &args, moment);
        check!(
            ours == theirs,
            "{tool} differs from a resync:\n{ours}\n---\n{theirs}"
        );
    }
    Ok(())
}

/// What a branch may hold, window by window:
///
/// - **one borrowed turn per window**: at most one notes steer;
/// - **one continuation per reset**: a window holds at most one hidden continuation, right after
///   its compaction, and the first window none;
/// - **no user prompt dropped or replayed**: every prompt is on the branch as a user message
///   exactly once; no Relay message carries one, except a `relay/continue-task`, which quotes the
///   user's latest prompt (and comes before any prompt of its window); a compaction summary
///   carries only the ended window's prompts (of a window without any, those of the newest
///   earlier window that has some), each once, and only for an automatic or manual reset; one in
///   `restating` (an overflow reset Pi retries) restates the window's newest prompt;
/// - one boot block message (in the first window), at most one reminder per window.
pub fn check_branch(branch: &[Entry], restating: &HashSet<String>) -> Result<(), String> {
    let mut starts = vec![0];
    for (i, e) in branch.iter().enumerate() {
        if matches!(e.kind, EntryKind::Compaction { .. }) {
            starts.push(i);
        }
    }
    starts.push(branch.len());
    let mut reminders: BTreeMap<String, usize> = BTreeMap::new();
    let mut users: BTreeMap<String, usize> = BTreeMap::new();
    let mut boots = 0;
    // The user prompts of the newest window before the one being checked that has any, oldest
    // first, and whether that is the window right before it.
    let mut previous_prompts: Vec<String> = Vec::new();
    let mut previous_had_own = false;
    for (w, pair) in starts.windows(2).enumerate() {
        let (from, to) = (pair[0], pair[1]);
        let mut prompts: Vec<String> = Vec::new();
        let mut steers = 0;
        let mut continuations = Vec::new();
        for (i, e) in branch[from..to].iter().enumerate() {
            match &e.kind {
                EntryKind::CustomMessage {
                    custom_type,
                    text,
                    details,
                    ..
                } => {
                    let quoted = prompts_in(text);
                    if custom_type == CONTINUE_TASK_TYPE {
                        check!(
                            prompts.is_empty()
                                && (quoted.is_empty()
                                    || quoted.iter().collect::<Vec<_>>()
                                        == previous_prompts.last().into_iter().collect::<Vec<_>>()),
                            "{custom_type} message {} quotes {quoted:?}, not the latest prompt {:?}",
                            e.id,
                            previous_prompts.last()
                        );
                    } else {
                        check!(
                            quoted.is_empty(),
                            "{custom_type} message {} carries a user prompt",
                            e.id
                        );
                    }
                    if custom_type == STEER_TYPE {
                        steers += 1;
                    } else if custom_type == CONTINUE_TYPE {
                        continuations.push(i);
                    } else if custom_type == REMINDER_TYPE {
                        let for_window = details
                            .get("windowId")
                            .and_then(Value::as_str)
                            .unwrap_or("?");
                        *reminders.entry(for_window.to_string()).or_default() += 1;
                    } else if custom_type == BOOT_TYPE {
                        boots += 1;
                        check!(w == 0, "a boot block message in window {w}");
                    }
                }
                EntryKind::Message(m) if m.role == "user" => {
                    for p in prompts_in(&m.text) {
                        *users.entry(p.clone()).or_default() += 1;
                        prompts.push(p);
                    }
                }
                EntryKind::Compaction {
                    summary, details, ..
                } => {
                    // An automatic or manual reset carries the ended window's recent user
                    // input (each prompt once, only that window's, labelled as earlier input);
                    // new_context and handoffs carry none; an overflow Pi retries restates
                    // the dropped prompt, the window's newest.
                    // Outside `<in_progress>`: the model's own last actions may quote a prompt.
                    let found = prompts_in(&split_in_progress(summary).0);
                    let source = details.get("source").and_then(Value::as_str);
                    let carries = matches!(
                        source,
                        Some("fallback" | "threshold" | "overflow" | "forced" | "idle" | "manual")
                    );
                    let unique: HashSet<&String> = found.iter().collect();
                    check!(
                        found.is_empty()
                            || (carries
                                && unique.len() == found.len()
                                && found.iter().all(|p| previous_prompts.contains(p))),
                        "compaction {} ({source:?}) carries user prompts {found:?} (window had {previous_prompts:?})",
                        e.id
                    );
                    if restating.contains(&e.id) && previous_had_own {
                        let newest = previous_prompts.last();
                        check!(
                            newest.is_none_or(|p| found.contains(p)),
                            "compaction {} does not restate the dropped prompt {newest:?}",
                            e.id
                        );
                    }
                }
                _ => {}
            }
        }
        check!(steers <= 1, "{steers} borrowed turns in window {w}");
        previous_had_own = !prompts.is_empty();
        if previous_had_own {
            previous_prompts = prompts;
        }
        check!(
            continuations.is_empty() || (w > 0 && continuations == vec![1]),
            "hidden continuations at {continuations:?} of window {w}"
        );
    }
    check!(boots <= 1, "{boots} boot blocks on the branch");
    for (window, n) in &reminders {
        check!(*n <= 1, "{n} reminders for window {window}");
    }
    for (prompt, n) in &users {
        check!(*n == 1, "{prompt} is on the branch {n} times");
    }
    Ok(())
}

/// A boot block without its `<in_progress>` section, and the section (empty when absent).
pub fn split_in_progress(summary: &str) -> (String, &str) {
    let Some(start) = summary.find("\n<in_progress ") else {
        return (summary.to_string(), "");
    };
    let end = summary[start..]
        .find("</in_progress>\n")
        .map_or(summary.len(), |e| start + e + "</in_progress>\n".len());
    let outside = format!("{}{}", &summary[..start + 1], &summary[end..]);
    (outside, &summary[start + 1..end])
}
