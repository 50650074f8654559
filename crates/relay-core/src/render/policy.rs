//! Every text the policy produces for the model or the user: the soft advisory, the block reasons,
//! the settle and idle continuations, the forced-reset note and the mode footer (snapshot-tested
//! in policy/tests.rs, beside the fixtures that reach them; `policy` re-exports them).

use crate::policy::{EffectiveMode, FallbackReason, PolicyParams, Thresholds};

fn fmt_tokens(t: Option<u64>) -> String {
    match t {
        Some(t) => t.to_string(),
        None => "an unknown number of".to_string(),
    }
}

/// UI advisory at the soft threshold (one per crossing).
pub fn render_soft_advisory(tokens: u64, th: &Thresholds) -> String {
    format!(
        "Context budget: {tokens} tokens, past the soft threshold of {}. Finish the current step, then \
         hand off at a natural boundary with context_handoff. From {} tokens every other tool is blocked \
         until a handoff is written.",
        th.soft, th.handoff
    )
}

/// `tool_call` block reason while a handoff is required.
pub fn render_block_handoff(tokens: Option<u64>, th: &Thresholds) -> String {
    format!(
        "Blocked by the context budget: the context holds {} tokens (handoff threshold {}). Only \
         context_handoff is allowed now. Call it with goal, next_step and facts (verified state), plus \
         user_constraints verbatim, decisions, open_items, hypotheses and files_to_read where they \
         apply. The context then resets at the end of this turn and work continues automatically from \
         your handoff.",
        fmt_tokens(tokens),
        th.handoff
    )
}

/// `tool_call` block reason while a written handoff waits for the turn's end.
pub fn render_block_pending() -> String {
    "Blocked: a handoff was written and the context resets at the end of this turn. Do not call \
     other tools now; end the turn and continue from the handoff's next step in the new window."
        .to_string()
}

/// `tool_call` block reason while the fallback is armed.
pub fn render_block_fallback(
    reason: FallbackReason,
    tokens: Option<u64>,
    p: &PolicyParams,
) -> String {
    match reason {
        FallbackReason::Hard => format!(
            "Blocked: the context holds {} tokens, at or past the hard limit of {}. Only context_handoff \
             is allowed: call it now (goal, next_step, facts, user_constraints verbatim) and the next \
             window continues from it. Without a handoff the context is reset mechanically and \
             nothing is carried over but your notes: at the end of your next turn if you keep \
             calling tools, or when you stop.",
            fmt_tokens(tokens),
            p.thresholds.hard
        ),
        FallbackReason::Cap => format!(
            "Blocked: this session already used its {} automatic handoffs (maxHandoffsPerSession). \
             Do not call more tools and do not hand off again. End your turn now: the context will be \
             reset mechanically and the user decides how to continue.",
            p.max_handoffs_per_session
        ),
        FallbackReason::Loop => format!(
            "Blocked: {} handoffs within {} turns made no progress (no successful tool other than \
             context_handoff). Do not call more tools and do not hand off again. End your turn now: \
             the context will be reset mechanically and the user decides how to continue.",
            p.loop_guard.max_handoffs_without_progress, p.loop_guard.within_turns
        ),
        FallbackReason::CompactionFailure => "Blocked: Relay could not reset this context window: \
             its reset failed three times, or failed in a way a retry cannot fix. Do not call more tools and do not hand off again. End \
             your turn now: the context will be reset mechanically and the user decides how to \
             continue."
            .to_string(),
    }
}

/// `tool_call` block reason while the fallback is armed and this runtime owns a pi-session
/// wrapper: the process ends at the settle point and a fresh one continues from the latest
/// handoff file.
pub fn render_block_fallback_relaunch(
    reason: FallbackReason,
    tokens: Option<u64>,
    p: &PolicyParams,
) -> String {
    let restart = "Pi then restarts in a fresh process (pi-session) that continues from the \
                   latest handoff file; the conversation is not carried over.";
    match reason {
        FallbackReason::Hard => format!(
            "Blocked: the context holds {} tokens, at or past the hard limit of {}. Only \
             context_handoff is allowed: call it now (goal, next_step, facts, user_constraints \
             verbatim) and the next window continues from it in this process. Without a \
             handoff, end your turn: {restart}",
            fmt_tokens(tokens),
            p.thresholds.hard
        ),
        other => {
            let why = match other {
                FallbackReason::Cap => format!(
                    "this session already used its {} automatic handoffs (maxHandoffsPerSession)",
                    p.max_handoffs_per_session
                ),
                FallbackReason::Loop => format!(
                    "{} handoffs within {} turns made no progress (no successful tool other \
                     than context_handoff)",
                    p.loop_guard.max_handoffs_without_progress, p.loop_guard.within_turns
                ),
                _ => "Relay could not reset this context window: its reset failed three times"
                    .to_string(),
            };
            format!(
                "Blocked: {why}. Do not call other tools. If the state changed since your last \
                 handoff, record it with one context_handoff call; then end your turn now: \
                 {restart}"
            )
        }
    }
}

