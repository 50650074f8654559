//! Decoding, the one error format, the schemas, and the checked-in schema file.

use super::*;
use serde_json::json;

fn ok<T: ToolArgs>(args: Value) -> T {
    match decode::<T>(T::TOOL, &args) {
        Ok(t) => t,
        Err(e) => panic!("{args} rejected: {}", e.text),
    }
}

fn err<T: ToolArgs + std::fmt::Debug>(args: Value) -> String {
    let out = decode::<T>(T::TOOL, &args).expect_err("an argument error");
    assert!(out.is_error);
    out.text
}

#[test]
fn absent_and_null_arguments_take_the_defaults() {
    for args in [
        Value::Null,
        json!({}),
        json!({"limit": null, "recent_first": null, "role": null}),
    ] {
        let a: HistoryListItems = ok(args);
        assert_eq!(a.limit.0, crate::history::DEFAULT_LIST_ITEMS_LIMIT);
        assert_eq!(
            a.max_chars_per_item.0,
            crate::history::DEFAULT_MAX_CHARS_PER_ITEM
        );
        assert!(a.recent_first.0);
        assert!(a.window_id.is_none() && a.role.is_none());
    }
    let a: HistoryReadItem = ok(json!({"window_id": "w", "item_id": "i"}));
    assert_eq!(
        (a.offset_chars.0, a.limit_chars.0),
        (0, crate::history::DEFAULT_READ_LIMIT_CHARS)
    );
    let a: HistoryListWindows = ok(json!({}));
    assert!(a.limit.is_none() && a.recent_first.0);
    let a: HistorySearchContents = ok(json!({"query": " "}));
    assert_eq!(a.limit.0, crate::history::DEFAULT_SEARCH_LIMIT);
    let a: NotesListFilesByPrefix = ok(Value::Null);
    assert_eq!(
        (a.prefix.0.as_str(), a.limit.0 as u64),
        ("", crate::notes::DEFAULT_LIST_LIMIT)
    );
    let a: NotesSearchContents = ok(json!({"query": "q", "path_prefix": null}));
    assert_eq!(
        (a.path_prefix.0.as_str(), a.limit.0 as u64),
        ("", crate::notes::DEFAULT_SEARCH_LIMIT)
    );
    let a: NotesReadFile = ok(json!({"path": "p"}));
    assert_eq!((a.start_line.0, a.end_line.0), (1, -1));
    let a: ContextHandoff =
        ok(json!({"goal": "g", "next_step": "n", "facts": "f", "files_to_read": null}));
    assert!(a.files_to_read.0.is_empty() && a.decisions.is_none());
    let _: NewContext = ok(Value::Null);
    let _: GetContextRemaining = ok(json!({}));
}

#[test]
fn values_are_read_as_given() {
    let a: HistoryListItems = ok(json!({
        "window_id": "pcw:s:1", "role": "tool", "tool_namespace": "", "tool_name": "read",
        "limit": 2.0, "recent_first": false, "max_chars_per_item": 7
    }));
    assert_eq!(a.window_id, Some(Text("pcw:s:1".into())));
    assert_eq!(a.role, Some(RoleName("tool".into())));
    assert_eq!(a.tool_namespace, Some(Text(String::new())));
    assert_eq!(
        (a.limit.0, a.recent_first.0, a.max_chars_per_item.0),
        (2, false, 7)
    );
    // Integers: integral floats count; beyond usize saturates; line numbers are signed.
    let a: HistoryListWindows = ok(json!({"limit": u64::MAX}));
    assert_eq!(a.limit, Some(PositiveInt(usize::MAX)));
    let a: HistoryListWindows = ok(json!({"limit": 1e300}));
    assert_eq!(a.limit, Some(PositiveInt(usize::MAX)));
    let a: NotesReadFile = ok(json!({"path": "p", "start_line": -3.0, "end_line": 9}));
    assert_eq!((a.start_line.0, a.end_line.0), (-3, 9));
    let a: ContextHandoff = ok(json!({
        "goal": " g ", "next_step": "n", "facts": "f", "files_to_read": ["/a", "b c"], "hypotheses": ""
    }));
    assert_eq!(a.goal.0, " g ");
    assert_eq!(a.files_to_read.0, ["/a", "b c"]);
    assert_eq!(a.hypotheses, Some(Text(String::new())));
}

