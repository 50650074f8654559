//! The user's pinned instructions (`/relay pin <text>`, `/relay pins`, `/relay unpin <n>`):
//! standing instructions every window's boot block repeats verbatim until the user removes them.
//!
//! **Contract.**
//! - Only the user pins: the `/relay` command is the one way in (no tool writes a pin).
//! - The list lives on the session branch as [`crate::records::PinsRecord`] entries, each the
//!   whole list after a change; the newest on the branch is in force, so /reload, /tree, /fork and
//!   a resume keep it.
//! - Bounded: at most [`MAX_PINS`] pins of at most [`PIN_MAX_CHARS`] characters each: the boot
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
}

/// The list after pinning `text` (trimmed), or why not.
pub fn add(pins: &[String], text: &str) -> Result<Vec<String>, PinRefusal> {
    let text = text.trim();
    if text.is_empty() {
        return Err(PinRefusal::Empty);
    }
    let chars = char_count(text);
    if chars > PIN_MAX_CHARS {
        return Err(PinRefusal::TooLong { chars });
    }
    if let Some(i) = pins.iter().position(|p| p == text) {
        return Err(PinRefusal::Duplicate { n: i + 1 });
    }
    if pins.len() >= MAX_PINS {
        return Err(PinRefusal::Full);
    }
    let mut next = pins.to_vec();
    next.push(text.to_string());
    Ok(next)
}

/// The list without pin `arg` (1-based, as `/relay pins` numbers them) and the removed text, or
/// why not.
pub fn remove(pins: &[String], arg: &str) -> Result<(Vec<String>, String), PinRefusal> {
    let refuse = || PinRefusal::NoSuchPin {
        arg: arg.trim().to_string(),
        count: pins.len(),
    };
    let n: usize = arg.trim().parse().map_err(|_| refuse())?;
    if n == 0 || n > pins.len() {
        return Err(refuse());
    }
    let mut next = pins.to_vec();
    let removed = next.remove(n - 1);
    Ok((next, removed))
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
