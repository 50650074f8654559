//! What the whole-engine and scheduler property tests share: their case count, and where a
//! failing case is kept.
//!
//! - **Cases**: `RELAY_PROPTEST_CASES` when it is set (`make test` sets it higher than the
//!   default `cargo test` and `make check` use), else the test's own default.
//! - **Failures are kept**: proptest appends each failing case's seed to
//!   `<test file stem>.proptest-regressions` next to the test file (committed, so a failure found
//!   once runs first in every later run, anywhere), and the seed is also printed to stderr, so it
//!   is not lost when the file cannot be written (a read-only checkout, a CI machine).

use std::any::Any;
use std::fmt;

use proptest::test_runner::{FailurePersistence, FileFailurePersistence, PersistedSeed};

/// The case count: `RELAY_PROPTEST_CASES` when set to a number, else `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("RELAY_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The failure persistence of these tests (see the module documentation).
pub fn kept() -> Option<Box<dyn FailurePersistence>> {
    Some(Box::new(Kept(FileFailurePersistence::WithSource(
        "proptest-regressions",
    ))))
}

/// proptest's file persistence, and each saved seed printed as the line the file gets.
#[derive(Debug, Clone, PartialEq)]
struct Kept(FileFailurePersistence);

impl FailurePersistence for Kept {
    fn load_persisted_failures2(&self, source_file: Option<&'static str>) -> Vec<PersistedSeed> {
        self.0.load_persisted_failures2(source_file)
    }

    fn save_persisted_failure2(
        &mut self,
        source_file: Option<&'static str>,
        seed: PersistedSeed,
        shrunken_value: &dyn fmt::Debug,
    ) {
        eprintln!(
            "proptest: failing seed of {}: {seed} (kept in the test's .proptest-regressions file, \
             which runs it first every time)",
            source_file.unwrap_or("this test"),
        );
        self.0
            .save_persisted_failure2(source_file, seed, shrunken_value);
    }

    fn box_clone(&self) -> Box<dyn FailurePersistence> {
        Box::new(self.clone())
    }

    fn eq(&self, other: &dyn FailurePersistence) -> bool {
        other
            .as_any()
            .downcast_ref::<Self>()
            .is_some_and(|o| o == self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