#[test]
fn one_error_format() {
    let cases: Vec<(String, &str)> = vec![
        (
            err::<HistoryReadItem>(json!({"window_id": "w", "item_id": "i", "foo": 1})),
            r#"history_read_item: unknown argument "foo" (accepted: window_id, item_id, offset_chars, limit_chars)"#,
        ),
        (
            err::<NewContext>(json!({"reason": "full"})),
            r#"new_context: unknown argument "reason" (this tool takes no arguments)"#,
        ),
        (
            err::<HistoryReadItem>(json!({"item_id": "i"})),
            r#"history_read_item: argument "window_id" is required"#,
        ),
        (
            err::<HistoryListItems>(json!({"limit": "x"})),
            r#"history_list_items: argument "limit" must be a positive integer, got "x""#,
        ),
        (
            err::<HistoryReadItem>(json!({"window_id": "w", "item_id": "i", "offset_chars": -1})),
            r#"history_read_item: argument "offset_chars" must be a non-negative integer, got -1"#,
        ),
        (
            err::<HistoryListWindows>(json!({"recent_first": 1})),
            r#"history_list_windows: argument "recent_first" must be true or false, got 1"#,
        ),
        (
            err::<NotesReadFile>(json!({"path": "p", "start_line": 1e19})),
            r#"notes_read_file: argument "start_line" must be an integer, got 1e+19"#,
        ),
        (
            err::<NotesSearchContents>(json!({"query": ""})),
            r#"notes_search_contents: argument "query" must not be empty"#,
        ),
        (
            err::<ContextHandoff>(json!({"goal": "\n", "next_step": "n", "facts": "f"})),
            r#"context_handoff: argument "goal" must not be empty"#,
        ),
        (
            err::<ContextHandoff>(
                json!({"goal": "g", "next_step": "n", "facts": "f", "files_to_read": [null]}),
            ),
            r#"context_handoff: argument "files_to_read[0]" must be a string path, got null"#,
        ),
        (
            err::<HistorySearchContents>(json!({"query": "q", "role": "User"})),
            r#"history_search_contents: argument "role" must be one of "user", "assistant", "tool", "system", got "User""#,
        ),
        (
            err::<NotesWriteFile>(json!(true)),
            "notes_write_file: arguments must be an object, got true",
        ),
        (
            err::<NotesWriteFile>(json!({"path": "p", "content": {"text": "x".repeat(100)}})),
            r#"notes_write_file: argument "content" must be a string, got {"text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…"#,
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
    // The first problem in argument order is the one reported.
    assert_eq!(
        err::<HistoryListItems>(json!({"recent_first": "no", "limit": 0})),
        r#"history_list_items: argument "recent_first" must be true or false, got "no""#
    );
    // The tool name given to `decode` is the one the error names.
    let out =
        decode::<NotesAppendToFile>("notes_append_to_file", &json!({"path": 1, "content": "x"}));
    assert_eq!(
        out.map(|_| ()).unwrap_err().text,
        r#"notes_append_to_file: argument "path" must be a string, got 1"#
    );
    assert_eq!(
        invalid("t", "a", "is wrong").text,
        r#"t: argument "a" is wrong"#
    );
}

#[test]
fn schemas_cover_every_tool_in_registration_order() {
    let schemas = parameter_schemas();
    let names: Vec<&str> = schemas
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, TOOL_NAMES);
    let registered: Vec<&str> = crate::engine::tool_specs().iter().map(|s| s.name).collect();
    assert_eq!(
        names, registered,
        "every registered tool has its parameters here"
    );
}

#[test]
fn schemas_are_plain_closed_objects_that_agree_with_the_decoder() {
    let schemas = parameter_schemas();
    let names_of = |tool: &str| -> &'static Names {
        match tool {
            HISTORY_LIST_WINDOWS => HistoryListWindows::names(),
            HISTORY_LIST_ITEMS => HistoryListItems::names(),
            HISTORY_READ_ITEM => HistoryReadItem::names(),
            HISTORY_SEARCH_CONTENTS => HistorySearchContents::names(),
            NOTES_LIST_FILES_BY_PREFIX => NotesListFilesByPrefix::names(),
            NOTES_READ_FILE => NotesReadFile::names(),
            NOTES_SEARCH_CONTENTS => NotesSearchContents::names(),
            NOTES_APPEND_TO_FILE => NotesAppendToFile::names(),
            NOTES_WRITE_FILE => NotesWriteFile::names(),
            NEW_CONTEXT => NewContext::names(),
            CONTEXT_HANDOFF => ContextHandoff::names(),
            GET_CONTEXT_REMAINING => GetContextRemaining::names(),
            MEMORY => Memory::names(),
            other => panic!("no parameters for {other}"),
        }
    };
    for (tool, schema) in schemas.as_object().unwrap() {
        let obj = schema.as_object().unwrap();
        let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        assert!(
            keys.iter()
                .all(|k| ["type", "properties", "required", "additionalProperties"].contains(k)),
            "{tool}: {keys:?}"
        );
        assert_eq!(obj["type"], "object");
        assert_eq!(obj["additionalProperties"], false);
        let properties = obj["properties"].as_object().unwrap();
        let names = names_of(tool);
        assert_eq!(
            properties.keys().cloned().collect::<Vec<_>>(),
            names.accepted,
            "{tool}"
        );
        let required: Vec<String> = obj
            .get("required")
            .map(|r| serde_json::from_value(r.clone()).unwrap())
            .unwrap_or_default();
        assert_eq!(required, names.required, "{tool}");
        for (name, p) in properties {
            let p = p.as_object().unwrap();
            // A parameter whose name says it all has no description (each costs every request).
            let description = p.get("description").and_then(Value::as_str);
            assert!(
                description.is_none_or(|d| d.ends_with('.')),
                "{tool}.{name}: {description:?}"
            );
            assert!(
                !p.contains_key("default"),
                "{tool}.{name}: said in the description"
            );
            assert!(
                ["string", "integer", "boolean", "array"].contains(&p["type"].as_str().unwrap())
            );
            assert!(
                !p.contains_key("anyOf") && !p.contains_key("$ref") && !p.contains_key("format")
            );
            assert!(!p
                .get("enum")
                .is_some_and(|e| e.as_array().unwrap().contains(&Value::Null)));
            let stated = description
                .and_then(|d| d.rsplit_once(" Default: "))
                .and_then(|(_, d)| d.strip_suffix('.'));
            if let Some(stated) = stated {
                let default: Value = serde_json::from_str(stated).unwrap();
                // The stated default is what the decoder fills in.
                let decoded_default = ok_any(tool, json!({ name.as_str(): default.clone() }));
                assert_eq!(decoded_default, ok_any(tool, json!({})), "{tool}.{name}");
            }
        }
    }
}

