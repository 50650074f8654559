//! The user's pinned instructions (`/relay pin <text>`, `/relay pins`, `/relay unpin <n>`):
//! standing instructions every window's boot block repeats verbatim until the user removes them.
//!
//! **Contract.**
//! - Only the user pins: the `/relay` command is the one way in (no tool writes a pin).
//! - The list lives on the session branch as [`crate::records::PinsRecord`] entries, each the
//!   whole list after a change; the newest on the branch is in force, so /reload, /tree, /fork and
//!   a resume keep it.
//! - A project can ship default pins (`relay.pins` in its settings, honoured only when Pi trusts
//!   the project; the global settings may hold some too): they come first in every window's
//!   list, and `/relay unpin` refuses them, naming where they are set ([`Pins`]).
//! - Bounded: at most [`MAX_PINS`] pins in force (defaults included) of at most [`PIN_MAX_CHARS`] characters each: the boot
//!   block grows by at most 5,461 characters with the markup and protocol line (about 1,370
//!   tokens at Pi's four characters a token). A pin past a limit is refused with a text naming
//!   the limit, never cut; a record read back past the limits (written by hand) is cut to them.

use crate::text::char_count;

/// How many pins the list holds at most.
pub const MAX_PINS: usize = 10;
/// One pin holds at most this many Unicode characters.
pub const PIN_MAX_CHARS: usize = 500;

/// Why a pin was not added or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinRefusal {
    /// `/relay pin` without text.
    Empty,
    /// The text has more than [`PIN_MAX_CHARS`] characters (it has `chars`).
    TooLong { chars: usize },
    /// The list already holds [`MAX_PINS`] pins.
    Full,
    /// The same text is pinned already, as pin `n` (1-based).
    Duplicate { n: usize },
    /// `/relay unpin` with an argument that is not the number of a pin (`count` pins exist).
    NoSuchPin { arg: String, count: usize },
    /// `/relay unpin n` of a default pin: it comes from `relay.pins` in the settings.
    FromSettings { n: usize },
}

/// The pins in force: a project's (or the user's global) default pins from the settings
/// (`relay.pins`, see `crate::settings`), then the ones pinned in this session that are not among
/// them. `/relay pins` numbers them in this order and `/relay unpin` takes that number.
#[derive(Debug, Clone, Copy)]
pub struct Pins<'a> {
    /// `relay.pins` from the settings in force (already within the limits).
    pub defaults: &'a [String],
    /// The session's own list: the newest `relay/pins` record on the branch.
    pub session: &'a [String],
}

impl Pins<'_> {
    /// The session's pins that are not also defaults.
    fn own(&self) -> Vec<String> {
        self.session
            .iter()
            .filter(|p| !self.defaults.contains(p))
            .cloned()
            .collect()
    }

    /// Every pin in force, defaults first, at most [`MAX_PINS`].
    pub fn in_force(&self) -> Vec<String> {
        let mut all = self.defaults.to_vec();
        all.extend(self.own());
        all.truncate(MAX_PINS);
        all
    }

    /// The session's list after pinning `text` (trimmed), or why not. The limit counts the
    /// defaults too: the boot block holds at most [`MAX_PINS`] pins.
    pub fn add(&self, text: &str) -> Result<Vec<String>, PinRefusal> {
        let text = text.trim();
        if text.is_empty() {
            return Err(PinRefusal::Empty);
        }
        let chars = char_count(text);
        if chars > PIN_MAX_CHARS {
            return Err(PinRefusal::TooLong { chars });
        }
        let all = self.in_force();
        if let Some(i) = all.iter().position(|p| p == text) {
            return Err(PinRefusal::Duplicate { n: i + 1 });
        }
        if all.len() >= MAX_PINS {
            return Err(PinRefusal::Full);
        }
        let mut next = self.own();
        next.push(text.to_string());
        Ok(next)
    }

    /// The session's list without pin `arg` (1-based, as `/relay pins` numbers them) and the
    /// removed text, or why not: a default pin is removed where it is set, not here.
    pub fn remove(&self, arg: &str) -> Result<(Vec<String>, String), PinRefusal> {
        let all = self.in_force();
        let refuse = || PinRefusal::NoSuchPin {
            arg: arg.trim().to_string(),
            count: all.len(),
        };
        let n: usize = arg.trim().parse().map_err(|_| refuse())?;
        if n == 0 || n > all.len() {
            return Err(refuse());
        }
        if n <= self.defaults.len() {
            return Err(PinRefusal::FromSettings { n });
        }
        let mut next = self.own();
        let removed = next.remove(n - 1 - self.defaults.len());
        Ok((next, removed))
    }
}

