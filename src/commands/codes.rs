//! `kubectl mesh-doctor codes`: every finding code, its level and meaning.

use comfy_table::{ContentArrangement, Table, presets};
use serde::Serialize;

use crate::error::Error;
use crate::error::Result;
use crate::exit;
use crate::findings::messages::ALL;
use crate::output::format::DocumentFormat;
use crate::output::write;

/// What `codes` is asked to do, decided from its flags (by the CLI).
#[derive(Clone, Debug)]
pub struct Request {
    pub output: DocumentFormat,
}

/// One code in `-o json` and `-o yaml`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CodeJson {
    code: &'static str,
    name: &'static str,
    level: &'static str,
    description: &'static str,
    documentation_url: String,
}

pub fn run(request: Request) -> Result<u8> {
    let text = match request.output {
        DocumentFormat::Json | DocumentFormat::Yaml => {
            let items: Vec<CodeJson> = ALL
                .iter()
                .map(|m| CodeJson {
                    code: m.code,
                    name: m.name,
                    level: m.level.as_str(),
                    description: m.description,
                    documentation_url: m.documentation_url(),
                })
                .collect();
            if request.output == DocumentFormat::Yaml {
                crate::formats::yaml_write::to_string(
                    &serde_json::to_value(&items).unwrap_or_default(),
                )
            } else {
                crate::output::json::document(&items)
            }
        }
        DocumentFormat::Text => {
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
