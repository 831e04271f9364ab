//! The file source: manifests (YAML or JSON, multi-document, `kind: List`) from files,
//! directories (with `-R`, recursively) and standard input, turned into a [`Snapshot`].

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::formats::yaml::{self, Document, LineTree};
use crate::istio::config::is_config_kind;
use crate::istio::credentials;
use crate::kube::snapshot::{
    ConfigObject, Located, Origin, SYSTEM_NAMESPACES, SecretKeys, Snapshot, Workload, WorkloadKind,
};

/// How to read files.
#[derive(Clone, Debug, Default)]
pub struct FileOptions {
    /// Descend into subdirectories of directory arguments.
    pub recursive: bool,
    /// The namespace given to namespaced objects that have none (kubectl's `-n`); `None` leaves
    /// them without one.
    pub default_namespace: Option<String>,
    /// The largest input (file or stdin) read, in bytes; `None` is [`DEFAULT_MAX_INPUT`].
    pub max_input: Option<u64>,
}

/// The default cap on one input's size (`--max-input-size`): 64 MiB.
pub const DEFAULT_MAX_INPUT: u64 = 64 << 20;
/// `--max-input-size`'s default as the flag takes it.
pub const DEFAULT_MAX_INPUT_FLAG: &str = "64Mi";

/// Reads one input ("-" is stdin) up to `limit` bytes; a larger one is bad input (65) naming
/// the file and the flag, and is never read to its end (`/dev/zero` stops at the cap).
pub fn read_capped(path: &Path, shown: &str, limit: u64) -> Result<Vec<u8>> {
    let read_error = |source| Error::ReadInput {
        path: path.to_path_buf(),
        source,
    };
    let mut buf = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .lock()
            .take(limit.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(read_error)?;
    } else {
        let file = std::fs::File::open(path).map_err(read_error)?;
        // Room for the whole file at once (the size is only a hint: the file may change).
        let size = file.metadata().map_or(0, |m| m.len()).min(limit);
        buf.reserve_exact(usize::try_from(size).unwrap_or(0).saturating_add(1));
        file.take(limit.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(read_error)?;
    }
    if buf.len() as u64 > limit {
        return Err(Error::Parse {
            location: shown.to_string(),
            message: format!(
                "larger than the input size limit of {} (--max-input-size); not read",
                crate::formats::duration::show_size(limit)
            ),
        });
    }
    Ok(buf)
}

/// The bytes as text; invalid UTF-8 is bad input naming its line and byte offset.
pub fn utf8_text(bytes: Vec<u8>, shown: &str, what: &str) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..offset];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = offset
            - before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1)
            + 1;
        Error::Parse {
            location: format!("{shown}:{line}:{column}"),
            message: format!(
                "not UTF-8 text (invalid byte 0x{:02x} at byte offset {offset}); {what}",
                e.as_bytes()[offset]
            ),
        }
    })
}

