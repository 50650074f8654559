//! The context window whose limits apply under a router (virtual) model, as Pi's own context
//! usage reads it: the window of the physical model that answered last (the branch's latest
//! successful answer, `mirror/answers.rs`), else the one the router declares; 0 is unknown.
//!
//! The host reports facts only: the current model's declared window and `api` (a router's is
//! [`super::wire::ROUTER_API`]), and `answeredWindow`, the declared window of the model the engine's last output named
//! (`Output::answeredModel`). The engine names the latest answer's model in every output and
//! reads `answeredWindow` only while it still describes that model: a navigation that changed it
//! leaves the declared window until the next output names the new one. A `message_end` notes its
//! answer at once ([`Answers::live`]) so the next input already carries its window; the answer's
//! own boundary decision reads the window as unknown when the router switched models
//! (`engine/boundary.rs`).

use super::door::Input;
use super::wire::Moment;
use super::Engine;
use crate::entry::{Message, ModelRef};

/// The answers the engine knows beyond the mirror's.
#[derive(Debug, Default)]
pub(super) struct Answers {
    /// The model of the answer a `message_end` carried, with the tip the mirror had then: it
    /// stands until the mirror moves (Pi appends the message; the feed brings it in).
    live: Option<(Option<String>, ModelRef)>,
    /// The model the last output named: the one the host's `answeredWindow` describes.
    named: Option<ModelRef>,
}

impl Engine {
    /// The model of the latest successful answer: a `message_end`'s not yet mirrored, else the
    /// branch's.
    pub(super) fn latest_answer(&self) -> Option<&ModelRef> {
        match &self.answers.live {
            Some((tip, model)) if tip.as_deref() == self.tip() => Some(model),
            _ => self.mirror.latest_answer(),
        }
    }

    /// A `message_end`'s message: a successful answer that names its model is the latest one.
    pub(super) fn note_live_answer(&mut self, message: &Message) {
        if let Some(model) = message.answered_by() {
            let tip = self.tip().map(str::to_string);
            self.answers.live = Some((tip, model.clone()));
        }
    }

    /// `message`, the answer a `message_end` carries, is by another model than the one whose
    /// window the moment holds (the router switched models): its window is not known yet.
    pub(super) fn answer_switched_window(&self, moment: &Moment, message: &Message) -> bool {
        moment.router()
            && message
                .answered_by()
                .is_some_and(|m| Some(m) != self.answers.named.as_ref())
    }

    /// The window whose limits apply at `moment` (see the module documentation).
    pub(super) fn limits_window(&self, moment: &Moment) -> Option<u64> {
        if !moment.router() {
            return moment.context_window;
        }
        let current = self.latest_answer() == self.answers.named.as_ref();
        match moment.answered_window.filter(|w| *w > 0 && current) {
            Some(w) => Some(w),
            None => moment.context_window,
        }
    }

    /// The door's first step: every moment `input` carries holds the window whose limits apply.
    pub(super) fn resolve_window(&self, input: &mut Input) {
        let moment = match input {
            Input::Hook { observation } | Input::RelaunchUnwritten { observation, .. } => {
                &mut observation.moment
            }
            Input::Tool { moment, .. } | Input::Done { moment, .. } => moment,
            _ => return,
        };
        moment.context_window = self.limits_window(moment);
    }

    /// The door's last step: the model the output names (remembered as the host's, unless the
    /// input was a feed, whose output the host never reads on its own).
    pub(super) fn name_answer(&mut self, feed: bool) -> Option<ModelRef> {
        let latest = self.latest_answer().cloned();
        if !feed {
            self.answers.named = latest.clone();
        }
        latest
    }
}

#[cfg(test)]
mod tests;
