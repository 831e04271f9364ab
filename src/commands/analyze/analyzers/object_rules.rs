//! Kubernetes' own rules for an object's identity and metadata (MD0003): what `kubectl apply`
//! or the API server refuses before any webhook, for every kind the files hold. The rules are in
//! `kube::object_rules`; the file source keeps what each document breaks.

use crate::findings::messages::{self, Arg};
use crate::findings::{Finding, ResourceRef};
use crate::kube::snapshot::Snapshot;

/// One MD0003 per rule an object breaks, at the line of the field it names.
pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    for rejected in &snapshot.rejections {
        for (violation, line) in &rejected.object.violations {
            let mut resource = ResourceRef::of(rejected);
            if line.is_some() {
                resource.line = *line;
            }
            out.push(Finding::new(
                messages::MD0003,
                Some(resource),
                &[Arg::from(violation.message.as_str())],
            ));
        }
    }
}
