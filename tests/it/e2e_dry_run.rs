//! The differential test of issue 27: the API server is the oracle for what `kubectl apply`
//! refuses. Each document of the corpus (`tests/fixtures/dry-run/`, one object per document,
//! each rejected object followed by its accepted twin) goes through `kubectl apply
//! --dry-run=server` on the test cluster (the real kube-apiserver, with Istio's and the Gateway
//! API's CRDs that `testenv/istiod-up.sh` applies) and through `analyze --use-kube=false -f`:
//! the verdicts must agree (rejected or not), every rejection mesh-doctor states must be in what
//! kubectl printed (same field, same wording), and every field the server names must be one
//! mesh-doctor names. A second test runs every other fixture of `tests/fixtures/`: no object
//! the API server accepts gets a rejection.

use crate::common;

use std::path::{Path, PathBuf};

use common::{TestEnv, testenv, unique};

/// The codes that say "the API server will reject this object".
const REJECTION_CODES: &[&str] = &["MD0003"];
const PREFIX: &str = "The API server will reject this object: ";

/// The documents of a multi-document YAML file (split on `---` lines), comments kept.
fn documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        if line == "---" || line.starts_with("--- ") {
            docs.push(String::new());
        } else {
            let doc = docs.last_mut().unwrap();
            doc.push_str(line);
            doc.push('\n');
        }
    }
    docs.retain(|d| {
        d.lines()
            .any(|l| l.starts_with("kind:") || l.starts_with("apiVersion:"))
    });
    docs
}

/// The first comment line of a document (the corpus names each case there).
fn title(doc: &str) -> String {
    doc.lines()
        .find_map(|l| l.strip_prefix("# "))
        .unwrap_or_else(|| doc.lines().next().unwrap_or(""))
        .to_string()
}

/// The field paths an API server error names (`metadata.name: Invalid value: ...`).
fn server_fields(stderr: &str) -> Vec<String> {
    const KINDS: &[&str] = &[
        ": Invalid value",
        ": Required value",
        ": Unsupported value",
        ": Too long",
        ": Too many",
        ": Forbidden",
        ": Duplicate value",
    ];
    // Not a rule of its own: the server's note that CEL rules did not run after other errors.
    const NOT_CHECKED: &str = "<nil>: Invalid value: null: some validation rules were not checked";
    let stderr = stderr.replace(NOT_CHECKED, "");
    let mut fields = Vec::new();
    for kind in KINDS {
        for (at, _) in stderr.match_indices(kind) {
            let before = &stderr[..at];
            let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
            fields.push(before[start..].to_string());
        }
    }
    fields.sort();
    fields.dedup();
    fields
}

/// True when kubectl's answer holds what mesh-doctor said: the whole message, or (for a refusal
/// of kubectl's own, which names no field) the part after the field, or the server's answer
/// the message quotes.
fn said_by_server(message: &str, stderr: &str) -> bool {
    if stderr.contains(message) {
        return true;
    }
    if let Some((_, answer)) = message.split_once("(the API server answers: ") {
        return stderr.contains(answer.trim_end_matches(')'));
    }
    message
        .split_once(": ")
        .is_some_and(|(_, rest)| stderr.contains(rest))
}

struct Verdict {
    server_rejects: bool,
    server_said: String,
    ours: Vec<String>,
}

