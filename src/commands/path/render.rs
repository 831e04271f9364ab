//! The walk for people: one block per port, one line per hop with its mark, the evidence under
//! it, and for the hop that breaks what the request gets and what to change.

use super::model::{Hop, Status, Walk};
use crate::output::style::{Styles, Tone};

fn mark(status: Status) -> (&'static str, Option<Tone>) {
    match status {
        Status::Pass => ("✔", Some(Tone::Ok)),
        Status::Warn => ("!", Some(Tone::Warning)),
        Status::Unknown => ("?", Some(Tone::Warning)),
        Status::Fail => ("✘", Some(Tone::Error)),
        Status::NotReached => ("·", Some(Tone::Dim)),
    }
}

fn hop_lines(out: &mut String, hop: &Hop, indent: &str, styles: &Styles) {
    let (m, tone) = mark(hop.status);
    let m = tone.map_or(m.to_string(), |t| styles.paint(styles.tone(t), m));
    out.push_str(&format!("{indent}{m} {:<12} {}\n", hop.hop, hop.summary));
    let pad = format!("{indent}  {:<12} ", "");
    for e in &hop.evidence {
        out.push_str(&format!("{pad}{e}\n"));
    }
    if let Some(s) = &hop.symptom {
        out.push_str(&format!("{pad}gets: {s}\n"));
    }
    if let Some(f) = &hop.fix {
        out.push_str(&format!("{pad}fix: {f}\n"));
    }
}

pub fn text(walk: &Walk, styles: &Styles) -> String {
    let mut out = String::new();
    for port in &walk.ports {
        out.push_str(&format!(
            "{} → {}:{} ({}), {}\n",
            walk.source, walk.target, port.port, port.protocol, walk.request
        ));
        for hop in &port.hops {
            hop_lines(&mut out, hop, "  ", styles);
        }
        let many = port.branches.len() > 1;
        for branch in &port.branches {
            let indent = if many {
                out.push_str(&format!(
                    "  → {} ({}%)\n",
                    branch.destination, branch.weight
                ));
                "    "
            } else {
                "  "
            };
            for hop in &branch.hops {
                hop_lines(&mut out, hop, indent, styles);
            }
        }
        let (m, tone) = mark(port.outcome.status);
        let verdict = tone.map_or(m.to_string(), |t| styles.paint(styles.tone(t), m));
        out.push_str(&format!("Verdict: {verdict} {}\n\n", port.outcome.summary));
    }
    if !walk.not_read.is_empty() {
        out.push_str("Not read (the walk may miss what is there):\n");
        for n in &walk.not_read {
            out.push_str(&format!("  {n}\n"));
        }
    }
    out
}