/// `tool_call` block reason while the reset this policy asked for waits to be installed.
pub fn render_block_resetting() -> String {
    "Blocked: this context window is being reset. Do not call any tool now; end your turn. \
     The new window tells you how to continue."
        .to_string()
}

/// Hidden continuation when the agent tries to stop past the hard limit without a handoff (once
/// per run).
pub fn render_hard_settle_continuation(tokens: Option<u64>, th: &Thresholds) -> String {
    format!(
        "The context holds {} tokens, at or past the hard limit of {}, and no handoff was written. \
         Call context_handoff now with goal, next_step and facts (user_constraints verbatim) so the \
         next window can continue from it. If you do not, the context is reset mechanically when \
         you stop, without a handoff; other tools stay blocked until then.",
        fmt_tokens(tokens),
        th.hard
    )
}

/// [`render_hard_settle_continuation`] when this runtime owns a pi-session wrapper.
pub fn render_hard_settle_continuation_relaunch(tokens: Option<u64>, th: &Thresholds) -> String {
    format!(
        "The context holds {} tokens, at or past the hard limit of {}, and no handoff was written. \
         Call context_handoff now with goal, next_step and facts (user_constraints verbatim) so the \
         next window can continue from it in this process. If you do not, Pi restarts in a fresh \
         process when you stop, continuing from the latest handoff file; other tools stay blocked \
         until then.",
        fmt_tokens(tokens),
        th.hard
    )
}

/// Hidden continuation when the agent tries to stop while a handoff is required (once per run).
pub fn render_settle_continuation(tokens: Option<u64>, th: &Thresholds) -> String {
    format!(
        "The context holds {} tokens, past the handoff threshold of {}, and no handoff was written. \
         Call context_handoff now with goal, next_step and facts (user_constraints verbatim). Other \
         tools stay blocked until then; after the handoff the context resets and work continues from \
         it.",
        fmt_tokens(tokens),
        th.handoff
    )
}

/// Hidden continuation at the last settle point before the session waits for pending work with a
/// large context (once per external run): a handoff now, while the prompt cache is warm.
pub fn render_idle_continuation(tokens: Option<u64>, idle_min_tokens: u64) -> String {
    format!(
        "Before you stop: the context holds {} tokens (idle reset from {idle_min_tokens}) and work \
         is still pending, so the session would wait with a large context. Call context_handoff \
         now with goal, next_step and facts (user_constraints verbatim), written so the pending \
         work can be picked up from it. Other tools are blocked once it is written; the context \
         then resets and work continues from your handoff in this session.",
        fmt_tokens(tokens)
    )
}

/// Boot-block note for the window after a forced mechanical reset.
pub fn render_forced_reset_note(reason: FallbackReason, p: &PolicyParams) -> String {
    let why = match reason {
        FallbackReason::Hard => format!(
            "the context reached the hard limit of {} tokens without a usable handoff",
            p.thresholds.hard
        ),
        FallbackReason::Cap => format!(
            "this session reached its limit of {} automatic handoffs",
            p.max_handoffs_per_session
        ),
        FallbackReason::Loop => format!(
            "{} handoffs within {} turns made no progress",
            p.loop_guard.max_handoffs_without_progress, p.loop_guard.within_turns
        ),
        FallbackReason::CompactionFailure => {
            "Relay's reset of the window failed three times, or failed in a way a retry cannot fix \
             (compaction failure)"
                .to_string()
        }
    };
    format!(
        "The previous context window was reset mechanically because {why}. No handoff was \
         written, so nothing was carried over: the earlier conversation is gone from this window \
         but remains in the history tools. Re-establish the state from your notes, the history \
         tools, the workspace files and git (status, log, diff) before acting, and do not ask the \
         user to restate the task unless it cannot be recovered."
    )
}

/// Footer text when configured and effective modes differ, e.g.
/// `relay budget: configured enforce, effective observe (cwd restriction)`.
pub fn render_mode_footer(mode: &EffectiveMode) -> Option<String> {
    if mode.configured == mode.effective {
        return None;
    }
    Some(format!(
        "relay budget: configured {}, effective {}{}",
        mode.configured.as_str(),
        mode.effective.as_str(),
        mode.reason
            .as_ref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    ))
}