fn verdict(env: &TestEnv, dir: &Path, n: usize, doc: &str) -> Verdict {
    let path = dir.join(format!("doc-{n}.yaml"));
    std::fs::write(&path, doc).unwrap();
    let file = path.to_str().unwrap();
    let server = env.kubectl_run(&["apply", "--dry-run=server", "-f", file], None);
    let ours = env.mesh_doctor(&["analyze", "--use-kube=false", "-f", file, "-o", "json"]);
    assert!(
        [0, 65, 79].contains(&ours.code),
        "mesh-doctor ended with {} on {doc}: {}",
        ours.code,
        ours.stderr
    );
    let ours = if ours.code == 65 {
        Vec::new()
    } else {
        common::differential::findings(&ours.stdout, "mesh-doctor")
            .into_iter()
            .filter(|(code, _, _)| REJECTION_CODES.contains(&code.as_str()))
            .map(|(_, _, message)| message.trim_start_matches(PREFIX).to_string())
            .collect()
    };
    Verdict {
        server_rejects: server.code != 0,
        server_said: format!("{}{}", server.stdout, server.stderr),
        ours,
    }
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(unique("mesh-doctor-dry-run"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
#[ignore = "needs the test cluster with Istio's CRDs (MESH_DOCTOR_TESTENV, testenv/istiod-up.sh)"]
fn the_api_server_and_mesh_doctor_agree_on_the_corpus() {
    let env = testenv();
    let dir = scratch();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dry-run");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let (mut objects, mut rejected, mut disagreements) = (0, 0, Vec::new());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in documents(&text) {
            objects += 1;
            let v = verdict(&env, &dir, objects, &doc);
            let case = format!("{}: {}", file.file_name().unwrap().display(), title(&doc));
            if v.server_rejects {
                rejected += 1;
            }
            let we_reject = !v.ours.is_empty();
            if v.server_rejects != we_reject {
                disagreements.push(format!(
                    "{case}\n  API server: {}\n  mesh-doctor: {:?}",
                    v.server_said.trim(),
                    v.ours
                ));
                continue;
            }
            for message in &v.ours {
                if !said_by_server(message, &v.server_said) {
                    disagreements.push(format!(
                        "{case}\n  mesh-doctor says: {message}\n  API server says: {}",
                        v.server_said.trim()
                    ));
                }
            }
            for field in server_fields(&v.server_said) {
                if !v.ours.iter().any(|m| m.starts_with(&format!("{field}: "))) {
                    disagreements.push(format!(
                        "{case}\n  the API server names {field}, mesh-doctor does not: {:?}\n  {}",
                        v.ours,
                        v.server_said.trim()
                    ));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "dry-run corpus: {objects} objects, {rejected} rejected by the API server, {} disagreements",
        disagreements.len()
    );
    assert!(objects >= 100, "the corpus has {objects} objects");
    assert!(
        rejected * 2 <= objects + 1,
        "each rejected object has its accepted twin"
    );
    assert!(
        disagreements.is_empty(),
        "{} disagreement(s):\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}

/// The document with its namespace moved into `namespace` when it names a valid one (the
/// fixtures' namespaces do not exist on the test cluster, and a dry run in a missing namespace
/// fails for that alone); an invalid one is kept, as it is what is checked. kubectl itself
/// reads the YAML (`create --dry-run=client -o json`); a document it cannot read stays as is.
fn into_namespace(env: &TestEnv, dir: &Path, doc: &str, namespace: &str) -> String {
    let path = dir.join("convert.yaml");
    std::fs::write(&path, doc).unwrap();
    let run = env.kubectl_run(
        &[
            "create",
            "--dry-run=client",
            "--validate=false",
            "-o",
            "json",
            "-f",
            path.to_str().unwrap(),
        ],
        None,
    );
    let Ok(mut object) = serde_json::from_str::<serde_json::Value>(&run.stdout) else {
        return doc.to_string();
    };
    if let Some(meta) = object.get_mut("metadata").and_then(|m| m.as_object_mut())
        && let Some(ns) = meta.get("namespace").and_then(|n| n.as_str())
        && !ns.is_empty()
        && ns
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        meta.insert("namespace".into(), namespace.into());
    }
    serde_json::to_string_pretty(&object).unwrap()
}

fn fixture_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if !path.ends_with("dry-run") {
                fixture_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

#[test]
#[ignore = "needs the test cluster with Istio's CRDs (MESH_DOCTOR_TESTENV, testenv/istiod-up.sh)"]
fn no_fixture_the_api_server_accepts_is_said_to_be_rejected() {
    let env = testenv();
    let dir = scratch();
    let namespace = unique("dry");
    env.kubectl(&["create", "namespace", &namespace]);
    let mut files = Vec::new();
    fixture_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
        &mut files,
    );
    files.sort();
    let (mut objects, mut said, mut false_rejections) = (0, 0, Vec::new());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in documents(&text) {
            objects += 1;
            // The scenario fixtures are templates: their tests put a namespace for `__NS__`.
            let doc = into_namespace(&env, &dir, &doc.replace("__NS__", &namespace), &namespace);
            let v = verdict(&env, &dir, objects, &doc);
            if v.ours.is_empty() {
                continue;
            }
            said += 1;
            let unconfirmed: Vec<&String> = v
                .ours
                .iter()
                .filter(|m| !v.server_rejects || !said_by_server(m, &v.server_said))
                .collect();
            if !unconfirmed.is_empty() {
                false_rejections.push(format!(
                    "{} ({}):\n  mesh-doctor: {unconfirmed:?}\n  API server: {}",
                    file.display(),
                    title(&doc),
                    v.server_said.trim()
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "fixtures: {objects} objects, {said} said to be rejected, {} not confirmed by the API server",
        false_rejections.len()
    );
    assert!(
        false_rejections.is_empty(),
        "{}",
        false_rejections.join("\n")
    );
}
