//! Pi's usage estimate, kept incrementally as the mirror is fed: one mark per message,
//! compaction and context edit, replayed after a navigation; counted exactly as Pi's
//! `getContextUsage()` counts.

use super::*;

/// Pi's `getContextUsage()` of one window, kept incrementally (Pi's compaction code:
/// `estimateTokens`, `estimateContextTokens`, `estimateProjectedContextTokens`).
#[derive(Debug, Clone, Default)]
pub(in crate::engine) struct Estimate {
    /// The last valid assistant usage (neither aborted nor an error, total > 0).
    pub(in crate::engine) last_usage: Option<u64>,
    /// ceil(chars/4) of every message after it, system messages included.
    pub(in crate::engine) trailing: u64,
    /// ceil(chars/4) of every non-system message of the window (the compaction summary
    /// included), with context edits applied: Pi's estimate when no usage can be trusted.
    pub(in crate::engine) all: u64,
    /// A context edit came after the last usage: the usage no longer stands for the context.
    pub(in crate::engine) invalidated: bool,
    /// Valid assistant usages in the window that no context edit removed.
    pub(in crate::engine) usages: u32,
    /// The window's first valid assistant usage: the budget policy's floor.
    pub(in crate::engine) first_usage: Option<u64>,
    /// The window's current system message, replayed from its system messages.
    pub(in crate::engine) system: SystemReplay,
}

/// Pi's `getCurrentSystemMessage`: text contents joined by a blank line, sections patched by
/// name, tools added and removed by name.
#[derive(Debug, Clone, Default)]
pub(in crate::engine) struct SystemReplay {
    pub(in crate::engine) any: bool,
    pub(in crate::engine) texts: Vec<u64>,
    pub(in crate::engine) sections: std::collections::BTreeMap<String, u64>,
    pub(in crate::engine) tools: std::collections::BTreeMap<String, u64>,
}

impl SystemReplay {
    pub(in crate::engine) fn apply(&mut self, d: &SystemDelta) {
        self.any = true;
        if d.content_chars > 0 {
            self.texts.push(d.content_chars);
        }
        for (name, chars) in &d.sections {
            match chars {
                Some(c) => {
                    self.sections.insert(name.clone(), *c);
                }
                None => {
                    self.sections.remove(name);
                }
            }
        }
        for name in &d.tools_removed {
            self.tools.remove(name);
        }
        for (name, chars) in &d.tools_added {
            self.tools.insert(name.clone(), *chars);
        }
    }

    /// `estimateTokens` of the replayed message (0 when there is none).
    pub(in crate::engine) fn tokens(&self) -> u64 {
        if !self.any && self.tools.is_empty() {
            return 0;
        }
        let n = self.texts.len() as u64;
        let content: u64 = self.texts.iter().sum::<u64>() + 2 * n.saturating_sub(1);
        let sections: u64 = self.sections.values().sum();
        let k = self.tools.len() as u64;
        let tools = if k == 0 {
            0
        } else {
            self.tools.values().sum::<u64>() + (k - 1) + 2
        };
        (content + sections + tools).div_ceil(4)
    }
}

/// How a context edit's replacement is measured for a message of this kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::engine) enum Editable {
    /// user, toolResult, custom: text and images.
    Content,
    Assistant,
    /// Other roles keep their content under an edit.
    No,
}

/// One entry's part in the usage estimate, kept so a navigation can rebuild the estimate of the
/// window it lands in.
#[derive(Debug, Clone)]
pub(in crate::engine) enum Mark {
    /// A message of the context: its estimate as written and with edits applied, its valid
    /// usage, and for a system message its delta.
    Message {
        original: u64,
        current: u64,
        usage: Option<u64>,
        removed: bool,
        /// A context edit or a clearing's stub replaced it (in the branch as mirrored).
        edited: bool,
        editable: Editable,
        system: Option<Box<SystemDelta>>,
        /// A tool result's call id (what a clearing's stub finds it by in a request).
        call: Option<Box<str>>,
    },
    /// The compaction that opens the window: its summary message and its system snapshot.
    Opening {
        summary: u64,
        system: Option<Box<SystemDelta>>,
    },
    /// A context edit of the entry at `target` (`None`: not on the mirrored branch).
    Edit {
        target: Option<usize>,
        replacement: Option<Replacement>,
    },
    /// A clearing whose stubs replace the tool results at `targets` where requests are built:
    /// they are cleared, but Pi's estimate does not see the stubs (Pi applies no edit).
    Cleared { targets: Vec<usize> },
}

#[derive(Debug, Clone)]
pub(in crate::engine) struct UsageMark {
    pub(in crate::engine) pos: usize,
    pub(in crate::engine) mark: Mark,
}

