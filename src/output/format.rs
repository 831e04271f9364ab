//! The output family of the commands that print one result: `version`, `codes`, `pod`, `path`,
//! `bootstrap validate` and `bootstrap explain` show it as text for people, or as one JSON or
//! YAML document for machines. Each command says in its `-o` help what its text and its
//! document hold (`cli::flags::document_format`).
//!
//! The other families have their own values: the findings of `analyze` (`output::findings::Format`,
//! with log lines, SARIF and JUnit) and the rows of `proxy-status` (`commands::proxy_status::Format`,
//! with its wide table).

/// How a command that prints one result shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DocumentFormat {
    /// For people: the command's sections or tables
    #[default]
    Text,
    /// One JSON document (`output::json`)
    Json,
    /// The same document as YAML (`formats::yaml_write`)
    Yaml,
}
