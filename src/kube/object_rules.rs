//! Kubernetes' own rules for an object's identity and metadata, as `kubectl apply` and the API
//! server check them before any admission webhook runs: `apiVersion` and `kind` set, a name,
//! the name's syntax for the kind (RFC 1123 subdomain, RFC 1123 label, RFC 1035 label or a path
//! segment), the namespace's syntax, label keys and values, annotation keys and their total size.
//! The messages are the API server's (Kubernetes 1.34, `k8s.io/apimachinery`'s validation).
//! Pure: a document in, its violations out.

use serde_json::Value;

/// One rule the object breaks: the field path (`metadata.labels`), the path of keys to the
/// node whose line is cited, and the API server's message for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub field: String,
    pub at: Vec<String>,
    pub message: String,
}

/// An object `kubectl apply` or the API server refuses, with each rule it breaks and the line
/// of the node each cites (when read from YAML).
#[derive(Clone, Debug, Default)]
pub struct Rejection {
    pub kind: String,
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    pub violations: Vec<(Violation, Option<u32>)>,
}

/// What a kind's name must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// `NameIsDNSSubdomain`: most kinds, and every custom resource.
    Subdomain,
    /// `NameIsDNSLabel`: Namespaces.
    Label,
    /// `NameIsDNS1035Label`: Services.
    Dns1035,
    /// `ValidatePathSegmentName`: RBAC kinds.
    PathSegment,
    /// No rule beyond kubectl's own path-segment check (measured).
    Unchecked,
}

/// A built-in kind: its API group, its name rule and whether it lives in a namespace.
struct Builtin {
    group: &'static str,
    kind: &'static str,
    name: NameRule,
    namespaced: bool,
}

const fn b(group: &'static str, kind: &'static str, name: NameRule, namespaced: bool) -> Builtin {
    Builtin {
        group,
        kind,
        name,
        namespaced,
    }
}

use NameRule::{Dns1035, Label, PathSegment, Subdomain, Unchecked};

/// The built-in kinds whose rules are known (`pkg/apis/*/validation` of Kubernetes 1.34). A
/// built-in kind not listed has its metadata checked but not its name's syntax.
const BUILTINS: &[Builtin] = &[
    b("", "Namespace", Label, false),
    b("", "Service", Dns1035, true),
    b("", "Pod", Subdomain, true),
    b("", "ConfigMap", Subdomain, true),
    b("", "Secret", Subdomain, true),
    b("", "ServiceAccount", Subdomain, true),
    b("", "Endpoints", Subdomain, true),
    b("", "ReplicationController", Subdomain, true),
    b("", "LimitRange", Subdomain, true),
    b("", "ResourceQuota", Subdomain, true),
    b("", "Node", Subdomain, false),
    b("apps", "Deployment", Subdomain, true),
    b("apps", "ReplicaSet", Subdomain, true),
    b("apps", "DaemonSet", Subdomain, true),
    b("apps", "StatefulSet", Label, true),
    b("batch", "Job", Subdomain, true),
    b("batch", "CronJob", Subdomain, true),
    // Measured: the API server takes `istiod_pdb` (no name syntax beyond kubectl's own).
    b("policy", "PodDisruptionBudget", Unchecked, true),
    b("networking.k8s.io", "NetworkPolicy", Subdomain, true),
    b("networking.k8s.io", "Ingress", Subdomain, true),
    b("networking.k8s.io", "IngressClass", Subdomain, false),
    b("discovery.k8s.io", "EndpointSlice", Subdomain, true),
    b(
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        Subdomain,
        false,
    ),
    b(
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        Subdomain,
        false,
    ),
    b(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        Subdomain,
        false,
    ),
    b("rbac.authorization.k8s.io", "Role", PathSegment, true),
    b(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        PathSegment,
        true,
    ),
    b(
        "rbac.authorization.k8s.io",
        "ClusterRole",
        PathSegment,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        PathSegment,
        false,
    ),
    b("scheduling.k8s.io", "PriorityClass", Subdomain, false),
    b("storage.k8s.io", "StorageClass", Subdomain, false),
];

/// The API groups Kubernetes serves itself (objects of any other group are custom resources).
fn is_builtin_group(group: &str) -> bool {
    !group.contains('.') || group.ends_with(".k8s.io") && !group.starts_with("gateway.networking")
}

