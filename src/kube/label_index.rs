//! An index of label sets by (key, value), so that "does any pod match this selector" costs the
//! pods carrying the selector's rarest label, not every pod: analyzers ask it once per subset,
//! Gateway or Sidecar, over ten thousand pods (docs/performance.md).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::Pod;

use super::selector::labels_match;
use super::snapshot::{Located, Snapshot};

/// Label sets and, for each (key, value), the sets that carry it.
#[derive(Debug, Default)]
pub struct LabelIndex<'a> {
    sets: Vec<&'a BTreeMap<String, String>>,
    by_label: HashMap<(&'a str, &'a str), Vec<usize>>,
}

impl<'a> LabelIndex<'a> {
    pub fn new(sets: impl IntoIterator<Item = &'a BTreeMap<String, String>>) -> Self {
        let sets: Vec<&BTreeMap<String, String>> = sets.into_iter().collect();
        let mut by_label: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
        for (i, labels) in sets.iter().enumerate() {
            for (k, v) in labels.iter() {
                by_label
                    .entry((k.as_str(), v.as_str()))
                    .or_default()
                    .push(i);
            }
        }
        LabelIndex { sets, by_label }
    }

    /// True when some set has every label of `selector` (an empty selector matches any set).
    pub fn any_match(&self, selector: &BTreeMap<String, String>) -> bool {
        self.matching(selector).next().is_some()
    }

    /// The positions (in the order given to [`LabelIndex::new`]) of the sets that have every
    /// label of `selector`; every set for an empty selector.
    pub fn matching<'s>(
        &'s self,
        selector: &'s BTreeMap<String, String>,
    ) -> Box<dyn Iterator<Item = usize> + 's> {
        if selector.is_empty() {
            return Box::new(0..self.sets.len());
        }
        let mut rarest: Option<&Vec<usize>> = None;
        for (k, v) in selector {
            match self.by_label.get(&(k.as_str(), v.as_str())) {
                None => return Box::new(std::iter::empty()),
                Some(list) if rarest.is_none_or(|r| list.len() < r.len()) => rarest = Some(list),
                Some(_) => {}
            }
        }
        Box::new(
            rarest
                .into_iter()
                .flatten()
                .copied()
                .filter(move |&i| labels_match(selector, self.sets[i])),
        )
    }
}

/// The pods of a snapshot (in scope and, live with `-n`, beyond it) by label: the first pod a
/// selector picks, found without reading every pod (a Gateway's workload, for each Gateway).
#[derive(Debug, Default)]
pub struct PodsByLabel<'a> {
    pods: Vec<&'a Located<Pod>>,
    index: LabelIndex<'a>,
}

impl<'a> PodsByLabel<'a> {
    pub fn new(snapshot: &'a Snapshot) -> Self {
        static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
        let pods: Vec<&Located<Pod>> = snapshot.all_pods().collect();
        let index = LabelIndex::new(
            pods.iter()
                .map(|p| p.object.metadata.labels.as_ref().unwrap_or(&NO_LABELS)),
        );
        PodsByLabel { pods, index }
    }

    /// The first pod (in the snapshot's order) that has every label of `selector`.
    pub fn first(&self, selector: &BTreeMap<String, String>) -> Option<&'a Located<Pod>> {
        self.index.matching(selector).next().map(|i| self.pods[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn matches_as_a_scan_would() {
        let sets = [
            labels(&[("app", "a"), ("version", "v1")]),
            labels(&[("app", "b"), ("version", "v2")]),
        ];
        let index = LabelIndex::new(sets.iter());
        assert!(index.any_match(&labels(&[("app", "a")])));
        assert!(index.any_match(&labels(&[("app", "b"), ("version", "v2")])));
        assert!(!index.any_match(&labels(&[("app", "a"), ("version", "v2")])));
        assert!(!index.any_match(&labels(&[("app", "c")])));
        assert!(index.any_match(&labels(&[])));
        assert!(!LabelIndex::new([].iter()).any_match(&labels(&[])));
        assert_eq!(
            index
                .matching(&labels(&[("version", "v2")]))
                .collect::<Vec<_>>(),
            [1]
        );
        assert_eq!(index.matching(&labels(&[])).collect::<Vec<_>>(), [0, 1]);
    }
}
