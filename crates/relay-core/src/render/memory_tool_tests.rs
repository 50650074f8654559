//! Every error text the memory tool writes, through its translation (snapshot).
use serde_json::json;

use crate::memory_tool::tests::error;

#[test]
fn errors_name_memory_the_argument_and_the_notes_tool_to_use() {
    let cases = [
        json!({"command": "rename", "old_path": "/memories/plan.md", "new_path": "/memories/old-plan.md"}),
        json!({"command": "view", "path": "/notes/plan.md"}),
        json!({"command": "view", "path": "/memoriesx/plan.md"}),
        json!({"command": "view", "path": "/memories/nothing"}),
        json!({"command": "view"}),
        json!({"command": "create", "path": "/memories", "file_text": "x"}),
        json!({"command": "create", "path": "/memories/a.md"}),
        json!({"command": "delete", "path": "/memories/gone.md"}),
        json!({"command": "str_replace", "path": "/memories/plan.md", "old_str": "step", "new_str": "s"}),
        json!({"command": "str_replace", "path": "/memories/plan.md", "old_str": "absent", "new_str": "s"}),
        json!({"command": "str_replace", "path": "/memories/plan.md", "old_str": "", "new_str": "s"}),
        json!({"command": "str_replace", "path": "/memories/gone.md", "old_str": "a", "new_str": "b"}),
        json!({"command": "insert", "path": "/memories/plan.md", "insert_line": 9, "insert_text": "x"}),
        json!({"command": "insert", "path": "/memories/plan.md", "insert_text": "x"}),
        json!({"command": "view", "path": "/memories/plan.md", "view_range": [1]}),
        json!({"command": "copy", "path": "/memories/plan.md"}),
        json!({"command": "view", "path": "/memories", "file_path": "x"}),
        json!({"command": "view", "path": "/memories/plan.md", "file_text": "x"}),
    ];
    let all: Vec<String> = cases
        .iter()
        .map(|c| format!("{c}\n  → {}", error(c.clone())))
        .collect();
    insta::assert_snapshot!(all.join("\n"));
}
