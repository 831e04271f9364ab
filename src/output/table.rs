//! Tables in kubectl's plain style, through comfy-table: no borders, columns separated by a gap,
//! every line trimmed at its end. Every command that prints columns (`proxy-status`, `version`)
//! draws them here.

use comfy_table::{Attribute, Cell, ContentArrangement, Table, presets};

use crate::output::style::Tone;

/// An empty plain table. With `colored`, the cells' attributes and colors are printed whatever
/// the stream is (the caller decided: `--color`, NO_COLOR, a terminal); without, never.
pub fn plain(colored: bool) -> Table {
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    if colored {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    table
}

/// The header row, bold when colored.
pub fn header<S: AsRef<str>>(table: &mut Table, names: &[S], colored: bool) {
    table.set_header(names.iter().map(|name| {
        let cell = Cell::new(name.as_ref());
        if colored {
            cell.add_attribute(Attribute::Bold)
        } else {
            cell
        }
    }));
}

/// A cell in the style sheet's color for its tone (none when not colored, or without a tone).
pub fn cell(text: impl Into<String>, tone: Option<Tone>, colored: bool) -> Cell {
    let cell = Cell::new(text.into());
    match tone {
        Some(tone) if colored => {
            let (color, bold) = tone.table_color();
            let cell = cell.fg(color);
            if bold {
                cell.add_attribute(Attribute::Bold)
            } else {
                cell
            }
        }
        _ => cell,
    }
}

/// The table's text: `indent` before every line, `gap` spaces between columns, no trailing
/// spaces, a newline after every line.
pub fn render(mut table: Table, indent: &str, gap: u16) -> String {
    for column in table.column_iter_mut() {
        column.set_padding((0, gap));
    }
    let mut out = String::new();
    for line in table.lines() {
        out.push_str(indent);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_and_lines_are_trimmed() {
        let mut table = plain(false);
        table.add_row(["VERSION", "PROXIES", "REVISIONS"]);
        table.add_row(["1.24.0", "12", "default,canary"]);
        table.add_row(["1.23.2-distroless", "1", "-"]);
        assert_eq!(
            render(table, "  ", 2),
            "  VERSION            PROXIES  REVISIONS\n  1.24.0             12       default,canary\n  1.23.2-distroless  1        -\n"
        );
    }
}
