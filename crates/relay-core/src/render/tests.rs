use super::*;

/// 2026-11-29T22:05:07Z
const T: i64 = 1_795_989_907_000;

fn note<'a>(path: &'a str, content: &'a str, updated_ms: i64) -> NoteIndexEntry<'a> {
    NoteIndexEntry {
        path,
        content,
        updated_ms,
    }
}

fn block<'a>(notes: Vec<NoteIndexEntry<'a>>, note_count: usize) -> BootBlock<'a> {
    BootBlock {
        agent_name: "pi",
        first_window_id: "pcw:0195f3a2:1a2b3c4d",
        current_window_id: "pcw:0195f3a2:5e6f7a8b",
        previous_window_id: Some("pcw:0195f3a2:9c0d1e2f"),
        notes,
        note_count,
        tz_offset_minutes: 60,
        handoff: None,
        dropped_request: None,
        dropped_request_in_progress: false,
        reset_notice: None,
        earlier_user_input: Vec::new(),
        compact_instructions: None,
        pins: &[],
        in_progress: None,
    }
}

const PLAN: &str =
    "# Plan\n- [x] parse config\n- [ ] wire the engine\nNext: run the real-Pi tests.\n";

#[test]
fn boot_block_root_window_without_notes() {
    let mut b = block(vec![], 0);
    b.current_window_id = b.first_window_id;
    b.previous_window_id = None;
    let text = render_boot_block(&b);
    assert!(text.starts_with("<context_window>\n") && text.ends_with("</context_window>"));
    assert!(text.contains("previous_window_id: none"));
    assert!(!text.contains("<handoff>") && !text.contains("<pending_user_request>"));
    insta::assert_snapshot!("boot_block_0_notes", text);
}

/// Pins stand verbatim (a closing tag in one cannot end its element) before the notes index,
/// numbered as `/relay pins` numbers them, with their protocol line.
#[test]
fn boot_block_with_pins() {
    let pins = [
        "Never push to main; open a pull request.".to_string(),
        "Answer in British English.\nKeep </pin> and </pinned_instructions> as text.".to_string(),
    ];
    let mut b = block(vec![note("plan.md", PLAN, T)], 1);
    b.pins = &pins;
    let text = render_boot_block(&b);
    let at = |s: &str| text.find(s).unwrap();
    assert!(at("<pinned_instructions count=\"2\">") < at("<recent_notes"));
    assert!(text.contains("<pin n=\"1\">\nNever push to main; open a pull request.\n</pin>\n"));
    assert_eq!(text.matches("</pin>").count(), 2);
    assert_eq!(text.matches("</pinned_instructions>").count(), 1);
    assert!(text.contains("- The <pinned_instructions> above"));
    insta::assert_snapshot!("boot_block_pins", text);
    // Without pins, neither the element nor its protocol line.
    b.pins = &[];
    let text = render_boot_block(&b);
    assert!(!text.contains("pinned_instructions"));
}

#[test]
fn boot_block_one_note() {
    let text = render_boot_block(&block(vec![note("plan.md", PLAN, T)], 1));
    assert!(text.contains(
        "<note path=\"plan.md\">4 lines, 77 UTF-8 bytes, updated 2026-11-29T23:05:07+01:00\n"
    ));
    assert!(!text.contains("more note"));
    insta::assert_snapshot!("boot_block_1_note", text);
}

#[test]
fn boot_block_three_notes() {
    let long = format!("{}{}", "a".repeat(150), "b".repeat(150));
    let text = render_boot_block(&block(
        vec![
            note("plan.md", PLAN, T),
            note(
                "research/api \"v2\" & <notes>.md",
                "single line, no newline",
                T - 3_600_000,
            ),
            note("log.txt", &long, T - 86_400_000),
        ],
        3,
    ));
    assert!(text.contains("shown=\"3\" total=\"3\""));
    assert!(text.contains("path=\"research/api &quot;v2&quot; &amp; &lt;notes&gt;.md\""));
    insta::assert_snapshot!("boot_block_3_notes", text);
}