/// Decodes the arguments of a tool that has no required parameter, as its `Debug` text.
fn ok_any(tool: &str, args: Value) -> String {
    fn dbg<T: ToolArgs + std::fmt::Debug>(tool: &str, args: &Value) -> String {
        match decode::<T>(tool, args) {
            Ok(t) => format!("{t:?}"),
            Err(e) => e.text,
        }
    }
    let with_required = |mut args: Value, required: &[(&str, Value)]| {
        for (k, v) in required {
            args[*k] = v.clone();
        }
        args
    };
    match tool {
        HISTORY_LIST_WINDOWS => dbg::<HistoryListWindows>(tool, &args),
        HISTORY_LIST_ITEMS => dbg::<HistoryListItems>(tool, &args),
        HISTORY_READ_ITEM => dbg::<HistoryReadItem>(
            tool,
            &with_required(args, &[("window_id", json!("w")), ("item_id", json!("i"))]),
        ),
        HISTORY_SEARCH_CONTENTS => {
            dbg::<HistorySearchContents>(tool, &with_required(args, &[("query", json!("q"))]))
        }
        NOTES_LIST_FILES_BY_PREFIX => dbg::<NotesListFilesByPrefix>(tool, &args),
        NOTES_READ_FILE => {
            dbg::<NotesReadFile>(tool, &with_required(args, &[("path", json!("p"))]))
        }
        NOTES_SEARCH_CONTENTS => {
            dbg::<NotesSearchContents>(tool, &with_required(args, &[("query", json!("q"))]))
        }
        CONTEXT_HANDOFF => dbg::<ContextHandoff>(
            tool,
            &with_required(
                args,
                &[
                    ("goal", json!("g")),
                    ("next_step", json!("n")),
                    ("facts", json!("f")),
                ],
            ),
        ),
        other => panic!("no defaults expected for {other}"),
    }
}