/// The cluster-scoped kinds of Istio's and the Gateway API's groups (the rest are namespaced).
const MESH_CLUSTER_SCOPED: &[&str] = &["GatewayClass"];

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The name rule and scope of a kind, when known: `(rule, Some(namespaced))`.
pub fn rules_of(api_version: &str, kind: &str) -> (Option<NameRule>, Option<bool>) {
    let group = group_of(api_version);
    if let Some(known) = BUILTINS.iter().find(|k| k.group == group && k.kind == kind) {
        return (Some(known.name), Some(known.namespaced));
    }
    if is_builtin_group(group) {
        return (None, None);
    }
    let mesh = group == "istio.io"
        || group.ends_with(".istio.io")
        || group == "gateway.networking.k8s.io"
        || group == "gateway.networking.x-k8s.io";
    let scope = mesh.then(|| !MESH_CLUSTER_SCOPED.contains(&kind));
    (Some(Subdomain), scope)
}

/// Every rule a document breaks, in the order the API server lists them.
pub fn check(doc: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let str_at = |key: &str| doc.get(key).and_then(Value::as_str).unwrap_or("");
    let api_version = str_at("apiVersion");
    let kind = str_at("kind");
    // Neither set: not taken for a Kubernetes object at all (an Envoy dump, a values file
    // beside the manifests), so nothing is said about it here.
    if api_version.is_empty() && kind.is_empty() {
        return out;
    }
    if api_version.is_empty() {
        push(
            &mut out,
            "apiVersion",
            &["apiVersion"],
            "apiVersion not set",
        );
    }
    if kind.is_empty() {
        push(&mut out, "kind", &["kind"], "kind not set");
    }
    let meta = doc.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let (rule, namespaced) = rules_of(api_version, kind);
    let generate_name = meta
        .and_then(|m| m.get("generateName"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() && !generate_name.is_empty() {
        // kubectl's own refusal: apply needs the name to find the live object.
        push(
            &mut out,
            "metadata.generateName",
            &["metadata", "generateName"],
            "cannot use generate name with apply",
        );
    } else if name.is_empty() {
        push(
            &mut out,
            "metadata.name",
            &["metadata"],
            "resource name may not be empty",
        );
    } else if !path_segment(name).is_empty() {
        // kubectl refuses it before asking the server (the name is a segment of the URL).
        push(
            &mut out,
            "metadata.name",
            &["metadata", "name"],
            &format!(
                "invalid resource name {}: [{}]",
                go_quote(name),
                path_segment(name).join(" ")
            ),
        );
    } else if let Some(rule) = rule {
        for problem in name_problems(rule, name) {
            out.push(invalid(
                "metadata.name",
                &["metadata", "name"],
                name,
                &problem,
            ));
        }
        kind_limits(group_of(api_version), kind, name, &mut out);
        if kind == "CustomResourceDefinition" && group_of(api_version) == "apiextensions.k8s.io" {
            crd_name(doc, name, &mut out);
        }
    }
    if namespaced == Some(true) {
        let namespace = meta
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if !namespace.is_empty() {
            for problem in dns1123_label(namespace) {
                out.push(invalid(
                    "metadata.namespace",
                    &["metadata", "namespace"],
                    namespace,
                    &format!(
                        "{problem} (the API server answers: namespaces {} not found)",
                        go_quote(namespace)
                    ),
                ));
            }
        }
    }
    if let Some(labels) = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    {
        for (key, value) in labels {
            let at = ["metadata", "labels", key.as_str()];
            for problem in qualified_name(key) {
                out.push(invalid("metadata.labels", &at, key, &problem));
            }
            let value = value.as_str().unwrap_or("");
            for problem in label_value(value) {
                out.push(invalid("metadata.labels", &at, value, &problem));
            }
        }
    }
    if let Some(annotations) = meta
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
    {
        let mut size = 0usize;
        for (key, value) in annotations {
            let at = ["metadata", "annotations", key.as_str()];
            for problem in qualified_name(&key.to_lowercase()) {
                out.push(invalid("metadata.annotations", &at, key, &problem));
            }
            size += key.len() + value.as_str().map_or(0, str::len);
        }
        if size > TOTAL_ANNOTATION_SIZE {
            push(
                &mut out,
                "metadata.annotations",
                &["metadata", "annotations"],
                &format!("Too long: may not be more than {TOTAL_ANNOTATION_SIZE} bytes"),
            );
        }
    }
    out
}

/// The limits some kinds put on a name beyond its syntax: a Namespace's name becomes the value
/// of its `kubernetes.io/metadata.name` label, a Job's of its template's `job-name` label (63
/// characters), a CronJob's leaves room for the suffix of its Jobs (52).
fn kind_limits(group: &str, kind: &str, name: &str, out: &mut Vec<Violation>) {
    let label = |field: &str, out: &mut Vec<Violation>| {
        for problem in label_value(name) {
            out.push(invalid(field, &["metadata", "name"], name, &problem));
        }
    };
    match (group, kind) {
        ("", "Namespace") => label("metadata.labels", out),
        ("batch", "Job") => label("spec.template.labels", out),
        ("batch", "CronJob") if name.len() > 52 => {
            out.push(invalid(
                "metadata.name",
                &["metadata", "name"],
                name,
                &too_long(52),
            ));
        }
        _ => {}
    }
}

/// `TotalAnnotationSizeLimitB`: 256 KiB.
const TOTAL_ANNOTATION_SIZE: usize = 256 * 1024;

fn push(out: &mut Vec<Violation>, field: &str, at: &[&str], message: &str) {
    out.push(Violation {
        field: field.to_string(),
        at: at.iter().map(|s| s.to_string()).collect(),
        message: format!("{field}: {message}"),
    });
}

fn invalid(field: &str, at: &[&str], value: &str, problem: &str) -> Violation {
    Violation {
        field: field.to_string(),
        at: at.iter().map(|s| s.to_string()).collect(),
        message: format!("{field}: Invalid value: {}: {problem}", go_quote(value)),
    }
}

/// A string quoted as Go's `%q` quotes it (the API server's `Invalid value: "..."`).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The problems of a name under a rule (empty when it is valid).
pub fn name_problems(rule: NameRule, name: &str) -> Vec<String> {
    match rule {
        NameRule::Subdomain => dns1123_subdomain(name),
        NameRule::Label => dns1123_label(name),
        NameRule::Dns1035 => dns1035_label(name),
        NameRule::PathSegment => path_segment(name),
        NameRule::Unchecked => Vec::new(),
    }
}

const LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

fn too_long(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}'")).collect();
    format!(
        "{message} (e.g. {}, regex used for validation is '{format}')",
        examples.join(",  or ")
    )
}

fn is_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !bytes.is_empty()
        && edge(bytes[0])
        && edge(bytes[bytes.len() - 1])
        && bytes.iter().all(|&c| edge(c) || c == b'-')
}