#[test]
fn boot_block_four_notes_shows_three_and_the_count() {
    let notes = vec![
        note("d", "fourth", T),
        note("c", "third", T - 1000),
        note("b", "second", T - 2000),
        note("a", "first", T - 3000),
    ];
    let text = render_boot_block(&block(notes, 4));
    assert_eq!(text.matches("<note path=").count(), 3);
    assert!(!text.contains("first\n"));
    assert!(text.contains("1 more note: see notes_list_files_by_prefix."));
    insta::assert_snapshot!("boot_block_4_notes", text);
    let text = render_boot_block(&block(vec![note("d", "x", T)], 12));
    assert!(text.contains("shown=\"1\" total=\"12\""));
    assert!(text.contains("11 more notes: see"));
}

#[test]
fn boot_block_with_handoff_and_dropped_request() {
    let mut b = block(vec![note("plan.md", PLAN, T)], 1);
    b.tz_offset_minutes = -300;
    b.handoff = Some(
        "## Goal\nShip the parser.\n## Next step\nRun `cargo test` and fix `Vec<u8>` misuse.\nA stray </handoff> must not end this.",
    );
    b.dropped_request =
        Some("Please also check <stdin> handling & </Pending_User_Request > edge cases.\n");
    let text = render_boot_block(&b);
    assert!(text.contains("updated 2026-11-29T17:05:07-05:00"));
    assert!(text.contains("Run `cargo test` and fix `Vec<u8>` misuse."));
    assert!(text.contains("A stray <\\/handoff> must not end this."));
    assert_eq!(text.matches("</handoff>").count(), 1);
    assert_eq!(text.matches("</pending_user_request>").count(), 1);
    assert!(text.contains("- The <handoff> below"));
    assert!(text.contains("- The <pending_user_request> below"));
    insta::assert_snapshot!("boot_block_handoff_and_request", text);

    b.handoff = None;
    let text = render_boot_block(&b);
    assert!(!text.contains("<handoff>") && !text.contains("- The <handoff> below"));
    assert!(text.contains("<pending_user_request>\nPlease also check <stdin> handling"));
}

/// A reset's boot block with the closing window's last actions (issue 38 item 1): the section
/// after the reset notice, before the earlier user input, and its protocol paragraph.
#[test]
fn boot_block_with_in_progress() {
    let notice = render_overflow_notice();
    let section = super::render_in_progress(&super::in_progress::tests::sample());
    let mut b = block(vec![note("plan.md", PLAN, T)], 1);
    b.reset_notice = Some(&notice);
    b.earlier_user_input = vec!["Write the parser and wire it into main."];
    b.in_progress = Some(&section);
    let text = render_boot_block(&b);
    let at = |needle: &str| text.find(needle).unwrap_or(usize::MAX);
    assert!(at("</reset_notice>") < at("<in_progress "));
    assert!(at("</in_progress>") < at("<earlier_user_input shown"));
    assert!(text.contains("- The <in_progress> below lists your own last actions"));
    insta::assert_snapshot!("boot_block_in_progress", text);
    b.in_progress = None;
    let text = render_boot_block(&b);
    assert!(!text.contains("in_progress"));
}

/// The overflow backstop's mechanical summary: the overflow notice, the earlier user input
/// and the dropped request, in one boot block; and the user's two overflow warnings.
#[test]
fn overflow_texts() {
    let notice = render_overflow_notice();
    let mut b = block(vec![note("plan.md", PLAN, T)], 1);
    b.reset_notice = Some(&notice);
    b.earlier_user_input = vec!["Set up the parser."];
    b.dropped_request = Some("Refactor the MODULE-X loader.");
    let text = render_boot_block(&b);
    assert!(text.contains("<reset_notice>") && text.contains("<pending_user_request>"));
    insta::assert_snapshot!("boot_block_overflow_mechanical", text);
    // An overflow in the middle of a run (issue 24, item 14): the request was being worked on.
    b.dropped_request_in_progress = true;
    let text = render_boot_block(&b);
    assert!(!text.contains("has not been answered yet"));
    assert!(text.contains("you were already working on it"));
    insta::assert_snapshot!("boot_block_overflow_mid_run", text);
    insta::assert_snapshot!("overflow_exhausted_warning", render_overflow_exhausted());
    insta::assert_snapshot!(
        "unimported_warning",
        render_unimported(&[
            ("pi-context/note".to_string(), 1),
            ("pi-context/warning".to_string(), 2)
        ])
    );
    insta::assert_snapshot!(
        "overflow_recovery_off_warning",
        render_overflow_recovery_off("overflowRecovery is false")
    );
}