/// The checked-in `extension/src/generated/tool-params.json` is exactly what
/// [`parameter_schemas`] gives. Regenerate it with
/// `UPDATE_GENERATED=1 cargo test -p relay-core generated`.
#[test]
fn generated_tool_params_file_is_current() {
    let want = format!(
        "{}\n",
        serde_json::to_string_pretty(&parameter_schemas()).unwrap()
    );
    crate::test_support::check_generated(
        "../../extension/src/generated/tool-params.json",
        &want,
        "the tool parameters in crates/relay-core/src/args.rs changed. \
         Regenerate it with `UPDATE_GENERATED=1 cargo test -p relay-core generated` and commit it.",
    );
}

/// Codex-style names: each alias is accepted as its parameter (decoded and prepared alike).
#[test]
fn codex_style_aliases_are_accepted_as_their_parameters() {
    let cases: &[(&str, Value, Value)] = &[
        (
            NOTES_READ_FILE,
            json!({"file_path": "plan.md", "offset": 3}),
            json!({"path": "plan.md", "start_line": 3}),
        ),
        (
            NOTES_WRITE_FILE,
            json!({"file_path": "a.md", "content": "x"}),
            json!({"path": "a.md", "content": "x"}),
        ),
        (
            NOTES_APPEND_TO_FILE,
            json!({"file_path": "a.md", "content": "x"}),
            json!({"path": "a.md", "content": "x"}),
        ),
        (
            NOTES_LIST_FILES_BY_PREFIX,
            json!({"dir_path": "plan/"}),
            json!({"prefix": "plan/"}),
        ),
        (
            NOTES_LIST_FILES_BY_PREFIX,
            json!({"path": "plan/"}),
            json!({"prefix": "plan/"}),
        ),
        (
            NOTES_LIST_FILES_BY_PREFIX,
            json!({"path_prefix": "plan/"}),
            json!({"prefix": "plan/"}),
        ),
        (
            NOTES_SEARCH_CONTENTS,
            json!({"pattern": "TODO", "path": "plan/"}),
            json!({"query": "TODO", "path_prefix": "plan/"}),
        ),
        (
            NOTES_SEARCH_CONTENTS,
            json!({"pattern": "TODO", "prefix": "plan/"}),
            json!({"query": "TODO", "path_prefix": "plan/"}),
        ),
        (
            HISTORY_SEARCH_CONTENTS,
            json!({"pattern": "bug"}),
            json!({"query": "bug"}),
        ),
        (
            HISTORY_READ_ITEM,
            json!({"window_id": "w", "item_id": "i", "offset": 5, "limit": 9}),
            json!({"window_id": "w", "item_id": "i", "offset_chars": 5, "limit_chars": 9}),
        ),
        (
            HISTORY_LIST_ITEMS,
            json!({"max_chars": 99}),
            json!({"max_chars_per_item": 99}),
        ),
        // An alias next to its parameter with the same value is fine.
        (
            NOTES_READ_FILE,
            json!({"file_path": "a", "path": "a"}),
            json!({"path": "a"}),
        ),
    ];
    for (tool, given, want) in cases {
        assert_eq!(&prepare(tool, given).unwrap(), want, "{tool} {given}");
    }
    // Decoding takes aliases too.
    let a: NotesReadFile = ok(json!({"file_path": "plan.md", "offset": 2}));
    assert_eq!((a.path.0.as_str(), a.start_line.0), ("plan.md", 2));
    let a: HistoryReadItem = ok(json!({"window_id": "w", "item_id": "i", "offset": 4, "limit": 7}));
    assert_eq!((a.offset_chars.0, a.limit_chars.0), (4, 7));
    let a: NotesSearchContents = ok(json!({"pattern": "q"}));
    assert_eq!(a.query.0, "q");
    // A required parameter given by its alias satisfies the requirement.
    let a: HistorySearchContents = ok(json!({"pattern": "needle"}));
    assert_eq!(a.query.0, "needle");
}