/// `IsDNS1123Label`.
pub fn dns1123_label(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push(too_long(63));
    }
    if !is_label(s) && s.contains('.') && s.split('.').all(is_label) {
        out.push("must not contain dots".to_string());
    } else if !is_label(s) {
        out.push(regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    out
}

/// `IsDNS1123Subdomain`.
pub fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 253 {
        out.push(too_long(253));
    }
    if !s.split('.').all(is_label) {
        out.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    out
}

/// `IsDNS1035Label`.
pub fn dns1035_label(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push(too_long(63));
    }
    if !is_label(s) || !s.as_bytes()[0].is_ascii_lowercase() {
        out.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_FMT,
            &["my-name", "abc-123"],
        ));
    }
    out
}

/// `ValidatePathSegmentName` (RBAC names).
pub fn path_segment(s: &str) -> Vec<String> {
    if s == "." || s == ".." {
        return vec![format!("may not be '{s}'")];
    }
    let mut out = Vec::new();
    for bad in ["/", "%"] {
        if s.contains(bad) {
            out.push(format!("may not contain '{bad}'"));
        }
    }
    out
}

fn is_qualified_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    let edge = |c: u8| c.is_ascii_alphanumeric();
    !bytes.is_empty()
        && edge(bytes[0])
        && edge(bytes[bytes.len() - 1])
        && bytes
            .iter()
            .all(|&c| edge(c) || c == b'-' || c == b'_' || c == b'.')
}

