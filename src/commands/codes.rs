//! `kubectl mesh-doctor codes`: every finding code, its level and meaning.

use comfy_table::{ContentArrangement, Table, presets};
use serde_json::json;

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

pub fn run(request: Request) -> Result<u8> {
    let text = match request.output {
        DocumentFormat::Json | DocumentFormat::Yaml => {
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
            if request.output == DocumentFormat::Yaml {
                crate::formats::yaml_write::to_string(&value)
            } else {
                format!("{}\n", crate::output::json::pretty_json(&value))
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
