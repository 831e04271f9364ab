//! Shell completion and man pages.
//!
//! - `completion SHELL`: clap_complete's script for `kubectl-mesh_doctor` (bash, zsh, fish,
//!   powershell), or with `kubectl` the `kubectl_complete-mesh_doctor` script kubectl ≥ 1.26 runs
//!   to complete `kubectl mesh-doctor <TAB>`.
//! - `__complete WORDS...` (hidden): kubectl's plugin completion protocol. The words after
//!   `mesh-doctor`, the last one being completed (maybe empty); prints one candidate a line, then
//!   `:DIRECTIVE` (cobra's: 0 = the shell may complete file names, 4 = it may not). Commands,
//!   flags and flag values come from the clap definitions; namespaces, pod names and contexts
//!   from the kubeconfig and the cluster, with a short timeout (nothing is printed when the
//!   cluster does not answer).
//! - `__man DIR` (hidden): the man pages (clap_mangen), one per command, for the release archive.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::cli::KubeArgs;
use crate::error::{Error, Result};
use crate::exit;
use crate::output::write;
use crate::request::Global;

/// The name of the executable kubectl runs for the plugin's completions.
pub const KUBECTL_COMPLETE: &str = "kubectl_complete-mesh_doctor";
/// The plugin's executable.
pub const BIN: &str = "kubectl-mesh_doctor";

/// cobra's ShellCompDirectiveDefault: the shell may fall back to file names.
const FILES: u8 = 0;
/// cobra's ShellCompDirectiveNoFileComp.
const NO_FILES: u8 = 4;
/// How long completion waits for the cluster.
const CLUSTER_TIMEOUT: Duration = Duration::from_secs(3);

const COMPLETION_AFTER_HELP: &str = "\
Examples:
  # bash, for kubectl-mesh_doctor typed directly
  source <(kubectl mesh-doctor completion bash)

  # kubectl mesh-doctor <TAB> (kubectl 1.26 or newer): a script on PATH that kubectl runs
  kubectl mesh-doctor completion kubectl > ~/.local/bin/kubectl_complete-mesh_doctor
  chmod +x ~/.local/bin/kubectl_complete-mesh_doctor

The kubectl script completes commands, flags, flag values, namespaces, contexts and pod names
(from the cluster, when it answers within 3s). The release archive ships it, and the scripts
for every shell, in completions/.";

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
    /// The kubectl_complete-mesh_doctor script for `kubectl mesh-doctor <TAB>`
    Kubectl,
}

#[derive(Debug, Args)]
#[command(after_help = COMPLETION_AFTER_HELP)]
pub struct CompletionArgs {
    /// The shell to write the script for
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

/// The script kubectl runs for `kubectl mesh-doctor <TAB>`: it hands the words to `__complete`.
pub fn kubectl_script() -> String {
    format!(
        "#!/bin/sh\n# kubectl runs this for `kubectl mesh-doctor <TAB>` (kubectl 1.26 or newer).\nexec {BIN} __complete \"$@\"\n"
    )
}

pub fn run(args: CompletionArgs) -> Result<u8> {
    let text = match args.shell {
        Shell::Kubectl => kubectl_script(),
        shell => script(shell),
    };
    write::stdout(&text).map_err(Error::Output)?;
    Ok(exit::OK)
}

/// clap_complete's script for a shell, for the executable's own name.
pub fn script(shell: Shell) -> String {
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
        Shell::Powershell => clap_complete::Shell::PowerShell,
        Shell::Kubectl => return kubectl_script(),
    };
    let mut command = crate::cli::command().name(BIN).bin_name(BIN);
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, BIN, &mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    if shell == clap_complete::Shell::Bash {
        // clap_complete 4.6 names the root's case `kubectl__mesh_doctor` but the subcommands'
        // `kubectl__subcmd__mesh_doctor__...` when the binary's name has a `-`: one name for both.
        text.replace("kubectl__subcmd__mesh_doctor", "kubectl__mesh_doctor")
    } else {
        text
    }
}