/// Wrong names get an error naming the parameter to use.
#[test]
fn unknown_arguments_name_the_parameter_they_most_likely_meant() {
    let cases: &[(&str, Value, &str)] = &[
        (
            NOTES_READ_FILE,
            json!({"path": "a", "limit": 20}),
            r#"notes_read_file: unknown argument "limit": did you mean "end_line" (the last line to read, inclusive: start_line + limit - 1)? (accepted: path, start_line, end_line, offset_chars)"#,
        ),
        (
            NOTES_READ_FILE,
            json!({"paht": "a"}),
            r#"notes_read_file: unknown argument "paht": did you mean "path"? (accepted: path, start_line, end_line, offset_chars)"#,
        ),
        (
            NOTES_READ_FILE,
            json!({"filepath": "a"}),
            r#"notes_read_file: unknown argument "filepath": did you mean "path"? (accepted: path, start_line, end_line, offset_chars)"#,
        ),
        (
            HISTORY_READ_ITEM,
            json!({"window_id": "w", "item_id": "i", "limit_char": 3}),
            r#"history_read_item: unknown argument "limit_char": did you mean "limit_chars"? (accepted: window_id, item_id, offset_chars, limit_chars)"#,
        ),
        (
            HISTORY_LIST_ITEMS,
            json!({"windowid": "w"}),
            r#"history_list_items: unknown argument "windowid": did you mean "window_id"? (accepted: window_id, role, tool_namespace, tool_name, limit, offset, recent_first, max_chars_per_item)"#,
        ),
        (
            HISTORY_SEARCH_CONTENTS,
            json!({"query": "q", "regex": true}),
            r#"history_search_contents: unknown argument "regex" (accepted: query, window_id, role, tool_namespace, tool_name, limit, offset, recent_first)"#,
        ),
        (
            NOTES_SEARCH_CONTENTS,
            json!({"query": "a", "pattern": "b"}),
            r#"notes_search_contents: arguments "pattern" and "query" are the same parameter with different values; give only "query""#,
        ),
        (
            NEW_CONTEXT,
            json!({"reason": "full"}),
            r#"new_context: unknown argument "reason" (this tool takes no arguments)"#,
        ),
    ];
    for (tool, given, want) in cases {
        let got = prepare(tool, given).expect_err("an error");
        assert!(got.is_error);
        assert_eq!(got.text, *want, "{tool} {given}");
    }
    // The decoder answers the same.
    assert_eq!(
        err::<NotesReadFile>(json!({"path": "a", "limit": 20})),
        prepare(NOTES_READ_FILE, &json!({"path": "a", "limit": 20}))
            .unwrap_err()
            .text
    );
}

