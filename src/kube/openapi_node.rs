//! A CRD schema node with its keywords read once ([`Node`]): the schema walks of
//! [`super::openapi`] and [`super::openapi_cel`] visit every value of every spec, and read a
//! node's keywords from the typed fields here instead of looking each up in the JSON object
//! at every value. Pure.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use std::sync::Arc;

use serde_json::Value;

use super::cel::Expr;

/// One CEL rule of a node (`x-kubernetes-validations`) that runs, read.
pub struct Rule<'s> {
    /// The rule's JSON (`message`, `fieldPath`, ... read when it fails).
    pub raw: &'s Value,
    /// The rule's text.
    pub text: &'s str,
    pub expr: Arc<Expr>,
}

/// A rule's expression from its text, `None` for a rule that does not run
/// (`openapi_cel::runnable`).
pub type Runnable<'f> = &'f dyn Fn(&str) -> Option<Arc<Expr>>;

/// One schema node, its keywords as the walks read them: a keyword of another JSON type than
/// the walks take is as absent (a node that is no JSON object has none).
#[derive(Default)]
pub struct Node<'s> {
    /// The JSON of the node, for what is read only on an error or rarely.
    pub raw: Option<&'s Value>,
    /// `type`, when a string.
    pub ty: Option<&'s str>,
    /// `nullable: true`.
    pub nullable: bool,
    /// `x-kubernetes-int-or-string: true`.
    pub int_or_string: bool,
    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub preserves_unknown: bool,
    pub enumeration: Option<&'s [Value]>,
    pub max_items: Option<u64>,
    pub min_items: Option<u64>,
    pub max_properties: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_length: Option<u64>,
    pub min_length: Option<u64>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    /// `exclusiveMinimum: true`.
    pub exclusive_minimum: bool,
    /// `exclusiveMaximum: true`.
    pub exclusive_maximum: bool,
    pub pattern: Option<&'s str>,
    pub format: Option<&'s str>,
    /// The `required` names (the strings), each with whether its property has a `default`.
    pub required: Vec<(&'s str, bool)>,
    /// The properties with a `default`, in the schema's order.
    pub defaults: Vec<(&'s str, &'s Value)>,
    /// `properties`, when an object.
    pub properties: Option<Properties<'s>>,
    /// `additionalProperties`, when an object.
    pub additional: Option<Box<Node<'s>>>,
    /// `items`, whatever its JSON.
    pub items: Option<Box<Node<'s>>>,
    pub all_of: Vec<Node<'s>>,
    pub any_of: Option<Vec<Node<'s>>>,
    pub one_of: Option<Vec<Node<'s>>>,
    pub not: Option<Box<Node<'s>>>,
    /// `x-kubernetes-list-type` is `set` or `map` (duplicates are checked).
    pub keyed_list: bool,
    /// The CEL rules that run (`x-kubernetes-validations`), in order.
    pub rules: Vec<Rule<'s>>,
    /// This node or one under it (through `properties`, `additionalProperties`, `items`) has
    /// a rule that runs.
    pub rules_below: bool,
    /// This node or one under it (the same way) has a property with a `default`.
    pub defaults_below: bool,
}

/// A node's `properties`: in the schema's order, and found by name (a few compared in turn,
/// more through a table).
pub struct Properties<'s> {
    entries: Vec<(&'s str, Node<'s>)>,
    /// The indexes of `entries` by name, when there are more than [`SCANNED`].
    by_name: Option<NameMap<&'s str, usize>>,
}

/// Up to this many properties, a name is compared with each in turn.
const SCANNED: usize = 8;

impl<'s> Properties<'s> {
    fn new(entries: Vec<(&'s str, Node<'s>)>) -> Self {
        let by_name = (entries.len() > SCANNED).then(|| {
            entries
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (*k, i))
                .collect()
        });
        Properties { entries, by_name }
    }

    pub fn get(&self, name: &str) -> Option<&Node<'s>> {
        match &self.by_name {
            Some(by_name) => by_name.get(name).map(|&i| &self.entries[i].1),
            None => self
                .entries
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, node)| node),
        }
    }

    /// The properties in the schema's order.
    pub fn iter(&self) -> impl Iterator<Item = &(&'s str, Node<'s>)> {
        self.entries.iter()
    }
}

/// A map by name with a fast hash (FxHash's: names are short and come from our own schemas,
/// no one chooses them to collide).
pub type NameMap<K, V> = HashMap<K, V, BuildHasherDefault<NameHasher>>;

/// FxHash (rustc's): a word at a time, a rotation, a xor and a multiplication.
#[derive(Default, Clone, Copy)]
pub struct NameHasher(u64);