/// The kinds the analyzers read from files, each with the apiVersions it is read in (`"apps/"`
/// means any version of the group). The one list: a document of any other kind (or version) of
/// an Istio or Gateway API group ([`is_mesh_group`]) is counted as not analysed, said on stderr
/// and in the structured outputs (MD0002); other kinds are left aside. A new kind is added
/// here and given its arm in `add_object`.
pub const ANALYSED_KINDS: &[(&str, &[&str])] = &[
    ("Namespace", &["v1"]),
    ("Pod", &["v1"]),
    ("Service", &["v1"]),
    ("ConfigMap", &["v1"]),
    ("Event", &["v1"]),
    (
        "MutatingWebhookConfiguration",
        &["admissionregistration.k8s.io/"],
    ),
    ("PodDisruptionBudget", &["policy/v1"]),
    ("EndpointSlice", &["discovery.k8s.io/v1"]),
    ("NetworkPolicy", &["networking.k8s.io/v1"]),
    ("ProxyConfig", &["networking.istio.io/"]),
    ("MeshConfig", &[""]),
    ("Deployment", &["apps/"]),
    ("StatefulSet", &["apps/"]),
    ("DaemonSet", &["apps/"]),
    ("ReplicaSet", &["apps/"]),
    ("Job", &["batch/"]),
    ("CronJob", &["batch/"]),
    ("Node", &["v1"]),
    ("Secret", &["v1"]),
    // Istio's config kinds (crate::istio::config::groups()).
    ("VirtualService", ISTIO_NETWORKING),
    ("DestinationRule", ISTIO_NETWORKING),
    ("Gateway", ISTIO_NETWORKING),
    ("ServiceEntry", ISTIO_NETWORKING),
    ("Sidecar", ISTIO_NETWORKING),
    ("EnvoyFilter", ISTIO_NETWORKING),
    ("WorkloadEntry", ISTIO_NETWORKING),
    ("WorkloadGroup", ISTIO_NETWORKING),
    (
        "RequestAuthentication",
        &["security.istio.io/v1", "security.istio.io/v1beta1"],
    ),
    // Security, telemetry and extensions kinds.
    (
        "AuthorizationPolicy",
        &["security.istio.io/v1", "security.istio.io/v1beta1"],
    ),
    (
        "PeerAuthentication",
        &["security.istio.io/v1", "security.istio.io/v1beta1"],
    ),
    (
        "Telemetry",
        &["telemetry.istio.io/v1", "telemetry.istio.io/v1alpha1"],
    ),
    ("WasmPlugin", &["extensions.istio.io/v1alpha1"]),
    // Gateway API kinds, webhooks and CRDs.
    ("GatewayClass", GATEWAY_API),
    ("Gateway", GATEWAY_API),
    ("HTTPRoute", GATEWAY_API),
    ("GRPCRoute", GATEWAY_API),
    ("TCPRoute", GATEWAY_API),
    ("TLSRoute", GATEWAY_API),
    ("ReferenceGrant", GATEWAY_API),
    (
        "ValidatingWebhookConfiguration",
        &["admissionregistration.k8s.io/v1"],
    ),
    ("CustomResourceDefinition", &["apiextensions.k8s.io/v1"]),
    // Workload, annotation and mesh networks kinds.
];

/// The versions of `networking.istio.io` read (the same schema in all three).
const ISTIO_NETWORKING: &[&str] = &[
    "networking.istio.io/v1",
    "networking.istio.io/v1beta1",
    "networking.istio.io/v1alpha3",
];

/// The versions of `gateway.networking.k8s.io` read.
const GATEWAY_API: &[&str] = &[
    "gateway.networking.k8s.io/v1",
    "gateway.networking.k8s.io/v1beta1",
    "gateway.networking.k8s.io/v1alpha2",
];

/// True when an analyzer reads documents of this kind and apiVersion ([`ANALYSED_KINDS`]).
pub fn is_analysed(kind: &str, api_version: &str) -> bool {
    ANALYSED_KINDS.iter().any(|(k, versions)| {
        *k == kind
            && versions.iter().any(|v| {
                v.is_empty()
                    || api_version == *v
                    || (v.ends_with('/') && api_version.starts_with(v))
            })
    })
}

/// True for an apiVersion of an Istio group (`networking.istio.io`, `security.istio.io`...) or of
/// the Gateway API: a kind of these groups that no analyzer reads is a gap in the analysis; a
/// kind of any other group (ServiceAccount, ConfigMap, a cert-manager Certificate) is not.
pub fn is_mesh_group(api_version: &str) -> bool {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    group == "istio.io"
        || group.ends_with(".istio.io")
        || group == "gateway.networking.k8s.io"
        || group == "gateway.networking.x-k8s.io"
}

