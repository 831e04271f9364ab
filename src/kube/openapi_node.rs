//! A CRD schema node with its keywords read once ([`Node`]): the schema walks of
//! [`super::openapi`] and [`super::openapi_cel`] visit every value of every spec, and read a
//! node's keywords from the typed fields here instead of looking each up in the JSON object
//! at every value. Pure.

use serde_json::Value;

use super::openapi_cel::Rule;

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

/// A node's `properties`: in the schema's order, and found by name without hashing.
pub struct Properties<'s> {
    entries: Vec<(&'s str, Node<'s>)>,
    /// The indexes of `entries`, by name.
    by_name: Vec<usize>,
}

impl<'s> Properties<'s> {
    pub fn get(&self, name: &str) -> Option<&Node<'s>> {
        self.by_name
            .binary_search_by(|&i| self.entries[i].0.cmp(name))
            .ok()
            .map(|at| &self.entries[self.by_name[at]].1)
    }

    /// The properties in the schema's order.
    pub fn iter(&self) -> impl Iterator<Item = &(&'s str, Node<'s>)> {
        self.entries.iter()
    }
}

fn is_true(value: &Value) -> bool {
    *value == Value::Bool(true)
}

fn nodes(value: &Value) -> Option<Vec<Node<'_>>> {
    value
        .as_array()
        .map(|a| a.iter().map(Node::compile).collect())
}

impl<'s> Node<'s> {
    /// A schema node and all the nodes under it.
    pub fn compile(schema: &'s Value) -> Node<'s> {
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
                        let entries: Vec<(&str, Node)> = properties
                            .iter()
                            .map(|(k, v)| (k.as_str(), Node::compile(v)))
                            .collect();
                        let mut by_name: Vec<usize> = (0..entries.len()).collect();
                        by_name.sort_by_key(|&i| entries[i].0);
                        node.properties = Some(Properties { entries, by_name });
                    }
                }
                "additionalProperties" if value.is_object() => {
                    node.additional = Some(Box::new(Node::compile(value)));
                }
                "items" => node.items = Some(Box::new(Node::compile(value))),
                "allOf" => node.all_of = nodes(value).unwrap_or_default(),
                "anyOf" => node.any_of = nodes(value),
                "oneOf" => node.one_of = nodes(value),
                "not" => node.not = Some(Box::new(Node::compile(value))),
                "x-kubernetes-list-type" => {
                    node.keyed_list = matches!(value.as_str(), Some("set" | "map"));
                }
                "x-kubernetes-validations" => node.rules = super::openapi_cel::rules_of(value),
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