/// Writes one man page per command into `dir`.
pub fn man(dir: &std::path::Path) -> Result<u8> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Usage(format!("cannot create {}: {e}", dir.display())))?;
    let mut command = crate::cli::command().name(BIN).bin_name(BIN);
    command.build();
    write_pages(&command, BIN, dir)?;
    Ok(exit::OK)
}

fn write_pages(command: &clap::Command, name: &str, dir: &std::path::Path) -> Result<()> {
    let page = command.clone().name(name.to_string());
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| Error::Internal(e.to_string()))?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, out)
        .map_err(|e| Error::Usage(format!("cannot write {}: {e}", path.display())))?;
    for sub in command.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir)?;
    }
    Ok(())
}

/// What the words before the one being completed say.
#[derive(Debug, Default)]
pub struct Position {
    /// The (sub)command path, e.g. `["bootstrap", "explain"]`.
    pub path: Vec<String>,
    /// The flag whose value is being completed (its long name, or short as one char).
    pub value_of: Option<String>,
    /// Positional arguments already given to the innermost command.
    pub positionals: usize,
    /// The kubeconfig flags already given.
    pub kube: KubeArgs,
}

/// What to offer: static candidates, or a cluster look-up.
#[derive(Debug, PartialEq, Eq)]
pub enum Wanted {
    Words(Vec<String>, u8),
    Namespaces,
    Pods,
    Contexts,
}

fn find_arg<'a>(command: &'a clap::Command, word: &str) -> Option<&'a clap::Arg> {
    let word = word.split('=').next().unwrap_or(word);
    if let Some(long) = word.strip_prefix("--") {
        command.get_arguments().find(|a| {
            a.get_long() == Some(long) || a.get_all_aliases().is_some_and(|al| al.contains(&long))
        })
    } else if let Some(short) = word.strip_prefix('-') {
        let c = short.chars().last()?;
        command.get_arguments().find(|a| a.get_short() == Some(c))
    } else {
        None
    }
}

fn takes_value(arg: &clap::Arg) -> bool {
    arg.get_action().takes_values()
}

/// Reads the words before the one being completed against the command tree.
pub fn position(root: &clap::Command, before: &[String]) -> Position {
    let mut pos = Position::default();
    let mut command = root.clone();
    command.build();
    let mut i = 0;
    while i < before.len() {
        let word = &before[i];
        if word.starts_with('-') && word != "-" {
            let Some(arg) = find_arg(&command, word) else {
                i += 1;
                continue;
            };
            let inline = word.starts_with("--") && word.contains('=')
                || !word.starts_with("--") && word.len() > 2;
            let value = if takes_value(arg) && !inline {
                i += 1;
                match before.get(i) {
                    Some(v) => Some(v.clone()),
                    None => {
                        pos.value_of = Some(arg.get_id().to_string());
                        return pos;
                    }
                }
            } else if inline {
                word.split_once('=')
                    .map(|(_, v)| v.to_string())
                    .or_else(|| Some(word[2..].to_string()))
            } else {
                None
            };
            if let Some(value) = value {
                match arg.get_id().as_str() {
                    "namespace" => pos.kube.namespace = Some(value),
                    "context" => pos.kube.context.push(value),
                    "kubeconfig" => pos.kube.kubeconfig = Some(PathBuf::from(value)),
                    "cluster" => pos.kube.cluster = Some(value),
                    "user" => pos.kube.user = Some(value),
                    _ => {}
                }
            }
        } else {
            let found = command
                .get_subcommands()
                .find(|s| s.get_name() == word || s.get_all_aliases().any(|a| a == word))
                .cloned();
            match found {
                Some(sub) => {
                    pos.path.push(sub.get_name().to_string());
                    pos.positionals = 0;
                    command = sub;
                }
                None => pos.positionals += 1,
            }
        }
        i += 1;
    }
    pos
}