impl Mirror {
    /// Pi's context estimate, one entry at a time (see [`Estimate`]): messages count
    /// ceil(chars/4) each as Pi counts them ([`crate::entry::Message::estimate_chars`]); a valid
    /// assistant usage replaces everything before it; a compaction opens a window (its summary
    /// and system snapshot); a context edit changes its target and distrusts earlier usage.
    pub(in crate::engine) fn account_usage(&mut self, pos: usize, entry: &Entry) {
        let tokens = |chars: u64| chars.div_ceil(4);
        // A message as it enters the context: its own estimate, not removed or edited yet.
        let message = |chars: u64, usage: Option<u64>, editable, system, call| {
            let estimate = tokens(chars);
            Mark::Message {
                original: estimate,
                current: estimate,
                usage,
                removed: false,
                edited: false,
                editable,
                system,
                call,
            }
        };
        let mark = match &entry.kind {
            EntryKind::Message(m) => {
                let valid = m.role == "assistant"
                    && !m.stop().is_some_and(|r| r.aborted_or_failed())
                    && m.usage_total.unwrap_or(0) > 0;
                let editable = match m.role.as_str() {
                    "user" | "toolResult" | "custom" => Editable::Content,
                    "assistant" => Editable::Assistant,
                    _ => Editable::No,
                };
                let usage = if valid { m.usage_total } else { None };
                let call = (m.role == "toolResult")
                    .then(|| m.tool_call_id.as_deref().map(Box::from))
                    .flatten();
                message(m.estimate_chars, usage, editable, m.system.clone(), call)
            }
            EntryKind::CustomMessage { estimate_chars, .. } => {
                message(*estimate_chars, None, Editable::Content, None, None)
            }
            EntryKind::BranchSummary { summary, .. } => {
                let chars = crate::history::utf16_len(summary) as u64;
                message(chars, None, Editable::No, None, None)
            }
            EntryKind::Compaction {
                summary,
                system_message,
                ..
            } => Mark::Opening {
                summary: tokens(crate::history::utf16_len(summary) as u64),
                system: system_message.clone(),
            },
            EntryKind::ContextEdit {
                target_id,
                replacement,
            } => Mark::Edit {
                target: self.history.position_of(target_id),
                replacement: *replacement,
            },
            // The clearing `push_custom` just took in (its stubs name their entries).
            EntryKind::Custom { custom_type, .. } if custom_type == CLEARING_TYPE => {
                let Some(c) = self.clearings.last().filter(|c| c.pos == pos) else {
                    return;
                };
                let targets: Vec<usize> = c
                    .stubs
                    .iter()
                    .filter_map(|s| self.history.position_of(&s.id))
                    .collect();
                if targets.is_empty() {
                    return;
                }
                Mark::Cleared { targets }
            }
            _ => return,
        };
        self.usage_marks.push(UsageMark { pos, mark });
        let start = self.current.start;
        let from = self.usage_marks.partition_point(|m| m.pos < start);
        let last = self.usage_marks.len() - 1;
        apply_mark(
            &mut self.current.estimate,
            &mut self.usage_marks,
            from,
            last,
        );
    }

    /// The usage figure the policy and the reminder judge: Pi's own when the moment carries it
    /// (tools), else the incremental estimate. `None` while unknown (a window whose reset has no
    /// assistant usage yet).
    pub(in crate::engine) fn usage(&self, moment: &Moment) -> Option<Usage> {
        if moment.usage.is_some() {
            return moment.usage;
        }
        let context_window = moment.window()?;
        let e = &self.current.estimate;
        let tokens = if !self.earlier.is_empty() && e.usages == 0 {
            // After a compaction, nothing is known until an answer in this window reports usage.
            None
        } else {
            match e.last_usage {
                Some(u) if !e.invalidated => Some(u + e.trailing),
                // No usage to trust: every message of the window, and the current system message.
                _ => Some(e.system.tokens() + e.all),
            }
        };
        Some(Usage {
            tokens,
            context_window,
        })
    }
}

/// Apply the mark at `i` (of the window whose marks start at `from`) to `e`. An edit changes the
/// mark it targets (found by id among the window's earlier marks).
pub(in crate::engine) fn apply_mark(
    e: &mut Estimate,
    marks: &mut [UsageMark],
    from: usize,
    i: usize,
) {
    let edit = match marks.get(i).map(|m| &m.mark) {
        None => return,
        Some(Mark::Cleared { targets }) => {
            let targets = targets.clone();
            let window = marks.get_mut(from..i).unwrap_or_default();
            for target in targets {
                if let Ok(at) = window.binary_search_by_key(&target, |m| m.pos) {
                    if let Some(UsageMark {
                        mark: Mark::Message { edited, .. },
                        ..
                    }) = window.get_mut(at)
                    {
                        *edited = true;
                    }
                }
            }
            return;
        }
        Some(Mark::Opening { summary, system }) => {
            e.all += summary;
            if let Some(d) = system {
                e.system.apply(d);
            }
            return;
        }
        Some(Mark::Message {
            current,
            usage,
            system,
            ..
        }) => {
            if let Some(d) = system {
                // A system message counts in the trailing part; in a pure estimate it is part of
                // the current system message instead.
                e.system.apply(d);
                e.trailing += current;
            } else if let Some(u) = usage {
                e.last_usage = Some(*u);
                e.first_usage.get_or_insert(*u);
                e.trailing = 0;
                e.invalidated = false;
                e.usages += 1;
                e.all += current;
            } else {
                e.trailing += current;
                e.all += current;
            }
            return;
        }
        Some(Mark::Edit {
            target,
            replacement,
        }) => (*target, *replacement),
    };
    let (target, replacement) = edit;
    e.invalidated = true;
    // The edited message, if it is a message of this window (an earlier mark).
    let Some(target) = target else { return };
    let window = marks.get_mut(from..i).unwrap_or_default();
    let Ok(at) = window.binary_search_by_key(&target, |m| m.pos) else {
        return;
    };
    let Some(UsageMark {
        mark:
            Mark::Message {
                current,
                usage,
                removed,
                edited,
                editable,
                system: None,
                ..
            },
        ..
    }) = window.get_mut(at)
    else {
        return;
    };
    *edited = true;
    let new = match (replacement, *editable) {
        (_, Editable::No) => *current,
        (None, _) => 0,
        (Some(r), Editable::Content) => r.content_chars.div_ceil(4),
        (Some(r), Editable::Assistant) => r.assistant_chars.div_ceil(4),
    };
    e.all = e.all - *current + new;
    *current = new;
    let gone = replacement.is_none() && *editable != Editable::No;
    if gone && usage.is_some() && !*removed {
        e.usages = e.usages.saturating_sub(1);
    }
    *removed |= gone;
}