impl NameHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut w = [0; 8];
            w.copy_from_slice(word);
            self.add(u64::from_le_bytes(w));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut w = [0; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

fn is_true(value: &Value) -> bool {
    *value == Value::Bool(true)
}

fn nodes<'s>(value: &'s Value, runnable: Runnable) -> Option<Vec<Node<'s>>> {
    value
        .as_array()
        .map(|a| a.iter().map(|v| Node::compile(v, runnable)).collect())
}

impl<'s> Node<'s> {
    /// A schema node and all the nodes under it, their rules' expressions from `runnable`.
    pub fn compile(schema: &'s Value, runnable: Runnable) -> Node<'s> {
        let mut node = Node {
            raw: Some(schema),
            ..Node::default()
        };
        let Value::Object(map) = schema else {
            return node;
        };
        let mut required: Option<&'s Vec<Value>> = None;
        for (key, value) in map {
            match key.as_str() {
                "type" => node.ty = value.as_str(),
                "nullable" => node.nullable = is_true(value),
                "x-kubernetes-int-or-string" => node.int_or_string = is_true(value),
                "x-kubernetes-preserve-unknown-fields" => node.preserves_unknown = is_true(value),
                "enum" => node.enumeration = value.as_array().map(Vec::as_slice),
                "maxItems" => node.max_items = value.as_u64(),
                "minItems" => node.min_items = value.as_u64(),
                "maxProperties" => node.max_properties = value.as_u64(),
                "minProperties" => node.min_properties = value.as_u64(),
                "maxLength" => node.max_length = value.as_u64(),
                "minLength" => node.min_length = value.as_u64(),
                "minimum" => node.minimum = value.as_f64(),
                "maximum" => node.maximum = value.as_f64(),
                "exclusiveMinimum" => node.exclusive_minimum = is_true(value),
                "exclusiveMaximum" => node.exclusive_maximum = is_true(value),
                "pattern" => node.pattern = value.as_str(),
                "format" => node.format = value.as_str(),
                "required" => required = value.as_array(),
                "properties" => {
                    if let Some(properties) = value.as_object() {
                        node.properties = Some(Properties::new(
                            properties
                                .iter()
                                .map(|(k, v)| (k.as_str(), Node::compile(v, runnable)))
                                .collect(),
                        ));
                    }
                }
                "additionalProperties" if value.is_object() => {
                    node.additional = Some(Box::new(Node::compile(value, runnable)));
                }
                "items" => node.items = Some(Box::new(Node::compile(value, runnable))),
                "allOf" => node.all_of = nodes(value, runnable).unwrap_or_default(),
                "anyOf" => node.any_of = nodes(value, runnable),
                "oneOf" => node.one_of = nodes(value, runnable),
                "not" => node.not = Some(Box::new(Node::compile(value, runnable))),
                "x-kubernetes-list-type" => {
                    node.keyed_list = matches!(value.as_str(), Some("set" | "map"));
                }
                "x-kubernetes-validations" => {
                    node.rules = value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|raw| {
                            let text = raw.get("rule").and_then(Value::as_str)?;
                            Some(Rule {
                                raw,
                                text,
                                expr: runnable(text)?,
                            })
                        })
                        .collect();
                }
                _ => {}
            }
        }
        if let Some(properties) = &node.properties {
            node.defaults = properties
                .iter()
                .filter_map(|(k, sub)| Some((*k, sub.default_value()?)))
                .collect();
        }
        node.required = required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|k| {
                let defaulted = node
                    .properties
                    .as_ref()
                    .and_then(|p| p.get(k))
                    .is_some_and(|p| p.default_value().is_some());
                (k, defaulted)
            })
            .collect();
        let children = || {
            node.properties
                .iter()
                .flat_map(Properties::iter)
                .map(|(_, n)| n)
                .chain(node.additional.as_deref())
                .chain(node.items.as_deref())
        };
        let rules_below = !node.rules.is_empty() || children().any(|n| n.rules_below);
        let defaults_below = !node.defaults.is_empty() || children().any(|n| n.defaults_below);
        node.rules_below = rules_below;
        node.defaults_below = defaults_below;
        node
    }

    /// `default`, whatever its JSON.
    fn default_value(&self) -> Option<&'s Value> {
        self.raw.and_then(|raw| raw.get("default"))
    }

    /// The node of a property of an object value: the property's, else `additionalProperties`'
    /// when an object.
    pub fn field(&self, name: &str) -> Option<&Node<'s>> {
        self.properties
            .as_ref()
            .and_then(|p| p.get(name))
            .or(self.additional.as_deref())
    }
}
