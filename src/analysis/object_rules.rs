//! What the API server refuses before any webhook (MD0003), on files: Kubernetes' own rules for
//! an object's identity and metadata, for every kind the files hold (the rules are in
//! `kube::object_rules`; the file source keeps what each document breaks), and the CRDs' own
//! OpenAPI schemas on the spec of Istio's and the Gateway API's objects (`kube::openapi`).

use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::formats::yaml::LineTree;
use crate::kube::openapi;
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
                messages::MD0003::message(violation.message.as_str()),
                Some(resource),
            ));
        }
    }
}

/// The CRDs' own schemas (`kube::openapi`) on the spec of every Istio and Gateway API object
/// read from a file: one MD0003 per error, at the field's line.
pub fn crd_schemas(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    for resource in snapshot.config.iter().filter(|r| r.origin.file.is_some()) {
        let object = &resource.object;
        let Some(schema) = openapi::schema_of(&object.api_version, &object.kind) else {
            continue;
        };
        for error in openapi::validate_spec(schema, &object.spec) {
            let mut reference = ResourceRef::of(resource);
            if let Some(line) = line_of(resource.origin.lines.as_ref(), &error.path) {
                reference.line = Some(line);
            }
            out.push(Finding::new(
                messages::MD0003::message(error.message.as_str()),
                Some(reference),
            ));
        }
    }
}

/// The line of the deepest node of the path that is in the file.
fn line_of(lines: Option<&LineTree>, path: &[openapi::Step]) -> Option<u32> {
    let mut node = lines?;
    for step in path {
        let next = match step {
            openapi::Step::Key(k) | openapi::Step::MapKey(k) => node.key(k),
            openapi::Step::Index(i) => node.index(*i),
        };
        match next {
            Some(n) => node = n,
            None => break,
        }
    }
    Some(node.line)
}
