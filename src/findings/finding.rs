//! A finding: one message about one resource.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::findings::messages::{Level, Message, MessageType};
use crate::kube::snapshot::{Located, Object};

/// The resource a finding is about, and where it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRef {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    /// The file the resource was read from, when it came from a file.
    pub file: Option<Arc<str>>,
    /// The line in that file (the document start, or the field the analyzer points at).
    pub line: Option<u32>,
    /// The cluster (kubeconfig context) it came from, when several are analysed at once.
    pub cluster: Option<Arc<str>>,
}

impl ResourceRef {
    pub fn of<T: Object>(located: &Located<T>) -> Self {
        ResourceRef {
            kind: located.object.kind().to_string(),
            namespace: if located.object.kind() == "Namespace" {
                None
            } else {
                located.object.namespace().map(str::to_string)
            },
            name: located.object.name().to_string(),
            file: located.origin.file.clone(),
            line: located.origin.line,
            cluster: located.origin.cluster.clone(),
        }
    }

    /// Points the reference at the line of one field (`spec.ports[0].port`), when known.
    pub fn at_field<T>(mut self, located: &Located<T>, path: &str) -> Self {
        if let Some(line) = located.origin.line_of(path) {
            self.line = Some(line);
        }
        self
    }

    /// `<Kind> <namespace>/<name>`, or `<Kind> <name>`: istioctl's "friendly name".
    pub fn friendly_name(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }

    /// `file:line` for resources read from files (JSON files have no line).
    pub fn reference(&self) -> Option<String> {
        let file = self.file.as_ref()?;
        Some(match self.line {
            Some(line) => format!("{file}:{line}"),
            None => file.to_string(),
        })
    }

    /// The namespace the resource belongs to, a Namespace being its own.
    pub fn owning_namespace(&self) -> Option<&str> {
        if self.kind == "Namespace" {
            Some(&self.name)
        } else {
            self.namespace.as_deref()
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub message_type: &'static MessageType,
    pub resource: Option<ResourceRef>,
    pub message: String,
    /// The cluster of a finding about a whole cluster (no resource), when several are analysed.
    pub cluster: Option<Arc<str>>,
}

impl Finding {
    /// A finding about a resource (`None`: about the whole analysis or cluster), from a message made
    /// by its code's constructor: `Finding::new(IST0101::message(reftype, refval), resource)`.
    pub fn new(message: Message, resource: Option<ResourceRef>) -> Self {
        Finding {
            message_type: message.message_type(),
            resource,
            message: message.into_text(),
            cluster: None,
        }
    }

    /// The cluster it is about: its resource's, else its own (a finding about a whole cluster).
    pub fn cluster(&self) -> Option<&Arc<str>> {
        self.resource
            .as_ref()
            .and_then(|r| r.cluster.as_ref())
            .or(self.cluster.as_ref())
    }

    pub fn level(&self) -> Level {
        self.message_type.level
    }

    pub fn code(&self) -> &'static str {
        self.message_type.code
    }

    pub fn origin(&self) -> Option<String> {
        self.resource.as_ref().map(ResourceRef::friendly_name)
    }

    /// The istioctl log line without colors, used for sorting and de-duplication.
    pub fn plain_line(&self) -> String {
        let mut line = format!("{} [{}]", self.level(), self.code());
        if let Some(r) = &self.resource {
            if let Some(cluster) = &r.cluster {
                line.push_str(&format!(" [{cluster}]"));
            }
            line.push_str(" (");
            line.push_str(&r.friendly_name());
            if let Some(reference) = r.reference() {
                line.push(' ');
                line.push_str(&reference);
            }
            line.push(')');
        }
        line.push(' ');
        line.push_str(&self.message);
        line
    }

    /// istioctl's order: cluster, level, code, resource (kind/name/namespace), then the text
    /// ([`Finding::plain_line`], `line` here when the caller has made it already); an object
    /// the API server will reject (MD0003) comes before everything else said about it.
    pub fn compare(&self, line: &str, other: &Finding, other_line: &str) -> Ordering {
        type Key<'f> = (
            Option<&'f Arc<str>>,
            bool,
            Level,
            &'static str,
            Option<(&'f String, &'f String, &'f Option<String>)>,
        );
        fn key(f: &Finding) -> Key<'_> {
            let r = f.resource.as_ref();
            (
                f.cluster(),
                f.code() != crate::findings::messages::MD0003.code,
                f.level(),
                f.code(),
                r.map(|r| (&r.kind, &r.name, &r.namespace)),
            )
        }
        key(self)
            .cmp(&key(other))
            .then_with(|| line.cmp(other_line))
    }
}