/// The schemas list each parameter once, under its own name: no alias is advertised, and a
/// required parameter stays required only under its name.
#[test]
fn schemas_do_not_advertise_aliases() {
    let schemas = parameter_schemas();
    for (tool, alias, parameter) in ALIASES {
        let schema = &schemas[*tool];
        assert!(
            schema["properties"].get(*alias).is_none(),
            "{tool} advertises {alias}"
        );
        assert!(
            schema["properties"].get(*parameter).is_some(),
            "{tool} lacks {parameter}"
        );
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert!(!required.contains(alias), "{tool} requires {alias}");
    }
    // Every alias and hint belongs to a real tool and names a real parameter.
    for (tool, _, parameter) in ALIASES {
        assert!(
            names_of(tool)
                .unwrap()
                .accepted
                .iter()
                .any(|n| n == parameter),
            "{tool}.{parameter}"
        );
    }
    for (tool, _, parameter, _) in HINTS {
        assert!(
            names_of(tool)
                .unwrap()
                .accepted
                .iter()
                .any(|n| n == parameter),
            "{tool}.{parameter}"
        );
    }
    // Arguments that are not an object, and unknown tools, pass unchanged (Pi's validation speaks).
    assert_eq!(prepare(NOTES_READ_FILE, &json!([1])).unwrap(), json!([1]));
    assert_eq!(prepare("bash", &json!({"x": 1})).unwrap(), json!({"x": 1}));
}

/// Fuzzing finding (fuzz/README.md, finding 3): an unknown argument's name was pasted between
/// quotes as it was, so a name holding `"`, `":` or a line break broke out of its quotes and the
/// error no longer named it unambiguously (and a huge name was repeated whole and measured
/// against every parameter). The name is now quoted as a JSON string and cut after 64 characters.
#[test]
fn an_unknown_argument_is_named_unambiguously() {
    let e = err::<HistorySearchContents>(json!({"query": "q", "ax\"ax_ch\":": 0}));
    assert_eq!(
        e,
        r#"history_search_contents: unknown argument "ax\"ax_ch\":" (accepted: query, window_id, role, tool_namespace, tool_name, limit, offset, recent_first)"#
    );
    let e = err::<NewContext>(json!({"a\nb": 1}));
    assert_eq!(
        e,
        r#"new_context: unknown argument "a\nb" (this tool takes no arguments)"#
    );
    let long = "k".repeat(1_000_000);
    let e = err::<NewContext>(json!({ long: 1 }));
    assert_eq!(
        e,
        format!(
            "new_context: unknown argument \"{}…\" (this tool takes no arguments)",
            "k".repeat(64)
        )
    );
}

/// Fuzzing finding (fuzz/README.md, finding 5): two aliases of one parameter with different
/// values (`path` and `prefix` for `path_prefix`) kept the later one and dropped the other
/// silently. It is now the same error as an alias beside its parameter.
#[test]
fn two_aliases_with_different_values_are_an_error() {
    let e = prepare(
        NOTES_SEARCH_CONTENTS,
        &json!({"query": "q", "path": "a/", "prefix": "b/"}),
    )
    .unwrap_err()
    .text;
    assert_eq!(
        e,
        r#"notes_search_contents: arguments "path" and "prefix" are the same parameter with different values; give only "path_prefix""#
    );
    let same = prepare(
        NOTES_SEARCH_CONTENTS,
        &json!({"query": "q", "path": "a/", "prefix": "a/"}),
    );
    assert_eq!(same.unwrap(), json!({"query": "q", "path_prefix": "a/"}));
    let one_null = prepare(
        NOTES_SEARCH_CONTENTS,
        &json!({"query": "q", "path": "a/", "prefix": null}),
    );
    assert_eq!(
        one_null.unwrap(),
        json!({"query": "q", "path_prefix": "a/"})
    );
}

