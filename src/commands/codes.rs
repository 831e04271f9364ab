//! `kubectl mesh-doctor codes`: every finding code, its level and meaning.

use comfy_table::{ContentArrangement, Table, presets};
use serde_json::json;

use crate::error::Error;
use crate::error::Result;
use crate::exit;
use crate::findings::messages::ALL;
use crate::output::write;

/// How `codes` shows the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodesFormat {
    /// One row per code: CODE, NAME, LEVEL, DESCRIPTION
    Text,
    /// A JSON array: code, name, level, description, documentationUrl
    Json,
    /// The same array as YAML
    Yaml,
}

/// What `codes` is asked to do, decided from its flags (by the CLI).
#[derive(Clone, Debug)]
pub struct Request {
    pub output: CodesFormat,
}

pub fn run(request: Request) -> Result<u8> {
    let text = match request.output {
        CodesFormat::Json | CodesFormat::Yaml => {
            let items: Vec<_> = ALL
                .iter()
                .map(|m| {
                    json!({
                        "code": m.code,
                        "name": m.name,
                        "level": m.level.as_str(),
                        "description": m.description,
                        "documentationUrl": m.documentation_url(),
                    })
                })
                .collect();
            let value = serde_json::Value::Array(items);
            if request.output == CodesFormat::Yaml {
                crate::formats::yaml_write::to_string(&value)
            } else {
                format!("{}\n", crate::output::json::pretty_json(&value))
            }
        }
        CodesFormat::Text => {
            let mut table = Table::new();
            table
                .load_style(presets::NOTHING)
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_header(["CODE", "NAME", "LEVEL", "DESCRIPTION"]);
            for m in ALL {
                table.add_row([m.code, m.name, m.level.as_str(), m.description]);
            }
            // Dynamic arrangement pads the last column to the table's width: trim each line.
            let mut text = String::new();
            for line in table.to_string().lines() {
                text.push_str(line.trim_end());
                text.push('\n');
            }
            text
        }
    };
    write::stdout(&text).map_err(Error::Output)?;
    Ok(exit::OK)
}