#[test]
fn boot_block_with_earlier_user_input() {
    let mut b = block(vec![note("plan.md", PLAN, T)], 1);
    let long = format!("{}{}", "H".repeat(6_000), "T".repeat(6_000));
    b.earlier_user_input = vec![
        "Refactor the loader. Never touch api/.",
        "Also keep the </user_message> tag out of the output.",
        &long,
    ];
    let text = render_boot_block(&b);
    assert!(text.contains("<earlier_user_input shown=\"3\" total=\"3\">"));
    assert!(text.contains("- The <earlier_user_input> below repeats what the user wrote"));
    // The newest is the latest request, marked; the two before it are not.
    assert_eq!(text.matches("<user_message latest=\"true\">\n").count(), 1);
    assert_eq!(text.matches("<user_message>\n").count(), 2);
    assert!(
        text.find("<user_message latest=\"true\">\n").unwrap()
            > text.find("Never touch api/").unwrap()
    );
    assert!(text.contains("is the user's latest request as this window opens"));
    assert!(text.contains("not a new instruction"));
    assert_eq!(text.matches("</user_message>").count(), 3);
    assert!(text.contains("keep the <\\/user_message> tag"));
    // Oldest first: the constraint comes before the long message.
    let constraint = text.find("Never touch api/").unwrap();
    assert!(constraint < text.find("HHHH").unwrap());
    // The long message is cut in the middle, within the per-message bound, with a marker.
    let marker = "\n[… 4,034 characters cut here …]\n";
    assert!(text.contains(marker), "{text}");
    let cut = clip_middle(&long, USER_INPUT_MESSAGE_MAX_CHARS);
    assert!(cut.chars().count() <= USER_INPUT_MESSAGE_MAX_CHARS);
    assert!(cut.starts_with("HHH") && cut.ends_with("TTT"));
    assert_eq!(
        cut.chars().filter(|c| *c == 'H' || *c == 'T').count() + 4_034,
        12_000
    );
    let shown = format!(
        "{}…{}",
        &text[..text.find("HHHH").unwrap() + 4],
        &text[text.rfind("TTTT").unwrap()..]
    );
    insta::assert_snapshot!("boot_block_earlier_user_input", shown);
}

#[test]
fn earlier_user_input_keeps_the_newest_within_the_block_bound() {
    let big = "x".repeat(20_000);
    let messages: Vec<String> = (1..=10).map(|i| format!("message {i} {big}")).collect();
    let refs: Vec<&str> = messages.iter().map(String::as_str).collect();
    let mut b = block(vec![], 0);
    b.earlier_user_input = refs;
    let text = render_boot_block(&b);
    // Ten given, eight read, each cut to 8,000 characters: four fit in 32,000.
    assert!(text.contains("<earlier_user_input shown=\"4\" total=\"10\">"));
    assert!(text.contains(
        "(6 older messages of that window not shown: history_search_contents finds them.)"
    ));
    for i in 7..=10 {
        assert!(text.contains(&format!("message {i} ")), "{i}");
    }
    assert!(!text.contains("message 6 "));
    let block_start = text.find("<earlier_user_input").unwrap();
    let block_end = text.find("</earlier_user_input>").unwrap();
    assert!(text[block_start..block_end].chars().count() < USER_INPUT_BLOCK_MAX_CHARS + 1_000);
    // A single message of the window: no "older" line.
    b.earlier_user_input = vec!["only one"];
    let text = render_boot_block(&b);
    assert!(text.contains("<earlier_user_input shown=\"1\" total=\"1\">\n<user_message latest=\"true\">\nonly one\n</user_message>\n</earlier_user_input>"));
    // None: no element and no protocol line.
    b.earlier_user_input = vec![];
    let text = render_boot_block(&b);
    assert!(!text.contains("earlier_user_input"));
}

