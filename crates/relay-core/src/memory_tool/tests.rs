//! The memory tool's translation into notes calls, and every error text it writes (snapshots).
use serde_json::json;

use super::*;
use crate::notes::{NoteOp, NoteOpKind};

pub(crate) fn notes() -> Notes {
    let mut n = Notes::new();
    for (path, content) in [
        ("plan.md", "# Plan\nstep one\nstep two\n"),
        ("task/progress.md", "done: parser"),
    ] {
        n.apply(&NoteOp {
            kind: NoteOpKind::Write,
            path: path.into(),
            content: content.into(),
            at_ms: 1,
        })
        .unwrap();
    }
    n
}

fn call(args: Value) -> NotesCall {
    translate(&notes(), &args).unwrap_or_else(|e| panic!("{args}: {}", e.text))
}

pub(crate) fn error(args: Value) -> String {
    let out = translate(&notes(), &args).expect_err(&args.to_string());
    assert!(out.is_error);
    out.text
}

#[test]
fn each_command_with_a_notes_equivalent_becomes_that_notes_call() {
    let list = |prefix: &str| NotesCall {
        tool: TOOL_LIST,
        args: json!({ "prefix": prefix }),
    };
    let read = |args: Value| NotesCall {
        tool: TOOL_READ,
        args,
    };
    let write = |path: &str, content: &str| NotesCall {
        tool: TOOL_WRITE,
        args: json!({ "path": path, "content": content }),
    };
    let cases = [
        (json!({"command": "view", "path": "/memories"}), list("")),
        (json!({"command": "view", "path": "/memories/"}), list("")),
        (
            json!({"command": "view", "path": "/memories/task"}),
            list("task/"),
        ),
        (
            json!({"command": "view", "path": "/memories/plan.md"}),
            read(json!({"path": "plan.md"})),
        ),
        (
            json!({"command": "view", "path": "/memories/plan.md", "view_range": [2, -1]}),
            read(json!({"path": "plan.md", "start_line": 2, "end_line": -1})),
        ),
        (
            json!({"command": "create", "path": "/memories/new.md", "file_text": "hello\n"}),
            write("new.md", "hello\n"),
        ),
        (
            json!({"command": "delete", "path": "/memories/plan.md"}),
            write("plan.md", ""),
        ),
        (
            json!({"command": "str_replace", "path": "/memories/plan.md", "old_str": "step two", "new_str": "step 2 (done)"}),
            write("plan.md", "# Plan\nstep one\nstep 2 (done)\n"),
        ),
        (
            json!({"command": "insert", "path": "/memories/plan.md", "insert_line": 1, "insert_text": "step zero"}),
            write("plan.md", "# Plan\nstep zero\nstep one\nstep two\n"),
        ),
        (
            json!({"command": "insert", "path": "/memories/plan.md", "insert_line": 0, "insert_text": "top\n"}),
            write("plan.md", "top\n# Plan\nstep one\nstep two\n"),
        ),
        (
            json!({"command": "insert", "path": "/memories/task/progress.md", "insert_line": 1, "insert_text": "next: loader"}),
            write("task/progress.md", "done: parser\nnext: loader"),
        ),
    ];
    for (args, want) in cases {
        assert_eq!(call(args.clone()), want, "{args}");
    }
}