/// What was read, for `-v`, the "no issues" line and the not-analysed count.
#[derive(Debug, Default)]
pub struct LoadStats {
    pub files: Vec<String>,
    /// Documents parsed (the items of a `kind: List` count one each).
    pub documents: usize,
    /// Objects of an analysed kind given to the analyzers.
    pub objects: usize,
    /// Objects skipped because they are in a system namespace.
    pub system: usize,
    /// Documents of kinds no analyzer reads: kind (with its apiVersion when it is an analysed
    /// kind in another version) -> count.
    pub not_analysed: std::collections::BTreeMap<String, usize>,
    /// Documents of kinds no mesh analysis concerns (ServiceAccounts, ConfigMaps, Roles...):
    /// kind -> count. Not a gap in the analysis; only named when nothing else was analysable.
    pub other_kinds: std::collections::BTreeMap<String, usize>,
}

impl LoadStats {
    /// `3 documents of kinds not analysed: VirtualService (2), Gateway (1)`, or `None`.
    pub fn not_analysed_line(&self) -> Option<String> {
        if self.not_analysed.is_empty() {
            return None;
        }
        let total: usize = self.not_analysed.values().sum();
        let kinds: Vec<String> = self
            .not_analysed
            .iter()
            .map(|(k, n)| format!("{k} ({n})"))
            .collect();
        Some(format!(
            "{total} document{} of kinds not analysed: {}",
            if total == 1 { "" } else { "s" },
            kinds.join(", ")
        ))
    }

    fn add(&mut self, other: LoadStats) {
        self.documents += other.documents;
        self.objects += other.objects;
        self.system += other.system;
        for (kind, n) in other.not_analysed {
            *self.not_analysed.entry(kind).or_default() += n;
        }
        for (kind, n) in other.other_kinds {
            *self.other_kinds.entry(kind).or_default() += n;
        }
    }
}

/// Every file an argument names: the file itself, or the manifests in a directory.
pub fn expand_paths(args: &[PathBuf], recursive: bool) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut visited = std::collections::HashSet::new();
    for arg in args {
        if arg.as_os_str() == "-" {
            out.push(arg.clone());
            continue;
        }
        let meta = std::fs::metadata(arg).map_err(|source| Error::ReadInput {
            path: arg.clone(),
            source,
        })?;
        if meta.is_dir() {
            if visited.insert(identity(&meta)) {
                walk(arg, recursive, &mut out, &mut visited)?;
            }
        } else {
            out.push(arg.clone());
        }
    }
    Ok(out)
}

/// A directory's identity (device and inode): symlinks to one directory share it.
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// Lists a directory's manifests; with `recursive`, each real directory once, whatever the
/// symlinks to it (a link to `.` or to a parent would otherwise loop or read files again).
fn walk(
    dir: &Path,
    recursive: bool,
    out: &mut Vec<PathBuf>,
    visited: &mut std::collections::HashSet<(u64, u64)>,
) -> Result<()> {
    let read = |source| Error::ReadInput {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read)?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .map_err(read)?;
    entries.sort();
    for path in entries {
        let meta = std::fs::metadata(&path).ok();
        if let Some(meta) = meta.filter(std::fs::Metadata::is_dir) {
            if recursive && visited.insert(identity(&meta)) {
                walk(&path, recursive, out, visited)?;
            }
        } else if is_manifest(&path) {
            out.push(path);
        }
    }
    Ok(())
}