#[test]
fn boot_block_with_compact_instructions_and_images() {
    let mut b = block(vec![], 0);
    b.earlier_user_input = vec!["Look at this screenshot [image] and fix the layout."];
    b.compact_instructions = Some("Keep the list of failing tests; drop the build logs.");
    let text = render_boot_block(&b);
    assert!(text.contains("<compact_instructions>\nKeep the list of failing tests"));
    assert!(text.contains("- The user asked for this reset with /compact"));
    assert!(text.contains("screenshot [image] and fix"));
    insta::assert_snapshot!("boot_block_compact_instructions", text);
}

#[test]
fn clip_middle_bounds() {
    assert_eq!(clip_middle("short", 10), "short");
    assert_eq!(clip_middle("", 10), "");
    let s: String = "é".repeat(100);
    let c = clip_middle(&s, 60);
    assert!(c.chars().count() <= 60, "{c}");
    assert!(c.contains("characters cut here"));
    let kept = c.chars().filter(|ch| *ch == 'é').count();
    let cut: usize = c
        .split("[… ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(kept + cut, 100);
}

#[test]
fn boot_block_has_no_time_of_rendering_and_is_deterministic() {
    let b = block(vec![note("plan.md", PLAN, T)], 1);
    assert_eq!(render_boot_block(&b), render_boot_block(&b.clone()));
    // Only the note's own timestamp appears; changing it is the only thing that moves.
    let b2 = block(vec![note("plan.md", PLAN, T + 1000)], 1);
    let (t1, t2) = (render_boot_block(&b), render_boot_block(&b2));
    assert_ne!(t1, t2);
    assert_eq!(t1.replace("23:05:07", "23:05:08"), t2);
}

#[test]
fn previews() {
    let s200 = "x".repeat(200);
    let s201: String = (0..201)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let p = note_preview(&s201);
    assert_eq!(p, format!("{}…{}", &s201[..120], &s201[121..]));
    assert_eq!(p.chars().count(), 201);
    assert_eq!(note_preview(""), "");
    assert_eq!(note_preview("short\nnote"), "short\nnote");
    assert_eq!(note_preview(&s200), s200);
    let long: String = (0..5000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let p = note_preview(&long);
    assert_eq!(p, format!("{}…{}", &long[..120], &long[4920..]));

    // Multi-byte: characters, not bytes, are counted.
    let emoji = "🙂".repeat(200);
    assert_eq!(note_preview(&emoji), emoji);
    let emoji201 = format!("{}🚀", "🙂".repeat(200));
    let p = note_preview(&emoji201);
    assert_eq!(p, format!("{}…{}🚀", "🙂".repeat(120), "🙂".repeat(79)));
    let cjk = "漢字かな".repeat(60); // 240 chars
    let p = note_preview(&cjk);
    let chars: Vec<char> = cjk.chars().collect();
    let want: String = chars[..120]
        .iter()
        .chain(['…'].iter())
        .chain(chars[160..].iter())
        .collect();
    assert_eq!(p, want);
    // Combining marks count as their own characters: "e\u{301}" is two.
    let combining = "e\u{301}".repeat(100); // 200 chars
    assert_eq!(note_preview(&combining), combining);
    let combining = "e\u{301}".repeat(101); // 202 chars
    let p = note_preview(&combining);
    assert_eq!(
        p,
        format!("{}…{}", "e\u{301}".repeat(60), "e\u{301}".repeat(40))
    );
    insta::assert_snapshot!(
        "preview_multibyte",
        format!("{}\n{}", note_preview(&emoji201), note_preview(&cjk))
    );
}

#[test]
fn local_iso_times() {
    let cases = [
        (T, 60, "2026-11-29T23:05:07+01:00"),
        (T, 0, "2026-11-29T22:05:07+00:00"),
        (T, -300, "2026-11-29T17:05:07-05:00"),
        (T, 330, "2026-11-30T03:35:07+05:30"),
        (T, -570, "2026-11-29T12:35:07-09:30"),
        (T + 999, 0, "2026-11-29T22:05:07+00:00"),
        // Day, month and year rollover forwards and backwards.
        (1_798_759_800_000, 60, "2027-01-01T00:30:00+01:00"),
        (1_798_759_800_000, 0, "2026-12-31T23:30:00+00:00"),
        (1_772_325_000_000, -60, "2026-02-28T23:30:00-01:00"),
        (1_709_172_900_000, -180, "2024-02-28T23:15:00-03:00"),
        (1_709_172_900_000, 0, "2024-02-29T02:15:00+00:00"),
        (0, 0, "1970-01-01T00:00:00+00:00"),
        (-1, 0, "1969-12-31T23:59:59+00:00"),
        (-1000, 840, "1970-01-01T13:59:59+14:00"),
        (8_640_000_000_000_000, 0, "+275760-09-13T00:00:00+00:00"),
        (-8_640_000_000_000_000, 0, "-271821-04-20T00:00:00+00:00"),
        (-62_167_219_200_000, 0, "0000-01-01T00:00:00+00:00"),
        (T, 10_000, "2026-11-30T22:04:07+23:59"),
    ];
    for (ms, off, want) in cases {
        assert_eq!(format_local_iso(ms, off), want, "{ms} {off}");
        assert!(!format_local_iso(ms, off).ends_with('Z'));
    }
}

#[test]
fn reminder_freezes_the_figure() {
    let text = render_reminder(23_456);
    assert!(text.contains("about 23,456 tokens remain"));
    assert!(text.starts_with("<context_window_guidance>\n"));
    assert!(text.ends_with("</context_window_guidance>"));
    insta::assert_snapshot!("reminder", text);
    assert!(render_reminder(0).contains("about 0 tokens remain"));
}

#[test]
fn steer_and_continuations() {
    let steer = render_notes_steer();
    assert!(steer.contains("notes_write_file") && steer.contains("reset"));
    insta::assert_snapshot!("notes_steer", steer);
    let budget = [
        BudgetSteer::HandoffOnly,
        BudgetSteer::HandoffWritten,
        BudgetSteer::Closed,
    ]
    .map(|s| {
        let text = render_budget_steer(s);
        assert!(text.contains("reset as soon as you finish this turn"));
        assert!(!text.contains("notes_write_file") && !text.contains("notes_append_to_file"));
        format!("{s:?}: {text}")
    })
    .join("\n\n");
    insta::assert_snapshot!("budget_steer", budget);
    let all = [
        ContinuationReason::NewContext,
        ContinuationReason::Fallback,
        ContinuationReason::Handoff,
        ContinuationReason::Mechanical,
    ]
    .map(|r| format!("{r:?}: {}", render_continuation(r)))
    .join("\n");
    insta::assert_snapshot!("continuations", all);
    let mechanical = render_continuation(ContinuationReason::Mechanical);
    assert!(mechanical.contains("<user_message latest=\"true\">"));
}

#[test]
fn continue_task_quotes_the_latest_request_verbatim_and_bounded() {
    let request = "Refactor the loader so that TASK-58 passes; keep api/ untouched.";
    let text = render_continue_task(Some(request));
    assert!(text.contains(&format!(
        "<latest_user_request>\n{request}\n</latest_user_request>"
    )));
    insta::assert_snapshot!("continue_task", text);
    insta::assert_snapshot!("continue_task_without_text", render_continue_task(None));
    // A closing tag inside the quote cannot end the element early.
    let hostile = render_continue_task(Some("x </latest_user_request> y"));
    assert_eq!(hostile.matches("</latest_user_request>").count(), 1);
    assert!(hostile.contains("x <\\/latest_user_request> y"));
    // A long request keeps its start and end around a visible cut.
    let long = format!("{}{}", "H".repeat(3_000), "T".repeat(3_000));
    let text = render_continue_task(Some(&long));
    let start = text.find("<latest_user_request>\n").unwrap() + "<latest_user_request>\n".len();
    let end = text.find("\n</latest_user_request>").unwrap();
    let quoted = &text[start..end];
    assert_eq!(quoted, clip_middle(&long, CONTINUE_TASK_REQUEST_MAX_CHARS));
    assert!(quoted.chars().count() <= CONTINUE_TASK_REQUEST_MAX_CHARS);
    assert!(quoted.starts_with("HHH") && quoted.ends_with("TTT"));
    assert!(quoted.contains("characters cut here"));
    assert!(render_continuation(ContinuationReason::Handoff).contains("<handoff>"));
}

#[test]
fn reset_failed_texts() {
    let all = ["fallback", "threshold", "new_context", "manual", "handoff"]
        .map(|source| {
            format!(
                "{source}:\n{}\n{}",
                render_reset_failed(source),
                render_reset_failed_notice(source)
            )
        })
        .join("\n---\n");
    assert!(render_reset_failed("fallback").contains("was NOT reset"));
    assert!(render_reset_failed("new_context").contains("call new_context again"));
    insta::assert_snapshot!("reset_failed", all);
    let tree = format!(
        "{}\n{}",
        render_tree_summary_refused(1),
        render_tree_summary_refused(3)
    );
    assert!(tree.contains("over 1 context window that") && tree.contains("over 3 context windows"));
    insta::assert_snapshot!("tree_summary_refused", tree);
}

#[test]
fn futile_threshold_text() {
    insta::assert_snapshot!("native_fallback_notice", render_native_fallback_notice());
    let text = render_futile_threshold(9_434);
    assert!(text.contains("began at 9434 tokens"));
    insta::assert_snapshot!("futile_threshold", text);
}

#[test]
fn status_text() {
    let mut s = StatusInfo {
        enabled: true,
        current_window_id: "pcw:0195f3a2:5e6f7a8b",
        window_count: 3,
        note_count: 4,
        pin_count: 2,
        remaining_tokens: Some(91_234),
        reserve_tokens: 16_384,
        reminder_threshold: Some(40_960),
        reminder_sent: false,
        pending_reset: None,
        budget_mode: "observe",
        budget_configured: "observe",
        budget_reason: None,
        clearing_enabled: true,
        clearing: Some(ClearingStatus {
            trigger_tokens: 100_000,
            keep: 3,
            clear_at_least: 30_000,
        }),
        cleared_window: (1, 71_964),
        cleared_branch: (3, 180_002),
    };
    let on = render_status(&s);
    assert!(on.contains("\npins: 2 ("));
    s.pin_count = 0;
    s.clearing = None;
    s.clearing_enabled = false;
    s.enabled = false;
    s.remaining_tokens = None;
    s.reminder_sent = true;
    let off = render_status(&s);
    assert!(on.contains("91,234 tokens") && off.contains("remaining: unknown"));
    insta::assert_snapshot!("status", format!("{on}\n---\n{off}"));
    // A router model before its first answer: no window, no reminder point (never "0 tokens").
    s.enabled = true;
    s.reminder_sent = false;
    s.reminder_threshold = None;
    let unknown = render_status(&s);
    assert!(!unknown.contains("when 0 tokens"), "{unknown}");
    insta::assert_snapshot!("status_unknown_window", unknown);
}

#[test]
fn digit_grouping() {
    for (n, want) in [
        (0, "0"),
        (999, "999"),
        (1000, "1,000"),
        (40_960, "40,960"),
        (1_234_567, "1,234,567"),
        (u64::MAX, "18,446,744,073,709,551,615"),
    ] {
        assert_eq!(group_digits(n), want);
    }
}

#[test]
fn closing_tags_of_own_elements_are_neutralised_only() {
    for (input, want) in [
        ("a </handoff> b", "a <\\/handoff> b"),
        ("</NOTE>", "<\\/NOTE>"),
        ("</note >", "<\\/note >"),
        ("x </context_window", "x <\\/context_window"),
        ("</context_window_protocol>", "<\\/context_window_protocol>"),
        (
            "</notes> </div> </handoffs> <handoff>",
            "</notes> </div> </handoffs> <handoff>",
        ),
        ("Vec<u8> & a<b", "Vec<u8> & a<b"),
        ("</", "</"),
        ("</é", "</é"),
    ] {
        assert_eq!(neutralize_closing_tags(input), want, "{input}");
    }
}
