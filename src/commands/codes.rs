//! `kubectl mesh-doctor codes`: every finding code, its level and meaning.

use clap::Args;
use comfy_table::{ContentArrangement, Table, presets};
use serde_json::json;

use crate::error::Error;
use crate::error::Result;
use crate::exit;
use crate::findings::messages::ALL;
use crate::output::write;

#[derive(Debug, Args)]
pub struct CodesArgs {
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = CodesFormat::Table)]
    pub output: CodesFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CodesFormat {
    Table,
    Json,
}

pub fn run(args: CodesArgs) -> Result<u8> {
    let text = match args.output {
        CodesFormat::Json => {
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
            format!(
                "{}\n",
                serde_json::to_string_pretty(&items).unwrap_or_default()
            )
        }
        CodesFormat::Table => {
            let mut table = Table::new();
            table
                .load_style(presets::NOTHING)
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_header(["CODE", "NAME", "LEVEL", "DESCRIPTION"]);
            for m in ALL {
                table.add_row([m.code, m.name, m.level.as_str(), m.description]);
            }
            format!("{table}\n")
        }
    };
    write::stdout(&text).map_err(Error::Output)?;
    Ok(exit::OK)
}
