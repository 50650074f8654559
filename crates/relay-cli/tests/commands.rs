//! The `relay` binary against real session files: `fixtures/handoff-and-reset.jsonl` and
//! `fixtures/lexer-plan.jsonl` were written by the real `pi -p` with Relay and the faux model
//! (the first: two notes, a committed handoff at the budget's handoff line, then `new_context`;
//! the second: one `new_context`), and `fixtures/repo/.ai-work/handoffs/` holds the handoff the
//! first run wrote.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_relay");

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Runs relay in the fixtures folder (so relative paths in the output are stable), with Pi's
/// agent folder pointed at `agent` when given.
fn relay_in(dir: &Path, agent: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).current_dir(dir).env_remove("NO_COLOR");
    cmd.env_remove("PI_CONTEXT_BUDGET_STATE_DIR");
    match agent {
        Some(a) => cmd.env("PI_CODING_AGENT_DIR", a),
        None => cmd.env_remove("PI_CODING_AGENT_DIR"),
    };
    cmd.output().expect("relay runs")
}

fn relay(args: &[&str]) -> Output {
    relay_in(&fixture(""), None, args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

/// A fresh folder under the system's temporary folder.
fn temp(tag: &str) -> PathBuf {
    common::fresh_dir(&format!("relay-cli-{tag}"))
}

const MAIN: &str = "handoff-and-reset.jsonl";
const LEXER: &str = "lexer-plan.jsonl";

#[test]
fn windows_lists_the_three_windows_with_what_opened_them() {
    let o = relay(&["windows", MAIN]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn sessions_lists_newest_activity_first_with_windows_size_and_title() {
    let dir = temp("sessions");
    for f in [MAIN, LEXER] {
        std::fs::copy(fixture(f), dir.join(f)).unwrap();
    }
    let o = relay_in(&dir, None, &["sessions", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!(stdout(&o));
    let docs = json(&relay_in(&dir, None, &["sessions", ".", "--json"]));
    let docs = docs.as_array().unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["windows"], 2, "lexer-plan is newer");
    assert_eq!(docs[0]["title"], "Plan the lexer for the parser.");
    assert_eq!(docs[0]["title_from"], "first_message");
    assert_eq!(docs[1]["windows"], 3);
    assert_eq!(
        docs[1]["bytes"],
        std::fs::metadata(fixture(MAIN)).unwrap().len()
    );
}

#[test]
fn sessions_defaults_to_pi_s_agent_folder_and_exits_1_when_it_is_empty() {
    let agent = temp("agent");
    let sessions = agent.join("sessions").join("--tmp-work--");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::copy(fixture(LEXER), sessions.join(LEXER)).unwrap();
    let o = relay_in(&agent, Some(&agent), &["sessions", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let docs = json(&o);
    assert_eq!(docs.as_array().unwrap().len(), 1);
    assert!(docs[0]["file"]
        .as_str()
        .unwrap()
        .starts_with(&agent.join("sessions").display().to_string()));

    let empty = temp("empty-agent");
    let o = relay_in(&empty, Some(&empty), &["sessions"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no sessions folder at"),
        "{}",
        stderr(&o)
    );
    // An explicit folder that does not exist is unreadable input.
    let o = relay(&["sessions", "/nonexistent/sessions"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/sessions"));
}

#[test]
fn search_ranks_the_newest_session_first_and_highlights_only_when_asked() {
    let dir = temp("search");
    for f in [MAIN, LEXER] {
        std::fs::copy(fixture(f), dir.join(f)).unwrap();
    }
    // "parser" is in both; lexer-plan has newer activity, so it comes first although the other
    // session has more matching items.
    let o = relay_in(&dir, None, &["search", "parser", ".", "--color", "never"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!(stdout(&o));
    assert!(!stdout(&o).contains('\x1b'));
    let docs = json(&relay_in(&dir, None, &["search", "parser", ".", "--json"]));
    let files: Vec<&str> = docs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["./lexer-plan.jsonl", "./handoff-and-reset.jsonl"]);
    assert!(docs[1]["matches"].as_u64() > docs[0]["matches"].as_u64());

    let colored = relay_in(&dir, None, &["search", "lexer", ".", "--color", "always"]);
    assert!(
        stdout(&colored).contains("\x1b[1;31mlexer\x1b[0m"),
        "{}",
        stdout(&colored)
    );
    // auto: stdout is a pipe here, so no colour.
    let auto = relay_in(&dir, None, &["search", "lexer", "."]);
    assert!(!stdout(&auto).contains('\x1b'));
}

#[test]
fn search_exits_1_when_nothing_matches_and_2_on_a_bad_argument() {
    let o = relay(&["search", "no such text anywhere", MAIN]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("no match for"), "{}", stderr(&o));
    let o = relay(&["search", "x", MAIN, "--color", "sometimes"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--color"), "{}", stderr(&o));
    let o = relay(&["items", MAIN, "--limit", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--limit"), "{}", stderr(&o));
}

#[test]
fn notes_lists_prints_and_reports_a_missing_note() {
    let o = relay(&["notes", MAIN]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!(stdout(&o));
    // The second window rewrote plan.md: the branch's last write wins.
    let o = relay(&["notes", MAIN, "--path", "plan.md"]);
    assert_eq!(stdout(&o), "1. parse (done)\n2. test\n");
    let doc = json(&relay(&["notes", MAIN, "--path", "log/day1.md", "--json"]));
    assert_eq!(doc["content"], "parser started\n");
    assert_eq!(doc["lines"], 1);
    let o = relay(&["notes", MAIN, "--path", "missing.md"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("\"missing.md\""), "{}", stderr(&o));
    let o = relay(&["notes", LEXER]);
    assert_eq!(o.status.code(), Some(1), "a session without notes");
    assert_eq!(stdout(&o), "");
}

#[test]
fn notes_export_writes_the_notes_inside_the_folder_and_never_replaces_a_file_unasked() {
    let out = temp("export");
    let target = out.join("notes");
    let o = relay(&[
        "notes",
        MAIN,
        "--export",
        target.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(target.join("plan.md")).unwrap(),
        "1. parse (done)\n2. test\n"
    );
    assert_eq!(
        std::fs::read_to_string(target.join("log/day1.md")).unwrap(),
        "parser started\n"
    );
    assert_eq!(json(&o)["written"].as_array().unwrap().len(), 2);
    // Again: the files exist, nothing is replaced without --force.
    std::fs::write(target.join("plan.md"), "my edits").unwrap();
    let o = relay(&["notes", MAIN, "--export", target.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(target.join("plan.md")).unwrap(),
        "my edits"
    );
    let o = relay(&[
        "notes",
        MAIN,
        "--export",
        target.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(target.join("plan.md")).unwrap(),
        "1. parse (done)\n2. test\n"
    );
}

#[test]
fn notes_export_refuses_a_folder_that_leads_outside_and_skips_an_escaping_note_path() {
    // A note operation whose path climbs out (written by hand or by a broken tool) is refused by
    // the notes replay, named on stderr, and never written anywhere.
    let dir = temp("escape");
    let mut text = std::fs::read_to_string(fixture(MAIN)).unwrap();
    let last_id = text
        .lines()
        .last()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| v["id"].as_str().map(str::to_string))
        .unwrap();
    for (id, path) in [("evil0001", "../evil.md"), ("evil0002", "/tmp/abs.md")] {
        let parent = if id == "evil0001" {
            last_id.clone()
        } else {
            "evil0001".into()
        };
        text.push_str(
            &serde_json::json!({
                "type": "custom", "id": id, "parentId": parent,
                "timestamp": "2026-12-01T22:10:12.000Z", "customType": "relay/note",
                "data": {"kind": "write", "path": path, "content": "escaped", "atMs": 1796163012000i64}
            })
            .to_string(),
        );
        text.push('\n');
    }
    let session = dir.join("escape.jsonl");
    std::fs::write(&session, text).unwrap();
    let target = dir.join("out");
    let o = relay(&[
        "notes",
        session.to_str().unwrap(),
        "--export",
        target.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("evil0001") && err.contains("\"../evil.md\""),
        "{err}"
    );
    assert!(
        err.contains("evil0002") && err.contains("\"/tmp/abs.md\""),
        "{err}"
    );
    assert!(!dir.join("evil.md").exists());
    assert!(target.join("plan.md").exists());

    // A subfolder of the export folder that is a symbolic link to elsewhere is refused.
    let outside = dir.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let linked = dir.join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(&outside, linked.join("log")).unwrap();
    let o = relay(&["notes", MAIN, "--export", linked.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("outside"), "{}", stderr(&o));
    assert!(!outside.join("day1.md").exists());
}

#[test]
fn notes_export_refuses_a_lookalike_note_path_by_name_and_writes_nothing() {
    // Notes an earlier Relay could store under names that look like a path climbing out
    // (fullwidth solidus and full stops, a division slash): they still replay (listed, readable),
    // but the export refuses the first by name before writing any file.
    let dir = temp("lookalike");
    let mut text = std::fs::read_to_string(fixture(MAIN)).unwrap();
    let mut parent = text
        .lines()
        .last()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| v["id"].as_str().map(str::to_string))
        .unwrap();
    let paths = [
        "\u{ff0e}\u{ff0e}\u{ff0f}evil.md",
        "..\u{2215}..\u{2215}evil2.md",
    ];
    for (i, path) in paths.iter().enumerate() {
        let id = format!("look000{i}");
        text.push_str(
            &serde_json::json!({
                "type": "custom", "id": id, "parentId": parent,
                "timestamp": "2026-12-01T22:10:12.000Z", "customType": "relay/note",
                "data": {"kind": "write", "path": path, "content": "escaped", "atMs": 1796163012000i64}
            })
            .to_string(),
        );
        text.push('\n');
        parent = id;
    }
    let session = dir.join("lookalike.jsonl");
    std::fs::write(&session, text).unwrap();
    let listed = json(&relay(&["notes", session.to_str().unwrap(), "--json"]));
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["path"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(
        names.contains(&paths[0]) && names.contains(&paths[1]),
        "{names:?}"
    );
    let target = dir.join("out");
    let o = relay(&[
        "notes",
        session.to_str().unwrap(),
        "--export",
        target.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{:?}", paths[1]))
            && err.contains("U+2215")
            && err.contains("refused"),
        "{err}"
    );
    assert!(!target.exists(), "the export wrote something");
    assert!(!dir.join("evil.md").exists() && !dir.join("evil2.md").exists());
}

#[test]
fn handoffs_list_and_show_the_files_relay_wrote() {
    let repo = fixture("repo");
    let o = relay(&["handoffs", "--dir", repo.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!(stdout(&o));
    let o = relay_in(&repo, None, &["handoffs", "show", "latest", "--dir", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("# Handoff 01a233b1-d24e-7415-9495-70a2011c6ce0-1\n"));
    let doc = json(&relay_in(
        &repo,
        None,
        &[
            "handoffs",
            "show",
            "01a233b1-d24e-7415-9495-70a2011c6ce0-1",
            "--dir",
            ".",
            "--json",
        ],
    ));
    assert_eq!(doc["goal"], "GOAL: port the parser");
    assert!(doc["markdown"].as_str().unwrap().contains("## Next step"));
    let o = relay_in(&repo, None, &["handoffs", "show", "nope-9", "--dir", "."]);
    assert_eq!(o.status.code(), Some(1));
    let empty = temp("no-handoffs");
    let o = relay(&["handoffs", "list", "--dir", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn status_tells_running_sessions_from_gone_ones_by_pid() {
    let state = temp("state");
    let status = state.join("status");
    std::fs::create_dir_all(&status).unwrap();
    // A process that has ended (and been reaped): its pid is gone.
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let me = std::process::id();
    for (id, pid, updated) in [
        ("live-1", me, 1796163011654i64),
        ("dead-1", dead, 1796163000000),
    ] {
        std::fs::write(
            status.join(format!("{id}.json")),
            serde_json::json!({"phase": "idle", "tokens": 6000, "sessionId": id, "windowCount": 2,
                "cwd": "/w", "updatedAt": updated, "pid": pid})
            .to_string(),
        )
        .unwrap();
    }
    let o = relay(&["status", "--state-dir", state.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let docs = json(&o);
    let ids: Vec<&str> = docs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["live-1"], "only the running one by default");
    assert_eq!(docs[0]["running"], true);
    let o = relay(&["status", "--state-dir", state.to_str().unwrap(), "--all"]);
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[1].starts_with("running") && lines[1].contains("live-1"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("gone") && lines[2].contains("dead-1"),
        "{text}"
    );
    // The state folder from the environment, as the extension resolves it.
    std::fs::remove_file(status.join("live-1.json")).unwrap();
    let o = Command::new(BIN)
        .args(["status"])
        .env("PI_CONTEXT_BUDGET_STATE_DIR", &state)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "nothing running");
    assert!(stderr(&o).contains(&state.join("status").display().to_string()));
}

#[test]
fn completions_print_a_script_for_the_shell() {
    let o = relay(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0));
    let script = stdout(&o);
    assert!(script.contains("_relay()"), "{script}");
    for cmd in ["timeline", "handoffs", "sessions", "status", "notes"] {
        assert!(script.contains(cmd), "{cmd} missing");
    }
    let o = relay(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn help_and_bad_commands() {
    let o = relay(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("Exit status: 0 success, 1 nothing found"));
    let o = relay(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("frobnicate"));
    let o = relay(&[]);
    assert_eq!(o.status.code(), Some(2));
}

// ── timeline ────────────────────────────────────────────────────────────────────────────────

/// Plot geometry, as documented in the timeline module: x0 = 90, x1 = 1160, a reset after
/// request k of n at x0 + (x1 - x0) * k / n.
fn expected_marker_x(after: usize, n: usize) -> f64 {
    (90.0 + 1070.0 * after as f64 / n as f64).round()
}

/// The value of attribute `name` in the first element starting with `tag` that contains `needle`.
fn attr<'a>(svg: &'a str, needle: &str, name: &str) -> Option<&'a str> {
    let at = svg.find(needle)?;
    let start = svg[..=at].rfind('<')?;
    let end = at + svg[at..].find('>')?;
    let element = &svg[start..end];
    let key = format!(" {name}=\"");
    let v = element.find(&key)? + key.len();
    let len = element[v..].find('"')?;
    Some(&element[v..v + len])
}

#[test]
fn timeline_svg_marks_the_handoff_and_the_reset_where_they_happened() {
    let out = temp("timeline");
    let svg_path = out.join("t.svg");
    let o = relay(&[
        "timeline",
        MAIN,
        "-o",
        svg_path.to_str().unwrap(),
        "--window",
        "100000",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let summary = json(&o);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg ") && svg.contains(r#"width="1200" height="680""#));
    // 9 requests with usage; the handoff reset after request 5, new_context after request 8.
    assert_eq!(summary["requests"].as_array().unwrap().len(), 9);
    assert_eq!(svg.matches(r#"<circle class="request""#).count(), 9);
    let handoff = attr(&svg, r#"class="marker handoff""#, "data-x").unwrap();
    assert_eq!(handoff.parse::<f64>().unwrap(), expected_marker_x(5, 9));
    let reset = attr(&svg, r#"class="marker reset""#, "data-x").unwrap();
    assert_eq!(reset.parse::<f64>().unwrap(), expected_marker_x(8, 9));
    assert_eq!(
        attr(&svg, r#"class="marker handoff""#, "data-window-id"),
        Some("pcw:01a233b1-d24e-7415-9495-70a2011c6ce0:e41be420")
    );
    // Labelled with the window, what opened it, its source and what it dropped.
    assert!(
        svg.contains("→ window e41be420 · handoff (budget)"),
        "{svg}"
    );
    assert!(svg.contains("→ window 539807cd · reset · from new_context"));
    assert!(svg.contains("dropped 33,059 tokens, 12 messages"));
    assert!(svg.contains("dropped 18,031 tokens, 6 messages"));
    // Relay's defaults for a 100k window (reserve 16,384): hard 75,254, handoff 56,440,
    // soft 45,152; the reminder at 100,000 - (16,384 + 24,576).
    for (name, tokens) in [
        ("soft", "45152"),
        ("handoff", "56440"),
        ("hard", "75254"),
        ("reminder", "59040"),
        ("window", "100000"),
    ] {
        assert_eq!(
            attr(&svg, &format!(r#"class="threshold {name}""#), "data-tokens"),
            Some(tokens),
            "{name}"
        );
    }
    // The marker line spans the plot at its x.
    let line_x = {
        let g = svg.find(r#"class="marker reset""#).unwrap();
        let l = g + svg[g..].find("<line ").unwrap();
        attr(&svg[l..], "<line", "x1")
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    assert_eq!(line_x, expected_marker_x(8, 9));
}

#[test]
fn timeline_without_a_window_draws_no_threshold_lines_and_says_why() {
    let out = temp("timeline-nowin");
    let svg_path = out.join("t.svg");
    let o = relay(&["timeline", LEXER, "-o", svg_path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(!svg.contains(r#"class="threshold"#));
    assert!(svg.contains("window unknown: pass --window N"));
    assert_eq!(
        attr(&svg, r#"class="marker reset""#, "data-x").map(|x| x.parse::<f64>().unwrap()),
        Some(expected_marker_x(2, 3))
    );
    let o = relay(&["timeline", LEXER, "-o", "x.gif"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(".svg or .png"));
}

#[test]
fn timeline_png_has_the_size_content_and_marker_pixels_where_the_svg_puts_them() {
    let out = temp("timeline-png");
    let png_path = out.join("t.png");
    let o = relay(&[
        "timeline",
        MAIN,
        "-o",
        png_path.to_str().unwrap(),
        "--window",
        "100000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let pixmap = resvg::tiny_skia::Pixmap::load_png(&png_path).unwrap();
    assert_eq!((pixmap.width(), pixmap.height()), (1200, 680));
    let px = |x: u32, y: u32| {
        let p = pixmap.pixel(x, y).unwrap();
        (p.red(), p.green(), p.blue())
    };
    // Not blank: many distinct colours, and the background is white.
    let mut colours = std::collections::HashSet::new();
    for y in (0..680).step_by(4) {
        for x in (0..1200).step_by(4) {
            colours.insert(px(x, y));
        }
    }
    assert!(colours.len() > 20, "{} colours", colours.len());
    assert_eq!(px(5, 5), (255, 255, 255));
    // The handoff marker (#1d4ed8) and the reset marker (#9333ea) are 3 px wide lines centred
    // on their x, from the labels down to the plot's bottom: check mid-plot, away from the
    // threshold lines.
    let y = 480;
    let hx = expected_marker_x(5, 9) as u32;
    let rx = expected_marker_x(8, 9) as u32;
    assert_eq!(px(hx, y), (0x1d, 0x4e, 0xd8));
    assert_eq!(px(hx - 1, y), (0x1d, 0x4e, 0xd8));
    assert_eq!(px(rx, y), (0x93, 0x33, 0xea));
    // Nowhere else on that row is a marker colour.
    for x in 0..1200 {
        if x + 2 >= hx && x <= hx + 2 || x + 2 >= rx && x <= rx + 2 {
            continue;
        }
        let c = px(x, y);
        assert!(
            c != (0x1d, 0x4e, 0xd8) && c != (0x93, 0x33, 0xea),
            "marker colour at x={x}"
        );
    }
}

#[test]
fn timeline_exits_1_for_a_session_without_usage() {
    let dir = temp("timeline-empty");
    let session = dir.join("s.jsonl");
    std::fs::write(
        &session,
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-12-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    )
    .unwrap();
    let png = dir.join("t.png");
    let o = relay(&[
        "timeline",
        session.to_str().unwrap(),
        "-o",
        png.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!png.exists());
}

#[test]
fn timeline_with_five_resets_marks_each_and_keeps_the_crowded_labels_apart() {
    // fixtures/five-resets.jsonl: a real run with five `new_context` resets, two requests per
    // window (the last window one).
    let out = temp("timeline-five");
    let svg_path = out.join("t.svg");
    let o = relay(&[
        "timeline",
        "five-resets.jsonl",
        "-o",
        svg_path.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let xs: Vec<f64> = svg
        .match_indices(r#"<g class="marker reset""#)
        .map(|(i, _)| {
            attr(&svg[i..], r#"class="marker reset""#, "data-x")
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    let want: Vec<f64> = (1..=5).map(|k| expected_marker_x(2 * k, 11)).collect();
    assert_eq!(xs, want);
    // Too close for the full labels in three rows: the compact form, the full one as tooltip.
    let summary = json(&o);
    let first = summary["markers"][0]["window_id"].as_str().unwrap();
    let short = first.rsplit(':').next().unwrap();
    assert!(svg.contains(&format!(">{short} reset</text>")), "{svg}");
    assert!(svg.contains(&format!(
        "<title>→ window {short} · reset · from new_context; dropped "
    )));
    // The labels of one row never overlap: each row's labels are at least a compact label apart.
    let mut rows: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for (i, _) in svg.match_indices(r#"font-weight="bold">"#) {
        let start = svg[..i].rfind("<text").unwrap();
        let y = attr(&svg[start..], "<text", "y").unwrap().to_string();
        let x: f64 = attr(&svg[start..], "<text", "x").unwrap().parse().unwrap();
        rows.entry(y).or_default().push(x);
    }
    assert_eq!(rows.values().map(Vec::len).sum::<usize>(), 5);
    assert!(rows.len() <= 3 && rows.values().any(|xs| xs.len() > 1));
    for xs in rows.values_mut().filter(|xs| xs.len() > 1) {
        xs.sort_by(f64::total_cmp);
        for pair in xs.windows(2) {
            assert!(pair[1] - pair[0] >= 14.0 * 7.4, "{pair:?}");
        }
    }
}

#[test]
fn notes_export_killed_at_any_step_of_a_write_leaves_the_old_file_whole() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::ExitStatusExt;
    let new = "1. parse (done)\n2. test\n";
    for step in [
        "temp-created",
        "temp-written",
        "temp-synced",
        "before-rename",
        "after-rename",
    ] {
        let target = temp("export-crash").join("notes");
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(target.join("plan.md"), "my edits").unwrap();
        let o = Command::new(BIN)
            .args([
                "notes",
                MAIN,
                "--export",
                target.to_str().unwrap(),
                "--force",
            ])
            .current_dir(fixture(""))
            .env("RELAY_TEST_CRASH", format!("{step}:plan.md"))
            .output()
            .unwrap();
        assert_eq!(
            o.status.signal(),
            Some(9),
            "{step}: killed at the step ({})",
            stderr(&o)
        );
        let want = if step == "after-rename" {
            new
        } else {
            "my edits"
        };
        assert_eq!(
            std::fs::read_to_string(target.join("plan.md")).unwrap(),
            want,
            "{step}"
        );
        let mut visible: Vec<String> = std::fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.contains(".tmp."))
            .collect();
        visible.sort();
        assert_eq!(visible, ["plan.md"], "{step}: no half file beside it");
        // Run again without the fault: every note is written whole and private.
        let o = relay(&[
            "notes",
            MAIN,
            "--export",
            target.to_str().unwrap(),
            "--force",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(
            std::fs::read_to_string(target.join("plan.md")).unwrap(),
            new
        );
        let mode = std::fs::metadata(target.join("log/day1.md"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn notes_export_never_follows_a_link_planted_at_a_note_file() {
    let dir = temp("export-link");
    let outside = dir.join("outside.md");
    std::fs::write(&outside, "the user's file").unwrap();
    let target = dir.join("notes");
    std::fs::create_dir_all(&target).unwrap();
    std::os::unix::fs::symlink(&outside, target.join("plan.md")).unwrap();
    for force in [false, true] {
        let mut args = vec!["notes", MAIN, "--export", target.to_str().unwrap()];
        if force {
            args.push("--force");
        }
        let o = relay(&args);
        assert_eq!(o.status.code(), Some(2), "force={force}: {}", stderr(&o));
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            "the user's file"
        );
        assert!(std::fs::symlink_metadata(target.join("plan.md"))
            .unwrap()
            .file_type()
            .is_symlink());
    }
}

/// `relay stats` on the real handoff run: the table as a snapshot, and its JSON totals against
/// the assistant messages' usage summed here from the file.
#[test]
fn stats_counts_each_window_and_sums_the_usage_of_the_file() {
    let o = relay(&["stats", MAIN]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!("stats_main", stdout(&o));
    let ledger = json(&relay(&["stats", MAIN, "--json"]));
    let text = std::fs::read_to_string(fixture(MAIN)).unwrap();
    let (mut requests, mut sums) = (0u64, [0u64; 4]);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["type"] == "message" && v["message"]["role"] == "assistant" {
            requests += 1;
            let u = &v["message"]["usage"];
            for (sum, key) in sums
                .iter_mut()
                .zip(["input", "cacheRead", "cacheWrite", "output"])
            {
                *sum += u[key].as_u64().unwrap_or(0);
            }
        }
    }
    let t = &ledger["totals"];
    assert_eq!(t["requests"], requests);
    assert_eq!(t["windows"], 3);
    assert_eq!(
        [
            &t["tokens"]["input"],
            &t["tokens"]["cache_read"],
            &t["tokens"]["cache_write"],
            &t["tokens"]["output"]
        ],
        sums.map(serde_json::Value::from).each_ref()
    );
    assert_eq!(ledger["windows"][0]["ended"]["kind"], "handoff");
    assert_eq!(ledger["windows"][0]["ended"]["commit"], "budget");
    assert_eq!(ledger["windows"][1]["ended"]["source"], "new_context");
    assert_eq!(ledger["windows"][2]["ended"]["kind"], "open");
}

#[test]
fn stats_of_a_session_without_requests_exits_1() {
    let dir = temp("stats-empty");
    let file = dir.join("empty.jsonl");
    std::fs::write(
        &file,
        "{\"type\":\"session\",\"version\":3,\"id\":\"s-empty\",\"timestamp\":\"T\",\"cwd\":\"/\"}\n\
         {\"type\":\"message\",\"id\":\"u1\",\"parentId\":null,\"timestamp\":\"T\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .unwrap();
    let o = relay(&["stats", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("has no request on its current branch"));
    assert!(stdout(&o).contains("1 window · 0 requests"));
}
