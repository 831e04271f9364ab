//! A field path as the API server prints it (`spec.http[0].timeout`), and one schema error at
//! such a path.

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
    /// A key of a map (a schema's `additionalProperties`), as the CEL validator prints it:
    /// `ports[http]`.
    MapKey(String),
}

/// One step of a path being walked, its key borrowed from the value walked: made a [`Step`]
/// only for an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepRef<'a> {
    Key(&'a str),
    Index(usize),
    MapKey(&'a str),
}

/// A walked path as its [`Step`]s.
pub fn owned(path: &[StepRef]) -> Vec<Step> {
    path.iter()
        .map(|step| match *step {
            StepRef::Key(k) => Step::Key(k.to_string()),
            StepRef::Index(i) => Step::Index(i),
            StepRef::MapKey(k) => Step::MapKey(k.to_string()),
        })
        .collect()
}

/// A field path as the API server prints it: `spec.http[0].timeout`.
pub fn path_text(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::MapKey(k) => out.push_str(&format!("[{k}]")),
        }
    }
    out
}

/// One schema error: the path of the field and the API server's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    pub path: Vec<Step>,
    pub message: String,
}
