//! Failure classification: how a failed compaction of Relay's is treated, judged from Pi's error
//! text (benign, transient, persistent).

use serde::Serialize;

/// How a failed compaction of Relay's is treated, judged from Pi's error text
/// ([`classify_compact_failure`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FailureKind {
    /// Nothing was lost: a cancellation, "Nothing to compact", "Already compacted". Never
    /// counted, never retried, no fallback.
    Benign,
    /// May succeed later (rate limit, overload, network, timeout, 5xx, or a cause Relay cannot
    /// tell): retried at the next eligible boundary; the third failure in a window arms the
    /// fallback.
    Transient,
    /// Retrying cannot help (authentication or permission, an invalid request, no model or
    /// quota, a context too large for the summarizer): a reset Relay owns arms the fallback at
    /// once.
    Persistent,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Benign => "benign",
            FailureKind::Transient => "transient",
            FailureKind::Persistent => "persistent",
        }
    }
}

/// Texts (lower case) of failures that lose nothing: Pi's own no-op answers and cancellation.
const BENIGN_FAILURES: &[&str] = &[
    "nothing to compact",
    "already compacted",
    "compaction cancelled",
    "request was aborted",
    "aborted",
];

/// Texts (lower case) of failures a retry cannot fix. Authentication and permission (Pi's
/// "Authentication failed for …", "No API key found for …", provider 401/403 texts), an invalid
/// request (400 and its error types), no model, quota and billing exhaustion (pi-ai's
/// non-retryable limits), and a context the summarizer cannot take (pi-ai's overflow texts).
const PERSISTENT_FAILURES: &[&str] = &[
    "authentication",
    "unauthorized",
    "forbidden",
    "permission",
    "api key",
    "credentials",
    "/login",
    "invalid request",
    "invalid_request",
    "bad request",
    "invalid_parameter",
    "no model selected",
    "model not found",
    "not_found_error",
    "insufficient_quota",
    "quota exceeded",
    "billing",
    "usage limit",
];

/// Texts (lower case) of a context the summarizer cannot take (pi-ai's overflow texts). Checked
/// after the transient ones, so a throttle that mentions tokens ("Too many tokens, please wait")
/// stays transient.
const OVERFLOW_FAILURES: &[&str] = &[
    "prompt is too long",
    "prompt too long",
    "request_too_large",
    "context window",
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "token limit",
    "exceeds the limit",
];

/// Texts (lower case) of failures that may pass: pi-ai's retryable provider and transport errors
/// (a subset).
const TRANSIENT_FAILURES: &[&str] = &[
    "rate limit",
    "rate_limit",
    "too many requests",
    "overloaded",
    "server_busy",
    "temporarily unavailable",
    "service unavailable",
    "server error",
    "internal error",
    "network",
    "fetch failed",
    "socket hang up",
    "econnreset",
    "econnrefused",
    "etimedout",
    "timed out",
    "timeout",
    "connection",
    "please wait",
];

/// HTTP status codes in a failure text (not part of a longer number or word): the first list is
/// persistent, the second transient.
const PERSISTENT_CODES: &[&str] = &["400", "401", "403", "404", "413"];
const TRANSIENT_CODES: &[&str] = &[
    "408", "429", "500", "502", "503", "504", "520", "524", "529",
];

fn has_code(text: &str, code: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(code).any(|(i, m)| {
        let before = i.checked_sub(1).and_then(|j| bytes.get(j));
        let after = bytes.get(i + m.len());
        !before.is_some_and(u8::is_ascii_alphanumeric)
            && !after.is_some_and(u8::is_ascii_alphanumeric)
    })
}

/// Classify a failed compaction from Pi's `session_compact_failed` (`aborted`, `errorMessage`)
/// or `ctx.compact()`'s error. The rule, in order:
///
/// 1. aborted, or a benign text ("Nothing to compact", "Already compacted", "Compaction
///    cancelled") → [`FailureKind::Benign`];
/// 2. authentication, permission, API key, invalid request, no model, quota or billing, or the
///    status 400/401/403/404/413 → [`FailureKind::Persistent`] (Pi's "Authentication failed …
///    network is unavailable" is an authentication failure);
/// 3. a transient text or status (rate limit, overload, network, timeout, 408/429/5xx) →
///    [`FailureKind::Transient`];
/// 4. a context too large for the summarizer ("prompt is too long", "too many tokens", …) →
///    [`FailureKind::Persistent`];
/// 5. anything else, and no text at all → [`FailureKind::Transient`]: retrying is bounded (the
///    third failure arms the fallback), so an unknown cause costs at most two more tries.
pub fn classify_compact_failure(aborted: bool, message: Option<&str>) -> FailureKind {
    if aborted {
        return FailureKind::Benign;
    }
    let Some(text) = message.map(str::to_lowercase) else {
        return FailureKind::Transient;
    };
    let any = |list: &[&str]| list.iter().any(|t| text.contains(t));
    let code = |list: &[&str]| list.iter().any(|c| has_code(&text, c));
    if any(BENIGN_FAILURES) {
        FailureKind::Benign
    } else if any(PERSISTENT_FAILURES) || code(PERSISTENT_CODES) {
        FailureKind::Persistent
    } else if any(TRANSIENT_FAILURES) || code(TRANSIENT_CODES) {
        FailureKind::Transient
    } else if any(OVERFLOW_FAILURES) {
        FailureKind::Persistent
    } else {
        FailureKind::Transient
    }
}