/// `IsQualifiedName`: label keys and (lowercased) annotation keys.
pub fn qualified_name(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                out.push("prefix part must be non-empty".to_string());
            } else {
                for problem in dns1123_subdomain(prefix) {
                    out.push(format!("prefix part {problem}"));
                }
            }
            name
        }
        _ => {
            out.push(regex_error(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                QUALIFIED_FMT,
                &["MyName", "my.name", "123-abc"],
            ) + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
            return out;
        }
    };
    if name.is_empty() {
        out.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        out.push(format!("name part {}", too_long(63)));
    }
    if !name.is_empty() && !is_qualified_part(name) {
        out.push(format!(
            "name part {}",
            regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                QUALIFIED_FMT,
                &["MyName", "my.name", "123-abc"],
            )
        ));
    }
    out
}

/// `IsValidLabelValue`.
pub fn label_value(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push(too_long(63));
    }
    if !s.is_empty() && !is_qualified_part(s) {
        out.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    out
}

/// A CustomResourceDefinition's name is `<spec.names.plural>.<spec.group>`.
fn crd_name(doc: &Value, name: &str, out: &mut Vec<Violation>) {
    let spec = doc.get("spec");
    let plural = spec
        .and_then(|s| s.pointer("/names/plural"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let group = spec
        .and_then(|s| s.get("group"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        out.push(invalid(
            "metadata.name",
            &["metadata", "name"],
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(doc: Value) -> Vec<String> {
        check(&doc).into_iter().map(|v| v.message).collect()
    }

    #[test]
    fn a_valid_object_breaks_nothing() {
        let doc = json!({"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
            "metadata": {"name": "reviews.bookinfo", "namespace": "bookinfo",
                "labels": {"app.kubernetes.io/name": "reviews", "empty": ""},
                "annotations": {"Example.com/Note": "anything at all"}}});
        assert_eq!(messages(doc), Vec::<String>::new());
    }

    #[test]
    fn an_underscore_in_a_name_is_not_a_subdomain() {
        let doc = json!({"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
            "metadata": {"name": "dr_bookinfo3"}});
        assert_eq!(
            messages(doc),
            [
                "metadata.name: Invalid value: \"dr_bookinfo3\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
    }

    #[test]
    fn a_service_name_is_a_dns_1035_label_and_must_be_given() {
        let doc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1st"}});
        let got = messages(doc);
        assert_eq!(got.len(), 1);
        assert!(got[0].contains("a DNS-1035 label"));
        let doc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {}});
        assert_eq!(
            messages(doc),
            ["metadata.name: resource name may not be empty"]
        );
    }

    #[test]
    fn rbac_names_are_path_segments() {
        let doc = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "System:Reader_1"}});
        assert_eq!(messages(doc), Vec::<String>::new());
        let doc = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "a/b"}});
        assert_eq!(
            messages(doc),
            ["metadata.name: invalid resource name \"a/b\": [may not contain '/']"]
        );
    }

    #[test]
    fn label_keys_values_and_annotation_keys() {
        let doc = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "labels": {"bad key": "ok", "ok": "bad value!", "a/b/c": "x"},
            "annotations": {"/empty-prefix": "x"}}});
        let got = messages(doc);
        assert_eq!(got.len(), 4, "{got:#?}");
        assert!(
            got[0]
                .starts_with("metadata.labels: Invalid value: \"bad key\": name part must consist")
        );
        assert!(
            got[1].starts_with("metadata.labels: Invalid value: \"bad value!\": a valid label")
        );
        assert!(got[2].starts_with("metadata.labels: Invalid value: \"a/b/c\": a qualified name"));
        assert_eq!(
            got[3],
            "metadata.annotations: Invalid value: \"/empty-prefix\": prefix part must be non-empty"
        );
    }

    #[test]
    fn missing_kind_and_api_version_and_a_bad_namespace() {
        let doc = json!({"kind": "Pod", "metadata": {"name": "x"}});
        assert_eq!(messages(doc), ["apiVersion: apiVersion not set"]);
        let doc = json!({"apiVersion": "v1", "metadata": {"name": "x"}});
        assert_eq!(messages(doc), ["kind: kind not set"]);
        let doc = json!({"configs": [], "metadata": {"name": "x"}});
        assert_eq!(messages(doc), Vec::<String>::new());
        let doc = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "Bad_NS"}});
        assert!(messages(doc)[0].starts_with(
            "metadata.namespace: Invalid value: \"Bad_NS\": a lowercase RFC 1123 label"
        ));
    }
}
