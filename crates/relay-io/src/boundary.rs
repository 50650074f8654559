//! The panic boundary: no panic crosses into Pi.
//!
//! [`catch`] runs a piece of binding work and turns a panic into an error text (message and
//! source location). While it runs, the panic hook installed by [`quiet_panics`] records the
//! panic instead of printing it, so that the extension reports it exactly once; a panic outside
//! [`catch`] (there should be none) still goes to the previous hook.
//!
//! With the `test-panic` feature (never in the addon users load), [`inject`] panics at a named
//! entry point: `RELAY_TEST_PANIC=<method>:<detail>[,...]` (`<detail>` may be `*`) fires at the
//! first matching call after the variable takes a new value, once per value.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};

#[cfg(not(panic = "unwind"))]
compile_error!(
    "relay-io catches panics at the napi boundary and on job workers: it must be built with panic = \"unwind\" \
     (a panic = \"abort\" profile would let any panic kill Pi)"
);

thread_local! {
    /// How many [`catch`] calls are running on this thread.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
    /// The description of the panic caught last on this thread, set by the hook.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Install, once per process, the hook that records panics raised inside [`catch`].
pub fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let inside = CATCHING.try_with(Cell::get).unwrap_or(0) > 0;
            let recorded = inside
                && LAST
                    .try_with(|slot| match slot.try_borrow_mut() {
                        Ok(mut slot) => {
                            let message = payload_text(info.payload());
                            *slot = Some(match info.location() {
                                Some(at) => format!("{message} (at {}:{})", at.file(), at.line()),
                                None => message,
                            });
                            true
                        }
                        Err(_) => false,
                    })
                    .unwrap_or(false);
            if !recorded {
                previous(info);
            }
        }));
    });
}

fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Run `f`; a panic becomes `Err(description)`.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let _ = LAST.try_with(|slot| slot.try_borrow_mut().map(|mut s| *s = None));
    let _ = CATCHING.try_with(|n| n.set(n.get().saturating_add(1)));
    let result = catch_unwind(AssertUnwindSafe(f));
    let _ = CATCHING.try_with(|n| n.set(n.get().saturating_sub(1)));
    result.map_err(|payload| {
        let recorded = LAST
            .try_with(|slot| slot.try_borrow_mut().ok().and_then(|mut s| s.take()))
            .ok()
            .flatten();
        let text = recorded.unwrap_or_else(|| payload_text(&*payload));
        // A payload whose destructor panics must not escape: leak it (one small box per panic).
        std::mem::forget(payload);
        text
    })
}

/// Panic here when `RELAY_TEST_PANIC` names this entry point (test builds only).
#[cfg(feature = "test-panic")]
#[allow(clippy::panic)] // the whole point of the feature
pub fn inject(method: &str, detail: &dyn Fn() -> String) {
    use std::sync::Mutex;
    static FIRED: Mutex<Option<String>> = Mutex::new(None);
    let Ok(spec) = std::env::var("RELAY_TEST_PANIC") else {
        return;
    };
    let detail = detail();
    let named = spec.split(',').any(|want| {
        let (m, d) = want.trim().split_once(':').unwrap_or((want.trim(), "*"));
        m == method && (d == "*" || d == detail)
    });
    if !named {
        return;
    }
    {
        let mut fired = FIRED.lock().unwrap_or_else(|e| e.into_inner());
        if fired.as_deref() == Some(spec.as_str()) {
            return;
        }
        *fired = Some(spec);
    }
    panic!("relay test panic injected in {method}:{detail}");
}

/// Hold the calling worker until the file `RELAY_TEST_HOLD_<point>` names exists (test builds
/// only; at most 60 s): a test can then act while, say, a background load is still in flight.
/// `<gate>.held` is created when the hold begins, so a test can wait for that moment.
#[cfg(feature = "test-panic")]
pub fn hold(point: &str) {
    hold_unless(point, &std::sync::atomic::AtomicBool::new(false));
}

/// [`hold`], ended early once `cancelled` is set (a job nobody waits for any more).
#[cfg(feature = "test-panic")]
pub fn hold_unless(point: &str, cancelled: &std::sync::atomic::AtomicBool) {
    let Ok(gate) = std::env::var(format!("RELAY_TEST_HOLD_{point}")) else {
        return;
    };
    let _ = std::fs::write(format!("{gate}.held"), b"");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::path::Path::new(&gate).exists()
        && std::time::Instant::now() < until
        && !cancelled.load(std::sync::atomic::Ordering::Relaxed)
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[cfg(not(feature = "test-panic"))]
#[inline(always)]
pub fn hold(_point: &str) {}

#[cfg(not(feature = "test-panic"))]
#[inline(always)]
pub fn hold_unless(_point: &str, _cancelled: &std::sync::atomic::AtomicBool) {}

#[cfg(not(feature = "test-panic"))]
#[inline(always)]
pub fn inject(_method: &str, _detail: &dyn Fn() -> String) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_with_its_message_and_the_thread_goes_on() {
        // Quiet only inside `catch`: a failing assertion of this test still prints.
        quiet_panics();
        assert_eq!(catch(|| 7), Ok(7));
        let err = catch(|| -> u32 { panic!("boom {}", 42) }).unwrap_err();
        assert!(err.starts_with("boom 42 (at "), "{err}");
        assert!(
            err.contains("boundary.rs:"),
            "the hook recorded the location: {err}"
        );
        let err = catch(|| std::panic::panic_any(3u8)).unwrap_err();
        assert!(err.starts_with("a panic without a message"), "{err}");
        assert_eq!(catch(|| "still fine"), Ok("still fine"));
    }

    #[test]
    fn nested_catches_report_their_own_panic() {
        let outer = catch(|| {
            let inner = catch(|| -> () { panic!("inner") });
            assert!(inner.unwrap_err().starts_with("inner"));
            panic!("outer")
        });
        assert!(outer.unwrap_err().starts_with("outer"));
    }
}
