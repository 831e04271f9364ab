//! The report: findings plus what could not be checked, and the rules applied to it
//! (suppression, namespace filter, order, thresholds).

use crate::findings::finding::Finding;
use crate::findings::messages::{self, Level};
use std::collections::HashMap;

use crate::kube::snapshot::{Located, Object, Snapshot};

/// The annotation that suppresses codes on the resource that carries it (comma separated, `*` for all).
pub const SUPPRESS_ANNOTATION: &str = "galley.istio.io/analyze-suppress";

/// Codes about istiod that a namespace scope keeps: MD0201 is emitted only when a namespace of
/// the input depends on that istiod, MD0205 is about the clusters analysed.
pub const SCOPE_WIDE: &[&str] = &["MD0201", "MD0205"];

/// Codes a namespace scope keeps when they are about a kind of resource every namespace depends
/// on: the mesh's root certificate (ConfigMap `istio-ca-root-cert`, read in `istio-system`).
pub const SCOPE_WIDE_KINDS: &[(&str, &str)] = &[("MD0410", "ConfigMap"), ("MD0411", "ConfigMap")];

/// A check that did not run, and why (RBAC denied a list, a probe timed out...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub check: String,
    pub reason: String,
}

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
}

impl Report {
    /// Sorts as istioctl does and drops exact duplicates.
    pub fn sort_and_dedup(&mut self) {
        // Each finding's line made once, for the sort and the de-duplication.
        let lined: Vec<(String, Finding)> = std::mem::take(&mut self.findings)
            .into_iter()
            .map(|f| (f.plain_line(), f))
            .collect();
        self.set_sorted(lined);
    }

    /// [`Report::sort_and_dedup`] of findings whose lines ([`Finding::plain_line`]) were made
    /// already (by the analyzers' threads), in place of the report's findings.
    pub fn set_sorted(&mut self, mut lined: Vec<(String, Finding)>) {
        lined.sort_by(|(la, a), (lb, b)| a.compare(la, b, lb));
        lined.dedup_by(|(la, _), (lb, _)| la == lb);
        self.findings = lined.into_iter().map(|(_, f)| f).collect();
    }

    /// True when a finding reaches the failure threshold.
    pub fn fails(&self, threshold: Level) -> bool {
        self.findings.iter().any(|f| f.level().reaches(threshold))
    }

    /// The findings to display.
    pub fn visible(&self, threshold: Level) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(move |f| f.level().reaches(threshold))
    }

    /// Keeps findings about cluster-scoped resources and about `namespace`, and the control-plane
    /// findings ([`SCOPE_WIDE`]) that concern it although their resource is istiod's.
    pub fn keep_namespace(&mut self, namespace: &str) {
        self.findings.retain(|f| {
            SCOPE_WIDE.contains(&f.code())
                || SCOPE_WIDE_KINDS.iter().any(|(code, kind)| {
                    f.code() == *code && f.resource.as_ref().is_some_and(|r| r.kind == *kind)
                })
                || f.resource
                    .as_ref()
                    .and_then(|r| r.owning_namespace())
                    .is_none_or(|ns| ns == namespace)
        });
    }

    /// Drops the findings about resources in a namespace one of `patterns` (globs, `*` for any
    /// run of characters) matches (`--exclude-namespace`); a Namespace is in itself.
    pub fn exclude_namespaces(&mut self, patterns: &[String]) {
        if patterns.is_empty() {
            return;
        }
        self.findings.retain(|f| {
            f.resource
                .as_ref()
                .and_then(|r| r.owning_namespace())
                .is_none_or(|ns| !patterns.iter().any(|p| glob(p, ns)))
        });
    }

    /// Applies `--suppress` rules and the suppress annotation of the resources in `snapshot`.
    pub fn suppress(&mut self, rules: &[Suppression], snapshot: &Snapshot) {
        let annotated = suppress_annotations(snapshot);
        if rules.is_empty() && annotated.is_empty() {
            return;
        }
        self.findings.retain(|f| {
            if !rules.is_empty() {
                let origin = f.origin().unwrap_or_default();
                if rules
                    .iter()
                    .any(|r| r.code.eq_ignore_ascii_case(f.code()) && glob(&r.resource, &origin))
                {
                    return false;
                }
            }
            let Some(r) = &f.resource else { return true };
            let key = (
                r.kind.as_str(),
                r.namespace.as_deref().unwrap_or(""),
                r.name.as_str(),
            );
            !annotated
                .get(&key)
                .is_some_and(|v| v.split(',').any(|code| code == "*" || code == f.code()))
        });
    }
}

/// (kind, namespace, name) -> the suppress annotation, for the objects that carry one.
fn suppress_annotations(snapshot: &Snapshot) -> HashMap<(&str, &str, &str), &str> {
    fn add<'a, T: Object>(
        map: &mut HashMap<(&'a str, &'a str, &'a str), &'a str>,
        items: &'a [Located<T>],
    ) {
        for o in items {
            if let Some(value) = o.object.annotation(SUPPRESS_ANNOTATION) {
                let kind = o.object.kind();
                let namespace = if kind == "Namespace" {
                    ""
                } else {
                    o.object.namespace().unwrap_or("")
                };
                map.insert((kind, namespace, o.object.name()), value);
            }
        }
    }
    let mut map = HashMap::new();
    add(&mut map, &snapshot.namespaces);
    add(&mut map, &snapshot.pods);
    add(&mut map, &snapshot.services);
    add(&mut map, &snapshot.workloads);
    add(&mut map, &snapshot.webhooks);
    add(&mut map, &snapshot.config_maps);
    map
}

/// One `-S CODE=RESOURCE` rule, e.g. `IST0103=Pod shop/*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suppression {
    pub code: String,
    pub resource: String,
}

impl Suppression {
    /// Parses a rule. An unknown code is accepted with a warning (returned), as istioctl does.
    /// The error is the message for the user; the caller makes it a usage error.
    pub fn parse(text: &str) -> Result<(Suppression, Option<String>), String> {
        let parts: Vec<&str> = text.split('=').collect();
        let [code, resource] = parts.as_slice() else {
            return Err(format!(
                "{text:?} is not a valid suppression: use CODE=RESOURCE, e.g. \"IST0103=Pod shop/*\""
            ));
        };
        let warning = messages::lookup(code).is_none().then(|| {
            format!("warning: suppression code '{code}' is not a code mesh-doctor emits; it will have no effect")
        });
        Ok((
            Suppression {
                code: code.trim().to_string(),
                resource: resource.trim().to_string(),
            },
            warning,
        ))
    }
}

/// `*` matches any run of characters; everything else matches itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, rest) = (parts[0], &parts[1..]);
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    let (last, middle) = rest
        .split_last()
        .expect("split on '*' with a '*' gives at least two parts");
    for part in middle {
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("Pod shop/*", "Pod shop/web-1"));
        assert!(glob("*", "anything"));
        assert!(glob("Pod */web", "Pod shop/web"));
        assert!(!glob("Pod */web", "Pod shop/web2"));
        assert!(glob("Pod shop/web", "Pod shop/web"));
        assert!(!glob("Pod shop/w*b*x", "Pod shop/web"));
        assert!(glob("a*a", "aa"));
        assert!(!glob("a*a", "a"));
    }

    #[test]
    fn suppression_syntax() {
        let (s, warning) = Suppression::parse("IST0103=Pod shop/*").unwrap();
        assert_eq!(s.resource, "Pod shop/*");
        assert!(warning.is_none());
        assert!(Suppression::parse("IST0103").is_err());
        assert!(Suppression::parse("IST9999=Pod a/b").unwrap().1.is_some());
    }
}