/// A list read back from the branch, within the limits: empty texts dropped, each cut to
/// [`PIN_MAX_CHARS`], the first [`MAX_PINS`] kept.
pub fn bounded(pins: Vec<String>) -> Vec<String> {
    pins.into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .map(|p| match p.char_indices().nth(PIN_MAX_CHARS) {
            Some((cut, _)) => p.get(..cut).unwrap_or_default().to_string(),
            None => p,
        })
        .take(MAX_PINS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("rule {i}")).collect()
    }

    fn add(session: &[String], text: &str) -> Result<Vec<String>, PinRefusal> {
        Pins {
            defaults: &[],
            session,
        }
        .add(text)
    }

    fn remove(session: &[String], arg: &str) -> Result<(Vec<String>, String), PinRefusal> {
        Pins {
            defaults: &[],
            session,
        }
        .remove(arg)
    }

    #[test]
    fn default_pins_come_first_count_toward_the_limit_and_are_not_unpinned_here() {
        let defaults = vec!["project rule".to_string()];
        let session = vec!["project rule".to_string(), "mine".to_string()];
        let pins = Pins {
            defaults: &defaults,
            session: &session,
        };
        assert_eq!(pins.in_force(), ["project rule", "mine"]);
        assert_eq!(
            pins.add("project rule"),
            Err(PinRefusal::Duplicate { n: 1 })
        );
        assert_eq!(pins.add("second").unwrap(), ["mine", "second"]);
        assert_eq!(pins.remove("1"), Err(PinRefusal::FromSettings { n: 1 }));
        assert_eq!(
            pins.remove("2").unwrap(),
            (Vec::<String>::new(), "mine".to_string())
        );
        let full = list(MAX_PINS - 1);
        let nearly = Pins {
            defaults: &full,
            session: &session,
        };
        assert_eq!(nearly.in_force().len(), MAX_PINS);
        assert_eq!(nearly.add("one more"), Err(PinRefusal::Full));
    }

    #[test]
    fn a_pin_is_added_trimmed_at_the_end() {
        let pins = add(&list(2), "  never push to main \n").unwrap();
        assert_eq!(pins, ["rule 1", "rule 2", "never push to main"]);
    }

    #[test]
    fn a_pin_past_a_limit_is_refused_and_the_limit_holds_exactly() {
        assert_eq!(add(&[], " \n "), Err(PinRefusal::Empty));
        let longest = "é".repeat(PIN_MAX_CHARS);
        assert_eq!(add(&[], &longest).unwrap(), std::slice::from_ref(&longest));
        assert_eq!(
            add(&[], &format!("{longest}x")),
            Err(PinRefusal::TooLong {
                chars: PIN_MAX_CHARS + 1
            })
        );
        assert_eq!(add(&list(MAX_PINS - 1), "last").unwrap().len(), MAX_PINS);
        assert_eq!(add(&list(MAX_PINS), "one more"), Err(PinRefusal::Full));
        assert_eq!(add(&list(3), "rule 2"), Err(PinRefusal::Duplicate { n: 2 }));
    }

    #[test]
    fn unpin_takes_the_listed_number() {
        let (pins, removed) = remove(&list(3), " 2 ").unwrap();
        assert_eq!(removed, "rule 2");
        assert_eq!(pins, ["rule 1", "rule 3"]);
        for bad in ["0", "4", "", "two", "-1"] {
            assert_eq!(
                remove(&list(3), bad),
                Err(PinRefusal::NoSuchPin {
                    arg: bad.into(),
                    count: 3
                }),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_list_read_back_is_cut_to_the_limits() {
        let mut pins = list(MAX_PINS + 3);
        pins[0] = "x".repeat(PIN_MAX_CHARS + 7);
        pins[1] = "   ".into();
        let read = bounded(pins);
        assert_eq!(read.len(), MAX_PINS);
        assert_eq!(read[0], "x".repeat(PIN_MAX_CHARS));
        assert_eq!(read[1], "rule 3");
    }
}
