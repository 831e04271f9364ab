//! The regexes of the CRDs' schemas (`pattern`) and of their CEL rules (`matches`), compiled
//! by Rust's `regex` once per thread: the same patterns repeat across objects.

use std::collections::HashMap;

/// `f` with `pattern` compiled by Rust's `regex` (`None` when it does not compile), each
/// pattern compiled once per thread: the schemas' and the CEL rules' patterns repeat.
pub fn with_regex<R>(pattern: &str, f: impl FnOnce(Option<&regex::Regex>) -> R) -> R {
    thread_local! {
        static CACHE: std::cell::RefCell<HashMap<String, Option<regex::Regex>>> =
            std::cell::RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let re = cache
            .entry(pattern.to_string())
            .or_insert_with(|| regex::Regex::new(pattern).ok());
        f(re.as_ref())
    })
}