fn innermost(root: &clap::Command, path: &[String]) -> clap::Command {
    let mut command = root.clone();
    command.build();
    for name in path {
        if let Some(sub) = command.find_subcommand(name).cloned() {
            command = sub;
        }
    }
    command
}

/// What to offer for the word being completed, given the words before it.
pub fn wanted(root: &clap::Command, before: &[String], current: &str) -> Wanted {
    let pos = position(root, before);
    let command = innermost(root, &pos.path);
    if let Some(id) = &pos.value_of {
        return match id.as_str() {
            "namespace" | "istio_namespace" => Wanted::Namespaces,
            "context" => Wanted::Contexts,
            _ => {
                let arg = command.get_arguments().find(|a| a.get_id() == id.as_str());
                let values: Vec<String> = arg
                    .map(|a| {
                        a.get_possible_values()
                            .into_iter()
                            .filter(|v| !v.is_hide_set())
                            .map(|v| v.get_name().to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                if values.is_empty() {
                    Wanted::Words(Vec::new(), FILES)
                } else {
                    Wanted::Words(values, NO_FILES)
                }
            }
        };
    }
    if current.starts_with('-') {
        let mut flags = Vec::new();
        for arg in command.get_arguments() {
            if arg.is_hide_set() || arg.is_positional() {
                continue;
            }
            if let Some(long) = arg.get_long() {
                flags.push(format!("--{long}"));
            }
            if let Some(short) = arg.get_short() {
                flags.push(format!("-{short}"));
            }
        }
        return Wanted::Words(flags, NO_FILES);
    }
    let subcommands: Vec<String> = command
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect();
    if !subcommands.is_empty() {
        return Wanted::Words(subcommands, NO_FILES);
    }
    let positional = command
        .get_arguments()
        .filter(|a| a.is_positional())
        .nth(pos.positionals.min(1))
        .or_else(|| command.get_arguments().find(|a| a.is_positional()));
    match positional {
        Some(arg) => {
            let name = arg
                .get_value_names()
                .and_then(|v| v.first())
                .map(|v| v.to_string())
                .unwrap_or_default();
            let values: Vec<String> = arg
                .get_possible_values()
                .into_iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| v.get_name().to_string())
                .collect();
            if !values.is_empty() {
                Wanted::Words(values, NO_FILES)
            } else if (name == "POD" || name == "NAME") && pos.positionals == 0 {
                Wanted::Pods
            } else {
                Wanted::Words(Vec::new(), FILES)
            }
        }
        None => Wanted::Words(Vec::new(), NO_FILES),
    }
}

/// `__complete WORDS...`: the words after `mesh-doctor`, the last one being completed.
pub async fn complete(mut words: Vec<String>) -> Result<u8> {
    let current = words.pop().unwrap_or_default();
    let root = crate::cli::command();
    let pos = position(&root, &words);
    let (candidates, directive) = match wanted(&root, &words, &current) {
        Wanted::Words(words, directive) => (words, directive),
        Wanted::Contexts => (contexts(&pos.kube), NO_FILES),
        Wanted::Namespaces => (namespaces(&pos.kube).await, NO_FILES),
        Wanted::Pods => (pods(&pos.kube).await, NO_FILES),
    };
    let mut out = String::new();
    for c in candidates
        .iter()
        .filter(|c| c.starts_with(current.as_str()))
    {
        out.push_str(c);
        out.push('\n');
    }
    out.push_str(&format!(":{directive}\n"));
    write::stdout(&out).map_err(Error::Output)?;
    Ok(exit::OK)
}

fn global_for(kube: &KubeArgs) -> Global {
    let mut kube = kube.clone();
    kube.request_timeout = Some(CLUSTER_TIMEOUT);
    crate::cli::resolve(
        &crate::cli::CommonArgs {
            color: crate::cli::Color::Never,
            verbose: 0,
        },
        &kube,
        None,
    )
}

fn contexts(kube: &KubeArgs) -> Vec<String> {
    crate::source::cluster::kubeconfig_contexts(kube.kubeconfig.as_deref())
}

async fn namespaces(kube: &KubeArgs) -> Vec<String> {
    let global = global_for(kube);
    let Ok(cluster) =
        crate::source::cluster::connect(&global, global.context.first().map(String::as_str)).await
    else {
        return Vec::new();
    };
    match cluster
        .list_cluster::<k8s_openapi::api::core::v1::Namespace>()
        .await
    {
        Ok(items) => items.into_iter().filter_map(|n| n.metadata.name).collect(),
        Err(_) => Vec::new(),
    }
}

async fn pods(kube: &KubeArgs) -> Vec<String> {
    let global = global_for(kube);
    let Ok(cluster) =
        crate::source::cluster::connect(&global, global.context.first().map(String::as_str)).await
    else {
        return Vec::new();
    };
    let namespace = global
        .namespace
        .clone()
        .unwrap_or_else(|| cluster.default_namespace.clone());
    match cluster
        .list::<k8s_openapi::api::core::v1::Pod>(Some(&namespace))
        .await
    {
        Ok(items) => items.into_iter().filter_map(|p| p.metadata.name).collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn offered(before: &[&str], current: &str) -> Wanted {
        wanted(&crate::cli::command(), &words(before), current)
    }

    #[test]
    fn commands_flags_and_values() {
        let Wanted::Words(top, NO_FILES) = offered(&[], "") else {
            panic!("commands expected");
        };
        assert!(top.contains(&"analyze".to_string()), "{top:?}");
        assert!(top.contains(&"proxy-status".to_string()), "{top:?}");
        assert!(!top.iter().any(|c| c.starts_with("__")), "{top:?}");
        let Wanted::Words(flags, _) = offered(&["pod"], "--") else {
            panic!("flags expected");
        };
        assert!(flags.contains(&"--no-probe".to_string()), "{flags:?}");
        assert!(flags.contains(&"--namespace".to_string()), "{flags:?}");
        let Wanted::Words(codes_flags, _) = offered(&["codes"], "--") else {
            panic!("flags expected");
        };
        assert!(
            !codes_flags.contains(&"--kubeconfig".to_string()),
            "{codes_flags:?}"
        );
        assert_eq!(
            offered(&["analyze", "-o"], ""),
            Wanted::Words(
                words(&["text", "log", "json", "yaml", "sarif", "junit"]),
                NO_FILES
            )
        );
        assert_eq!(
            offered(&["analyze", "--failure-threshold"], ""),
            Wanted::Words(words(&["Info", "Warning", "Error"]), NO_FILES)
        );
    }

    #[test]
    fn cluster_lookups() {
        assert_eq!(offered(&["pod"], ""), Wanted::Pods);
        assert_eq!(offered(&["-n", "shop", "pod"], "we"), Wanted::Pods);
        assert_eq!(offered(&["pod", "-n"], ""), Wanted::Namespaces);
        assert_eq!(offered(&["bootstrap", "explain"], ""), Wanted::Pods);
        assert_eq!(
            offered(&["proxy-status", "--context"], ""),
            Wanted::Contexts
        );
        assert_eq!(offered(&["pod", "web"], ""), Wanted::Words(vec![], FILES));
        assert_eq!(
            offered(&["analyze", "-f"], ""),
            Wanted::Words(vec![], FILES)
        );
        let pos = position(
            &crate::cli::command(),
            &words(&["pod", "-n", "shop", "--kubeconfig", "k"]),
        );
        assert_eq!(pos.kube.namespace.as_deref(), Some("shop"));
        assert_eq!(pos.kube.kubeconfig, Some(PathBuf::from("k")));
        let pos = position(&crate::cli::command(), &words(&["pod", "--namespace=shop"]));
        assert_eq!(pos.kube.namespace.as_deref(), Some("shop"));
    }
}
