//! The stub that replaces a cleared tool result in every later request (the clearing itself is
//! [`crate::clearing`]).

use super::group_digits;

/// The one line that replaces a cleared tool result in the model's context.
pub fn render_stub(
    tool: &str,
    chars: usize,
    tokens: u64,
    window_id: &str,
    item_id: &str,
) -> String {
    let args = serde_json::json!({ "window_id": window_id, "item_id": item_id });
    format!(
        "[Relay cleared this {tool} result from the context to save room: {} characters, about {} tokens. It is kept whole in the session history; to see it again call history_read_item {args}]",
        group_digits(chars as u64),
        group_digits(tokens),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stub_text() {
        insta::assert_snapshot!(render_stub(
            "fetch_page",
            48_013,
            12_004,
            "pcw:0193a1b2-aaaa-7bbb-8ccc-123456789abc:root",
            "a1b2c3d4"
        ));
    }
}