/// What one byte of a string costs in JSON, for every byte on its own and inside UTF-8: the same
/// as serde_json's own escaping (the one-pass `fit_text` counts with it).
#[test]
fn json_string_byte_len_agrees_with_serde_json() {
    for c in (0u32..=0x10FFFF).filter_map(char::from_u32) {
        let s = c.to_string();
        let counted: usize = s.bytes().map(json_string_byte_len).sum();
        assert_eq!(
            counted + 2,
            json_len(&Value::String(s)),
            "character U+{:04X}",
            c as u32
        );
    }
}

mod fit_text_props {
    use super::*;
    use proptest::prelude::*;

    /// An element of the budget's room: `head` with `key` set to `text`.
    fn element(head: &Map<String, Value>, key: &str, text: &str) -> Value {
        let mut m = head.clone();
        m.insert(key.into(), Value::String(text.into()));
        Value::Object(m)
    }

    fn texts() -> impl Strategy<Value = String> {
        // Escape-heavy pieces, multi-byte characters and plain words.
        let piece = prop_oneof![
            Just("\"".to_string()),
            Just("\\".to_string()),
            Just("\n".to_string()),
            Just("\u{1}".to_string()),
            Just("\u{7f}".to_string()),
            Just("é".to_string()),
            Just("€".to_string()),
            Just("𝄞".to_string()),
            "[a-z ]{1,40}",
        ];
        proptest::collection::vec(piece, 0..400).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The kept prefix makes an element that fits; one more character would not.
        #[test]
        fn fit_text_keeps_the_longest_prefix_that_fits(
            text in texts(),
            spend in 0usize..(MAX_RESULT_BYTES - RESULT_FRAME_BYTES),
            head_text in "[a-z\"]{0,30}",
        ) {
            let mut budget = ResultBudget::default();
            budget.left -= spend.min(budget.left);
            let mut head = Map::new();
            head.insert("id".into(), Value::String(head_text));
            // What `take` asks of the element.
            let fits = |t: &str| json_len(&element(&head, "content", t)) < budget.left();
            match budget.fit_text(&head, "content", &text) {
                None => prop_assert!(!fits(""), "an empty element fits but None came back"),
                Some(kept) => {
                    prop_assert!(text.starts_with(kept));
                    prop_assert!(fits(kept), "{} bytes kept do not fit", kept.len());
                    prop_assert!(budget.clone().take(&element(&head, "content", kept)));
                    if let Some(c) = text[kept.len()..].chars().next() {
                        let longer = &text[..kept.len() + c.len_utf8()];
                        prop_assert!(!fits(longer), "one more character would have fit");
                    }
                }
            }
        }
    }
}

/// Pi's schema error without its copy of the arguments (a 100 MB argument of the wrong type was a
/// 100 MB tool result): the texts the model reads.
#[test]
fn schema_refusal_drops_the_arguments_pi_repeats() {
    let huge = "z".repeat(1_000_000);
    let pi = format!(
        "Validation failed for tool \"notes_write_file\":\n  - path: expected string, got object\n\nReceived arguments:\n{{\n  \"path\": {{\"x\": \"{huge}\"}}\n}}"
    );
    let one = schema_refusal("notes_write_file", &pi);
    let many: String = (0..14)
        .map(|i| {
            format!(
                "  - a{i}: expected integer, got string {}\n",
                "w".repeat(300)
            )
        })
        .collect();
    let many = schema_refusal(
        "notes_read_file",
        &format!(
            "Validation failed for tool \"notes_read_file\":\n{many}\nReceived arguments:\n{{}}"
        ),
    );
    let bare = schema_refusal("new_context", "Validation failed for tool \"new_context\":");
    insta::assert_snapshot!("schema_refusal", format!("{one}\n---\n{many}\n---\n{bare}"));
    assert!(many.len() < 3_000);
}
