//! The exit codes are one list per command (`src/exit.rs`): every command's `--help` ends with it,
//! and every docs table under `## Exit codes` is it. `MESH_DOCTOR_UPDATE_DOCS=1 cargo test --test
//! exit_codes` rewrites the docs tables from the list.

use std::path::Path;

use assert_cmd::Command;
use mesh_doctor::exit::{self, TABLES, Table};

const HEADING: &str = "## Exit codes";

/// The byte ranges of the tables that follow each `## Exit codes` heading of a Markdown file.
fn tables_in(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(HEADING) {
        let heading = from + at;
        let mut start = None;
        let mut end = text.len();
        let mut offset = heading;
        for line in text[heading..].split_inclusive('\n') {
            if line.starts_with('|') {
                start.get_or_insert(offset);
            } else if start.is_some() {
                end = offset;
                break;
            }
            offset += line.len();
        }
        let start = start.unwrap_or_else(|| panic!("no table after {HEADING:?}"));
        out.push((start, end));
        from = end;
    }
    out
}

#[test]
fn every_docs_table_is_the_list() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<&str> = TABLES.iter().flat_map(|t| t.docs.iter().copied()).collect();
    files.dedup();
    let update = std::env::var_os("MESH_DOCTOR_UPDATE_DOCS").is_some();
    let mut wrong = Vec::new();
    for file in files {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let wanted: Vec<&Table> = TABLES
            .iter()
            .copied()
            .filter(|t| t.docs.contains(&file))
            .collect();
        let found = tables_in(&text);
        assert_eq!(
            found.len(),
            wanted.len(),
            "{file}: {} `{HEADING}` tables, the list has {} command(s) for it",
            found.len(),
            wanted.len()
        );
        let mut new = text.clone();
        for ((start, end), table) in found.iter().zip(&wanted).rev() {
            let markdown = table.markdown();
            if text[*start..*end] != markdown {
                wrong.push(format!(
                    "{file}: the exit codes of `{}` should be:\n{markdown}",
                    table.command
                ));
                new.replace_range(*start..*end, &markdown);
            }
        }
        if update && new != text {
            std::fs::write(&path, new).unwrap();
        }
    }
    assert!(
        wrong.is_empty() || update,
        "{}\n(MESH_DOCTOR_UPDATE_DOCS=1 rewrites them)",
        wrong.join("\n")
    );
}

#[test]
fn every_help_ends_with_the_list() {
    let commands: &[(&[&str], &Table)] = &[
        (&[], &exit::ANALYZE),
        (&["analyze"], &exit::ANALYZE),
        (&["pod"], &exit::POD),
        (&["path"], &exit::PATH),
        (&["proxy-status"], &exit::PROXY_STATUS),
        (&["bootstrap", "validate"], &exit::BOOTSTRAP_VALIDATE),
        (&["bootstrap", "explain"], &exit::BOOTSTRAP_EXPLAIN),
        (&["version"], &exit::VERSION),
    ];
    assert_eq!(commands.len(), TABLES.len() + 1, "a command per table");
    for (args, table) in commands {
        let out = Command::cargo_bin("kubectl-mesh_doctor")
            .unwrap()
            .args(*args)
            .arg("--help")
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(
            help.trim_end().ends_with(&table.help()),
            "`{}` --help does not end with its exit codes:\n{help}",
            args.join(" ")
        );
    }
}

#[test]
fn the_lists_hold_documented_codes_only() {
    let documented = [
        exit::OK,
        exit::UNEXPECTED,
        exit::USAGE,
        exit::DATA,
        exit::UNAVAILABLE,
        exit::FINDINGS,
    ];
    for table in TABLES {
        assert!(table.has(exit::OK) && table.has(exit::USAGE) && table.has(exit::UNEXPECTED));
        for row in table.rows {
            assert!(
                documented.contains(&row.code),
                "{}: {}",
                table.command,
                row.code
            );
        }
    }
}