fn is_manifest(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

/// Reads every path into one snapshot. All parse problems are collected, so one run names them all.
/// Files are parsed on all cores; the result is the same as reading them one after the other.
pub fn load(args: &[PathBuf], options: &FileOptions) -> Result<(Snapshot, LoadStats), Vec<Error>> {
    let paths = expand_paths(args, options.recursive).map_err(|e| vec![e])?;
    let parts = crate::parallel::map(&paths, |_, path| load_file(path, options));
    let mut snapshot = Snapshot {
        // The clock the certificates in the files are judged against.
        read_at: Some(jiff::Timestamp::now()),
        ..Snapshot::default()
    };
    let mut stats = LoadStats::default();
    let mut errors = Vec::new();
    let mut read = Vec::new();
    for part in parts {
        match part {
            Ok((name, part, part_stats)) => {
                read.push(part);
                stats.files.push(name);
                stats.add(part_stats);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    snapshot.extend_all(read);
    if errors.is_empty() {
        Ok((snapshot, stats))
    } else {
        Err(errors)
    }
}

type FileResult = Result<(String, Snapshot, LoadStats), Vec<Error>>;

fn load_file(path: &Path, options: &FileOptions) -> FileResult {
    let limit = options.max_input.unwrap_or(DEFAULT_MAX_INPUT);
    let (name, text) = read_text(path, limit).map_err(|e| vec![e])?;
    let is_json = path.extension().is_some_and(|e| e == "json");
    let file: Arc<str> = Arc::from(name.as_str());
    let mut snapshot = Snapshot::default();
    let mut stats = LoadStats::default();
    load_text(&text, file, is_json, options, &mut snapshot, &mut stats)?;
    Ok((name, snapshot, stats))
}

fn read_text(path: &Path, limit: u64) -> Result<(String, String)> {
    let name = if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let bytes = read_capped(path, &name, limit)?;
    let text = utf8_text(bytes, &name, "manifests are YAML or JSON text")?;
    Ok((name, text))
}

/// Parses one file's text into `snapshot`.
pub fn load_text(
    text: &str,
    file: Arc<str>,
    is_json: bool,
    options: &FileOptions,
    snapshot: &mut Snapshot,
    stats: &mut LoadStats,
) -> Result<(), Vec<Error>> {
    let mut errors = Vec::new();
    let mut add = |doc: Document| {
        stats.documents += 1;
        let Document {
            value,
            lines,
            start_line,
        } = doc;
        let line = (!is_json).then_some(start_line);
        if let Err(e) = add_object(value, lines, line, &file, options, snapshot, stats) {
            errors.push(e);
        }
    };
    // One document at a time: each becomes its typed object before the next is read, so memory
    // follows what the analyzers keep, not the whole file's trees.
    let parsed = if is_json {
        yaml::parse_json(text).map(|docs| docs.into_iter().for_each(&mut add))
    } else {
        yaml::parse_stream_each(text, &mut add)
    };
    if let Err(e) = parsed {
        // A syntax error is the file's error: what its earlier documents said is not reported.
        return Err(vec![Error::Parse {
            location: format!("{file}:{}:{}", e.line, e.column),
            message: e.message,
        }]);
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn add_object(
    mut value: Value,
    lines: LineTree,
    line: Option<u32>,
    file: &Arc<str>,
    options: &FileOptions,
    snapshot: &mut Snapshot,
    stats: &mut LoadStats,
) -> Result<()> {
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if value.get("items").is_some_and(Value::is_array) && (kind == "List" || kind.ends_with("List"))
    {
        let Some(Value::Array(items)) = value.get_mut("items").map(Value::take) else {
            return Ok(());
        };
        for (i, item) in items.into_iter().enumerate() {
            let item_lines = lines
                .key("items")
                .and_then(|t| t.index(i))
                .cloned()
                .unwrap_or_default();
            let item_line = line.map(|_| item_lines.line);
            add_object(item, item_lines, item_line, file, options, snapshot, stats)?;
        }
        return Ok(());
    }
    if !value.is_object() {
        return Err(Error::Parse {
            location: location(file, line),
            message: "the document is not a Kubernetes object (expected a mapping with kind and metadata)".into(),
        });
    }
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let namespaced = !matches!(
        kind.as_str(),
        "Namespace"
            | "MutatingWebhookConfiguration"
            | "Node"
            | "ValidatingWebhookConfiguration"
            | "CustomResourceDefinition"
            | "GatewayClass"
    );
    if namespaced {
        default_namespace(&mut value, options.default_namespace.as_deref());
    }
    let ns_of = |v: &Value| -> Option<String> {
        let meta = v.get("metadata")?;
        if kind == "Namespace" {
            meta.get("name")?.as_str().map(str::to_string)
        } else {
            meta.get("namespace")?.as_str().map(str::to_string)
        }
    };
    if ns_of(&value).is_some_and(|ns| SYSTEM_NAMESPACES.contains(&ns.as_str())) {
        stats.system += 1;
        return Ok(());
    }
    reject(&value, &lines, line, file, &kind, snapshot);
    if !is_analysed(&kind, &api_version) && !is_mesh_group(&api_version) && !kind.is_empty() {
        *stats.other_kinds.entry(kind.clone()).or_default() += 1;
        return Ok(());
    }
    if !is_analysed(&kind, &api_version) {
        let key = if kind.is_empty() {
            "(no kind)".to_string()
        } else if ANALYSED_KINDS.iter().any(|(k, _)| *k == kind) {
            format!("{kind} {api_version}")
        } else {
            kind.clone()
        };
        *stats.not_analysed.entry(key).or_default() += 1;
        return Ok(());
    }
    stats.objects += 1;
    let origin = Origin {
        file: Some(file.clone()),
        line,
        // Istio's analyzers cite lines anywhere in an Istio config object's spec (a route's
        // destination, a server's port): those keep every line; the rest only the cited paths.
        lines: Some(
            if crate::istio::config::is_config_kind(&api_version, &kind) {
                lines
            } else {
                lines.pruned(crate::kube::snapshot::LINE_PATHS)
            },
        ),
        cluster: None,
    };
    let at = location(file, line);
    match kind.as_str() {
        "Namespace" => snapshot.namespaces.push(typed(value, origin, &at)?),
        "Pod" => snapshot.pods.push(typed(value, origin, &at)?),
        "Service" => snapshot.services.push(typed(value, origin, &at)?),
        "ConfigMap" => {
            let cm: Located<k8s_openapi::api::core::v1::ConfigMap> = typed(value, origin, &at)?;
            if let Some(mesh) = mesh_config_of(&cm.object) {
                snapshot.mesh_config = Some(mesh);
            }
            mesh_networks_fit(&cm.object, &at)?;
            snapshot.config_maps.push(cm);
        }
        "Event" => snapshot.events.push(typed(value, origin, &at)?),
        "MutatingWebhookConfiguration" => snapshot.webhooks.push(typed(value, origin, &at)?),
        "ValidatingWebhookConfiguration" => snapshot
            .validating_webhooks
            .push(typed(value, origin, &at)?),
        "CustomResourceDefinition" => snapshot.crds.push(Located {
            object: crd_meta(&value, &at)?,
            origin,
        }),
        "PodDisruptionBudget" => snapshot
            .pod_disruption_budgets
            .push(typed(value, origin, &at)?),
        "EndpointSlice" => snapshot.endpoint_slices.push(typed(value, origin, &at)?),
        "NetworkPolicy" => snapshot.network_policies.push(typed(value, origin, &at)?),
        "ProxyConfig" => snapshot.proxy_configs.push(Located {
            object: value,
            origin,
        }),
        "MeshConfig" => snapshot.mesh_config = Some(value),
        "Node" => snapshot.nodes.push(typed(value, origin, &at)?),
        "Secret" => snapshot.secrets.push(Located {
            object: secret_keys(&value, &at)?,
            origin,
        }),
        k if is_config_kind(&api_version, k) => snapshot.config.push(Located {
            object: config_object(value, &at)?,
            origin,
        }),
        other => {
            let Some(kind) = WorkloadKind::parse(other) else {
                return Err(Error::Internal(format!(
                    "{at}: kind {other} is in ANALYSED_KINDS but has no reader"
                )));
            };
            let object = workload(kind, value).map_err(|message| Error::Parse {
                location: at.clone(),
                message,
            })?;
            snapshot.workloads.push(Located { object, origin });
        }
    }
    Ok(())
}

/// Keeps the rules of Kubernetes' own that the document breaks (`kube::object_rules`), each
/// with the line of the node it cites (or the nearest node above it that is in the file).
fn reject(
    value: &Value,
    lines: &LineTree,
    line: Option<u32>,
    file: &Arc<str>,
    kind: &str,
    snapshot: &mut Snapshot,
) {
    let violations = crate::kube::object_rules::check(value);
    if violations.is_empty() {
        return;
    }
    let metadata = ObjectMeta {
        name: value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_string),
        namespace: value
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string),
        ..ObjectMeta::default()
    };
    let violations = violations
        .into_iter()
        .map(|v| {
            let mut node = lines;
            for key in &v.at {
                match node.key(key) {
                    Some(next) => node = next,
                    None => break,
                }
            }
            let at = line.map(|_| node.line);
            (v, at)
        })
        .collect();
    snapshot.rejections.push(Located {
        object: crate::kube::object_rules::Rejection {
            kind: kind.to_string(),
            metadata,
            violations,
        },
        origin: Origin {
            file: Some(file.clone()),
            line,
            lines: None,
            cluster: None,
        },
    });
}

fn location(file: &str, line: Option<u32>) -> String {
    match line {
        Some(line) => format!("{file}:{line}"),
        None => file.to_string(),
    }
}

fn default_namespace(value: &mut Value, namespace: Option<&str>) {
    let Some(namespace) = namespace else { return };
    let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let missing = meta
        .get("namespace")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if missing {
        meta.insert("namespace".into(), Value::String(namespace.to_string()));
    }
}

fn typed<T: DeserializeOwned>(value: Value, origin: Origin, at: &str) -> Result<Located<T>> {
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("object")
        .to_string();
    serde_json::from_value(value)
        .map(|object| Located { object, origin })
        .map_err(|e| Error::Parse {
            location: at.to_string(),
            message: format!("invalid {kind}: {e}"),
        })
}

/// An Istio config resource: metadata typed, the spec kept for the Istio layer to read.
fn config_object(mut value: Value, at: &str) -> Result<ConfigObject> {
    let str_of =
        |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let kind = str_of(&value, "kind");
    let metadata: ObjectMeta = serde_json::from_value(
        value.get("metadata").cloned().unwrap_or_default(),
    )
    .map_err(|e| Error::Parse {
        location: at.to_string(),
        message: format!("invalid {kind} metadata: {e}"),
    })?;
    Ok(ConfigObject {
        api_version: str_of(&value, "apiVersion"),
        spec: value
            .get_mut("spec")
            .map(Value::take)
            .unwrap_or(Value::Null),
        status: value
            .get_mut("status")
            .map(Value::take)
            .unwrap_or(Value::Null),
        kind,
        metadata,
    })
}

/// A CustomResourceDefinition's metadata; its schema is dropped here.
fn crd_meta(value: &Value, at: &str) -> Result<crate::kube::snapshot::CrdMeta> {
    let metadata: ObjectMeta = serde_json::from_value(
        value.get("metadata").cloned().unwrap_or_default(),
    )
    .map_err(|e| Error::Parse {
        location: at.to_string(),
        message: format!("invalid CustomResourceDefinition metadata: {e}"),
    })?;
    Ok(crate::kube::snapshot::CrdMeta { metadata })
}

/// A Secret's type, the names of its keys with a value and the facts of its public
/// certificates ([`credentials::PUBLIC_KEYS`]); every value is dropped here.
fn secret_keys(value: &Value, at: &str) -> Result<SecretKeys> {
    let metadata: ObjectMeta = serde_json::from_value(
        value.get("metadata").cloned().unwrap_or_default(),
    )
    .map_err(|e| Error::Parse {
        location: at.to_string(),
        message: format!("invalid Secret metadata: {e}"),
    })?;
    let mut data: Vec<(String, Vec<u8>)> = Vec::new();
    if let Some(map) = value.get("data").and_then(Value::as_object) {
        for (key, v) in map {
            // `data` is base64, as the API server takes it; a value that is not is refused there.
            let bytes: k8s_openapi::ByteString =
                serde_json::from_value(v.clone()).map_err(|e| Error::Parse {
                    location: at.to_string(),
                    message: format!("invalid Secret data {key:?}: {e}"),
                })?;
            data.push((key.clone(), bytes.0));
        }
    }
    if let Some(map) = value.get("stringData").and_then(Value::as_object) {
        for (key, v) in map {
            let text = v.as_str().unwrap_or_default();
            data.push((key.clone(), text.as_bytes().to_vec()));
        }
    }
    Ok(SecretKeys::reduce(
        metadata,
        value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("Opaque")
            .to_string(),
        data,
        credentials::PUBLIC_KEYS,
    ))
}

/// Reads a workload leniently: only metadata, replicas, selector and the pod template matter,
/// so a manifest that a newer API version extended still loads.
fn workload(kind: WorkloadKind, value: Value) -> Result<Workload, String> {
    let spec = value.get("spec").cloned().unwrap_or(Value::Null);
    let template_spec = if kind == WorkloadKind::CronJob {
        spec.pointer("/jobTemplate/spec")
            .cloned()
            .unwrap_or(Value::Null)
    } else {
        spec.clone()
    };
    let metadata: ObjectMeta =
        serde_json::from_value(value.get("metadata").cloned().unwrap_or_default())
            .map_err(|e| format!("invalid {} metadata: {e}", kind.as_str()))?;
    let template: PodTemplateSpec = match template_spec.get("template") {
        Some(t) => serde_json::from_value(t.clone())
            .map_err(|e| format!("invalid {} pod template: {e}", kind.as_str()))?,
        None => PodTemplateSpec::default(),
    };
    let selector: Option<LabelSelector> = match template_spec.get("selector") {
        Some(s) => serde_json::from_value(s.clone()).ok(),
        None => None,
    };
    let replicas = spec
        .get("replicas")
        .and_then(Value::as_i64)
        .and_then(|r| i32::try_from(r).ok());
    let owner = metadata
        .owner_references
        .as_ref()
        .and_then(|o| o.first())
        .map(|o| format!("{} {}", o.kind, o.name));
    Ok(Workload {
        kind,
        metadata,
        replicas,
        selector,
        template,
        owner,
    })
}

/// The `istio` ConfigMap carries the mesh config as YAML under `data.mesh`.
fn mesh_config_of(cm: &k8s_openapi::api::core::v1::ConfigMap) -> Option<Value> {
    use crate::kube::snapshot::Object;
    if cm.name() != "istio" {
        return None;
    }
    let text = cm.data.as_ref()?.get("mesh")?;
    yaml::parse_stream(text)
        .ok()?
        .into_iter()
        .next()
        .map(|d| d.value)
}

/// The `istio` ConfigMap's `meshNetworks` key, when present, must be MeshNetworks YAML: the
/// mesh networks analyzer would otherwise read nothing and say nothing.
fn mesh_networks_fit(cm: &k8s_openapi::api::core::v1::ConfigMap, at: &str) -> Result<()> {
    use crate::kube::snapshot::Object;
    let Some(text) = cm
        .data
        .as_ref()
        .and_then(|d| d.get("meshNetworks"))
        .filter(|_| cm.name() == "istio")
    else {
        return Ok(());
    };
    match crate::istio::mesh_networks::problem_in_text(text) {
        Some(problem) => Err(Error::Parse {
            location: at.to_string(),
            message: format!("invalid meshNetworks in ConfigMap istio: {problem}"),
        }),
        None => Ok(()),
    }
}

/// Reads a mesh config file (`--mesh-config`): YAML of the MeshConfig fields.
pub fn load_mesh_config(path: &Path, limit: u64) -> Result<Value> {
    let shown = path.display().to_string();
    let text = utf8_text(
        read_capped(path, &shown, limit)?,
        &shown,
        "a mesh config is YAML",
    )?;
    let docs = yaml::parse_stream(&text).map_err(|e| Error::Parse {
        location: format!("{}:{}:{}", path.display(), e.line, e.column),
        message: e.message,
    })?;
    Ok(docs.into_iter().next().map(|d| d.value).unwrap_or_default())
}

/// Reads a MeshNetworks file (`--mesh-networks`): YAML of the MeshNetworks fields
/// (`networks: {NAME: {endpoints: [...], gateways: [...]}}`), with its lines.
pub fn load_mesh_networks(path: &Path, limit: u64) -> Result<Located<Value>> {
    let shown = path.display().to_string();
    let text = utf8_text(
        read_capped(path, &shown, limit)?,
        &shown,
        "a mesh networks file is YAML",
    )?;
    let docs = yaml::parse_stream(&text).map_err(|e| Error::Parse {
        location: format!("{}:{}:{}", path.display(), e.line, e.column),
        message: e.message,
    })?;
    let Some(doc) = docs.into_iter().next() else {
        return Ok(Located::new(Value::Null));
    };
    if let Some(problem) = crate::istio::mesh_networks::problem(&doc.value) {
        return Err(Error::Parse {
            location: shown,
            message: format!("invalid MeshNetworks: {problem}"),
        });
    }
    Ok(Located {
        object: doc.value,
        origin: Origin {
            file: Some(Arc::from(shown.as_str())),
            line: Some(doc.start_line),
            lines: Some(doc.lines),
            cluster: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::snapshot::Object;

    fn load_str(text: &str) -> Result<Snapshot, Vec<Error>> {
        let mut snapshot = Snapshot::default();
        let mut stats = LoadStats::default();
        let options = FileOptions {
            recursive: false,
            default_namespace: Some("default".into()),
            max_input: None,
        };
        load_text(
            text,
            Arc::from("t.yaml"),
            false,
            &options,
            &mut snapshot,
            &mut stats,
        )?;
        Ok(snapshot)
    }

    #[test]
    fn lists_and_workloads() {
        let snapshot = load_str(
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: shop}\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: web, namespace: shop}\n  spec:\n    replicas: 3\n    template:\n      metadata: {labels: {app: web}}\n      spec:\n        containers: [{name: web, image: nginx}]\n---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers: [{name: job, image: busybox}]\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
        )
        .unwrap();
        assert_eq!(snapshot.namespaces.len(), 1);
        assert_eq!(snapshot.namespaces[0].origin.line, Some(4));
        assert_eq!(snapshot.workloads.len(), 2);
        assert_eq!(snapshot.workloads[0].object.replicas, Some(3));
        assert_eq!(snapshot.workloads[1].object.namespace(), Some("default"));
        assert_eq!(snapshot.workloads[1].object.kind(), "CronJob");
    }

    #[test]
    fn invalid_objects_name_file_and_line() {
        let errors = load_str("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: 5\n").unwrap_err();
        assert_eq!(errors.len(), 1);
        let text = errors[0].to_string();
        assert!(text.starts_with("t.yaml:5: invalid Pod"), "{text}");
    }

    #[test]
    fn a_syntax_error_is_the_files_only_error() {
        // Documents are read one at a time; an invalid object before the syntax error is not
        // reported beside it (the file as a whole cannot be read).
        let errors = load_str("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: 5\n---\na: [1, 2\nb: 3\n").unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        let text = errors[0].to_string();
        assert!(text.contains("t.yaml:8:"), "{text}");
    }

    #[test]
    fn system_namespaces_are_dropped() {
        let snapshot = load_str("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: kube-system}\nspec: {containers: [{name: a}]}\n").unwrap();
        assert!(snapshot.pods.is_empty());
    }
}
