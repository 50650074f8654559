//! The texts of `/relay pin`, `/relay pins` and `/relay unpin` (the user reads them; the model
//! sees the pins only in the boot block, [`super::boot`]).

use crate::pins::{PinRefusal, MAX_PINS, PIN_MAX_CHARS};

/// `/relay pins`: every pin numbered as `/relay unpin` takes it, and how the list is bounded. The
/// first `defaults` pins come from `relay.pins` in the settings file `from` and say so.
pub fn render_pins(pins: &[String], defaults: usize, from: &str) -> String {
    if pins.is_empty() {
        return format!(
            "relay: no pinned instructions. /relay pin <text> adds one (at most {MAX_PINS}, {PIN_MAX_CHARS} characters each); every window's boot block repeats it until /relay unpin <n> removes it."
        );
    }
    let mut out = format!(
        "relay: {} of {MAX_PINS} pinned instructions (every new window's boot block repeats them; /relay unpin <n> removes one):",
        pins.len()
    );
    for (i, pin) in pins.iter().enumerate() {
        out.push_str(&format!("\n{}. {pin}", i + 1));
        if i < defaults {
            out.push_str(&format!("  ← relay.pins in {from}"));
        }
    }
    out
}

/// A pin was added: its number and when the model sees it.
pub fn render_pinned(pins: &[String]) -> String {
    format!(
        "relay: pinned as {} of {MAX_PINS}; every window's boot block repeats it from the next window on, until /relay unpin {} removes it.",
        pins.len(),
        pins.len()
    )
}

/// A pin was removed.
pub fn render_unpinned(n: usize, removed: &str, left: usize) -> String {
    format!(
        "relay: unpinned {n} ({removed:?}); the next window's boot block leaves it out. {left} pinned {} left.",
        if left == 1 { "instruction" } else { "instructions" }
    )
}

/// Why `/relay pin` or `/relay unpin` changed nothing, naming the limit (`from`: the settings file
/// that holds the default pins).
pub fn render_pin_refusal(refusal: &PinRefusal, from: &str) -> String {
    match refusal {
        PinRefusal::Empty => "relay: nothing pinned: /relay pin <text> takes the instruction to pin.".into(),
        PinRefusal::TooLong { chars } => format!(
            "relay: nothing pinned: a pin holds at most {PIN_MAX_CHARS} characters and this one has {chars}. Shorten it, or keep the details in a note and pin a pointer to it."
        ),
        PinRefusal::Full => format!(
            "relay: nothing pinned: at most {MAX_PINS} pins, and {MAX_PINS} are pinned. /relay pins lists them; /relay unpin <n> removes one."
        ),
        PinRefusal::Duplicate { n } => format!("relay: nothing pinned: this is pin {n} already."),
        PinRefusal::NoSuchPin { arg, count: 0 } => {
            format!("relay: nothing unpinned: there are no pins (asked for {arg:?}).")
        }
        PinRefusal::NoSuchPin { arg, count } => format!(
            "relay: nothing unpinned: {arg:?} is not a pin number; /relay unpin takes 1 to {count} (/relay pins lists them)."
        ),
        PinRefusal::FromSettings { n } => format!(
            "relay: nothing unpinned: pin {n} is a default pin from relay.pins in {from}; it stays in every window while the settings hold it (remove it there)."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FROM: &str = "project settings (.pi/settings.json)";

    #[test]
    fn the_pin_texts() {
        let pins = [
            "Never push to main; open a pull request.".to_string(),
            "Answer in British English.".to_string(),
        ];
        let refusals = [
            PinRefusal::Empty,
            PinRefusal::TooLong { chars: 612 },
            PinRefusal::Full,
            PinRefusal::Duplicate { n: 2 },
            PinRefusal::NoSuchPin {
                arg: "7".into(),
                count: 2,
            },
            PinRefusal::NoSuchPin {
                arg: "1".into(),
                count: 0,
            },
            PinRefusal::FromSettings { n: 1 },
        ];
        let mut all = vec![
            render_pins(&[], 0, FROM),
            render_pins(&pins, 0, FROM),
            render_pins(&pins[..1], 0, FROM),
            render_pins(&pins, 1, FROM),
            render_pinned(&pins),
            render_unpinned(1, &pins[0], 1),
        ];
        all.extend(refusals.iter().map(|r| render_pin_refusal(r, FROM)));
        insta::assert_snapshot!("pin_texts", all.join("\n---\n"));
    }
}
