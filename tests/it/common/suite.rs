//! Suites that use a cluster take turns.
//!
//! Every suite is a module of the one test binary, so their tests run in one process's threads.
//! Before, each suite was its own binary and cargo ran the binaries one after another; a suite
//! could change cluster-wide state (delete every MutatingWebhookConfiguration, stop istiod on the
//! real node, install a cluster-scoped CRD) while only its own tests ran. [`enter`] keeps that:
//! the first cluster helper a test calls (`testenv()`, `real_env()`, ...) waits until no test of
//! another suite holds a cluster, and the test holds its suite's turn until its thread ends. Tests
//! of one suite still run side by side, as they did in their own binary; offline tests never wait.
//!
//! A test's suite is the first segment of its name (`e2e_trust::webhooks_...` → `e2e_trust`),
//! which the test harness gives the test's thread. With `--test-threads=1` the harness runs every
//! test on one thread with no such name: tests then run one at a time anyway, and nothing waits.

use std::cell::RefCell;
use std::sync::{Condvar, Mutex};

/// Which suite holds the clusters, and how many of its tests are in.
struct Turn {
    suite: Option<String>,
    tests: usize,
}

static TURN: Mutex<Turn> = Mutex::new(Turn {
    suite: None,
    tests: 0,
});
static CHANGED: Condvar = Condvar::new();

/// A test's place in its suite's turn, given back when the test's thread ends.
struct Place;

impl Drop for Place {
    fn drop(&mut self) {
        let mut turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        turn.tests -= 1;
        if turn.tests == 0 {
            turn.suite = None;
        }
        CHANGED.notify_all();
    }
}

thread_local! {
    static HELD: RefCell<Option<Place>> = const { RefCell::new(None) };
}

/// Waits until this test's suite may use the clusters; a no-op when the test already holds its
/// place or runs on a thread without a test's name.
pub fn enter() {
    let Some(suite) = std::thread::current()
        .name()
        .and_then(|name| name.split_once("::"))
        .map(|(suite, _)| suite.to_string())
    else {
        return;
    };
    HELD.with(|held| {
        if held.borrow().is_some() {
            return;
        }
        let mut turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        while turn.suite.as_deref().is_some_and(|holder| holder != suite) {
            turn = CHANGED.wait(turn).unwrap_or_else(|e| e.into_inner());
        }
        turn.suite = Some(suite);
        turn.tests += 1;
        *held.borrow_mut() = Some(Place);
    });
}
