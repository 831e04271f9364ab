//! Colors: only on a terminal, never with NO_COLOR, overridable with `--color`.

use owo_colors::{OwoColorize, Style};

use crate::findings::messages::Level;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// Which stream a piece of output goes to.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl ColorChoice {
    pub fn enabled(self, stream: Stream) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                let stream = match stream {
                    Stream::Stdout => supports_color::Stream::Stdout,
                    Stream::Stderr => supports_color::Stream::Stderr,
                };
                supports_color::on(stream).is_some()
            }
        }
    }
}

/// What a piece of output means, for its color: the one list of meanings every renderer picks
/// from, in text ([`Styles::tone`]) and in tables ([`Tone::table_color`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Healthy, synced, matching: green.
    Ok,
    /// Worth a look: yellow.
    Warning,
    /// Broken: bold red.
    Error,
    /// Not in play (a pod not running): grey.
    Dim,
}

impl Tone {
    /// The tone's color in a table cell, and whether the cell is bold.
    pub fn table_color(self) -> (comfy_table::Color, bool) {
        use comfy_table::Color;
        match self {
            Tone::Ok => (Color::Green, false),
            Tone::Warning => (Color::Yellow, false),
            Tone::Error => (Color::Red, true),
            Tone::Dim => (Color::DarkGrey, false),
        }
    }
}

/// The palette. With colors off every style is plain, so renderers never branch on color.
#[derive(Clone, Copy, Debug, Default)]
pub struct Styles {
    pub error: Style,
    pub warning: Style,
    pub info: Style,
    pub ok: Style,
    pub heading: Style,
    pub dim: Style,
    pub code: Style,
}

impl Styles {
    pub fn new(colored: bool) -> Self {
        if !colored {
            return Styles::default();
        }
        Styles {
            error: Style::new().red().bold(),
            warning: Style::new().yellow(),
            info: Style::new(),
            ok: Style::new().green(),
            heading: Style::new().bold().underline(),
            dim: Style::new().dimmed(),
            code: Style::new().cyan(),
        }
    }

    pub fn level(&self, level: Level) -> Style {
        match level {
            Level::Error => self.error,
            Level::Warning => self.warning,
            Level::Info => self.info,
        }
    }

    pub fn tone(&self, tone: Tone) -> Style {
        match tone {
            Tone::Ok => self.ok,
            Tone::Warning => self.warning,
            Tone::Error => self.error,
            Tone::Dim => self.dim,
        }
    }

    pub fn paint(&self, style: Style, text: &str) -> String {
        text.style(style).to_string()
    }
}
