//! Staying on task after a reset: when the first reply in a window counts as an early stop.
//!
//! A reset drops the conversation, so the model that opens the next window sometimes answers the
//! continuation as if nothing were going on ("What would you like me to do next?") and the run
//! ends there. The engine continues such a run once (see `engine/on_task.rs` for *when*); this
//! module decides only *whether a reply stopped early*. The rule is deterministic (no model
//! call) and deliberately conservative: a reply that may state results is taken as the answer.
//!
//! A reply (its visible text, thinking left out) is an **early stop** when, with surrounding
//! whitespace trimmed:
//!
//! 1. it is empty ([`EarlyStop::Empty`]); or
//! 2. it has at most [`SHORT_REPLY_MAX_CHARS`] characters and ends with a question mark (`?` or
//!    `？`, before any closing quotes, brackets or markdown emphasis) ([`EarlyStop::Question`]); or
//! 3. it has at most [`SHORT_REPLY_MAX_CHARS`] characters and contains one of [`META_PHRASES`]
//!    (case-insensitive, `’` read as `'`): it asks what to do or says it lacks the context
//!    ([`EarlyStop::Meta`]).
//!
//! Anything else, a longer reply above all, is the model's answer.

/// A reply longer than this many characters is taken as an answer, whatever it ends with.
pub const SHORT_REPLY_MAX_CHARS: usize = 600;

/// Phrases (lower case) that make a short reply a meta answer: asking the user what to do, or
/// saying the context is missing.
pub const META_PHRASES: &[&str] = &[
    "what would you like",
    "what do you want me to",
    "what should i",
    "what shall i",
    "how can i help",
    "how can i assist",
    "how may i help",
    "what can i do for you",
    "let me know what you'd like",
    "let me know what you want",
    "tell me what you'd like",
    "tell me what you want",
    "which task",
    "what task",
    "no context",
    "enough context",
    "more context",
    "missing context",
    "lack context",
    "lack the context",
    "don't have context",
    "don't have any context",
    "don't have the context",
    "do not have context",
    "do not have any context",
    "do not have the context",
    "not sure what",
    "unsure what",
    "unclear what",
    "don't know what",
    "do not know what",
    "previous conversation",
    "earlier conversation",
    "could you clarify",
    "can you clarify",
    "please clarify",
    "please provide",
    "please specify",
    "please tell me",
    "ready when you are",
    "awaiting your",
    "waiting for your",
];

/// Why a reply counts as an early stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EarlyStop {
    /// No visible text at all.
    Empty,
    /// A short reply that ends with a question.
    Question,
    /// A short reply that asks what to do or says it lacks the context.
    Meta,
}

/// Whether `reply` (an assistant message's visible text) stopped early, and why; `None` when it
/// is taken as the answer. See the module documentation for the rule.
pub fn early_stop(reply: &str) -> Option<EarlyStop> {
    let text = reply.trim();
    if text.is_empty() {
        return Some(EarlyStop::Empty);
    }
    if crate::text::char_count(text) > SHORT_REPLY_MAX_CHARS {
        return None;
    }
    let end = text.trim_end_matches(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '*' | '_' | '`' | '"' | '\'' | ')' | ']' | '”' | '’' | '»'
            )
    });
    if end.ends_with('?') || end.ends_with('？') {
        return Some(EarlyStop::Question);
    }
    let lower = text.to_lowercase().replace('’', "'");
    META_PHRASES
        .iter()
        .any(|p| lower.contains(p))
        .then_some(EarlyStop::Meta)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn empty_questions_and_meta_answers_stop_early() {
        let cases = [
            ("", EarlyStop::Empty),
            ("  \n\t ", EarlyStop::Empty),
            ("What would you like me to do next?", EarlyStop::Question),
            ("Done with step 1. Shall I go on?\n", EarlyStop::Question),
            ("**Which file should I open?**", EarlyStop::Question),
            ("Ready (anything else?)", EarlyStop::Question),
            ("どうしますか？", EarlyStop::Question),
            (
                "I’m ready — let me know what you want me to do.",
                EarlyStop::Meta,
            ),
            ("I don't have enough context to continue.", EarlyStop::Meta),
            ("I DON'T HAVE ANY CONTEXT about this task.", EarlyStop::Meta),
            ("Please provide the task description.", EarlyStop::Meta),
        ];
        for (reply, want) in cases {
            assert_eq!(early_stop(reply), Some(want), "{reply:?}");
        }
    }

    #[test]
    fn a_reply_that_states_results_is_the_answer() {
        for reply in [
            "Done: TASK-58 passes and api/ is untouched.",
            "The loader now reads the manifest lazily; all tests pass.",
            "Continuing in the fresh window.",
            "Fixed the question mark in parse? no: the parser now accepts `?` tokens.",
            "Done. Let me know what you think.",
        ] {
            assert_eq!(early_stop(reply), None, "{reply:?}");
        }
    }

    #[test]
    fn a_long_reply_is_the_answer_even_when_it_ends_with_a_question() {
        let long = format!(
            "{} Shall I also update the docs?",
            "Result line. ".repeat(50)
        );
        assert!(long.chars().count() > SHORT_REPLY_MAX_CHARS);
        assert_eq!(early_stop(&long), None);
        let at_limit = format!("{}?", "a".repeat(SHORT_REPLY_MAX_CHARS - 1));
        assert_eq!(early_stop(&at_limit), Some(EarlyStop::Question));
        let over = format!("{}?", "a".repeat(SHORT_REPLY_MAX_CHARS));
        assert_eq!(early_stop(&over), None);
    }
}
