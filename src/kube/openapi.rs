//! The OpenAPI v3 schemas of the CustomResourceDefinitions the tests install (Istio's and the
//! Gateway API's, one file per release in `crd_schemas/`, source and licence in its README),
//! and the API server's validation of a custom resource's `spec` against them, with the API
//! server's wording (Kubernetes 1.34, measured with `kubectl apply --dry-run=server`).
//!
//! Checked: unknown fields where the schema is structural (kubectl's strict field validation:
//! the object is refused on them alone), types, `nullable`, `enum`, `required` (a field with a
//! `default` is filled in first), `pattern`, `minimum`/`maximum` (and exclusive), `minLength`/
//! `maxLength`, `minItems`/`maxItems`, `maxProperties`, `additionalProperties`, `allOf`,
//! `oneOf` (none or two or more alternatives valid) and `anyOf` (none valid), each with the
//! errors of the alternative that came closest, the string `format`s and the duplicates of
//! `set` and `map` lists ([`super::openapi_rules`]), on the object with its defaults filled in
//! first, as the API server validates it, then, when none of these errors stops them, the CEL
//! rules (`x-kubernetes-validations`, [`super::openapi_cel`]), listed with what is done with
//! each by [`cel_rules`]. Pure: the schema files are compiled
//! in.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::field_path::{StepRef, owned};
use super::object_rules::go_quote;
use super::openapi_node::{NameMap, Node};
use super::openapi_rules::{format_ok, list_duplicates};

/// The schema files, one per release.
const FILES: &[&str] = &[
    include_str!("crd_schemas/istio-1.31.0-dev-eed52ebb.json"),
    include_str!("crd_schemas/gateway-api-v1.6.0.json"),
];

/// The releases whose schemas are compiled in (for `--list-analyzers` and the docs).
pub const RELEASES: &[&str] = &["Istio 1.31.0-dev-eed52ebb", "Gateway API v1.6.0 (standard)"];

/// A kind's schema: its JSON, and its `spec`'s nodes, compiled on first use.
pub struct Schema {
    raw: Value,
    spec: OnceLock<Option<Node<'static>>>,
}

impl Schema {
    /// The nodes of the `spec` (`None` when the schema has no `spec`).
    fn spec(&'static self) -> Option<&'static Node<'static>> {
        self.spec
            .get_or_init(|| {
                self.raw
                    .pointer("/properties/spec")
                    .map(|spec| Node::compile(spec, &super::openapi_cel::runnable))
            })
            .as_ref()
    }
}

struct Catalog {
    /// The schemas of every file, each once.
    schemas: Vec<Schema>,
    /// `group/version/Kind` -> the index of the object's schema.
    kinds: HashMap<String, usize>,
    /// `Kind` -> (`group/version`, the index of the object's schema): found without making
    /// the key.
    by_kind: NameMap<String, Vec<(String, usize)>>,
}

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let (mut schemas, mut kinds) = (Vec::new(), HashMap::new());
        for file in FILES {
            // The files are ours and tested (`tests`): a broken one is a build mistake.
            let Ok(mut doc) = serde_json::from_str::<Value>(file) else {
                continue;
            };
            let first = schemas.len();
            let in_file = match doc["schemas"].take() {
                Value::Array(items) => items,
                _ => Vec::new(),
            };
            let count = in_file.len();
            schemas.extend(in_file.into_iter().map(|raw| Schema {
                raw,
                spec: OnceLock::new(),
            }));
            if let Some(map) = doc["kinds"].as_object() {
                for (key, at) in map {
                    if let Some(i) = at.as_u64().filter(|i| (*i as usize) < count) {
                        kinds.insert(key.clone(), first + i as usize);
                    }
                }
            }
        }
        let mut by_kind: NameMap<String, Vec<(String, usize)>> = NameMap::default();
        for (key, at) in &kinds {
            if let Some((api_version, kind)) = key.rsplit_once('/') {
                by_kind
                    .entry(kind.to_string())
                    .or_default()
                    .push((api_version.to_string(), *at));
            }
        }
        Catalog {
            schemas,
            kinds,
            by_kind,
        }
    })
}

/// The schema of a kind's object, when one of the compiled-in CRDs defines it.
pub fn schema_of(api_version: &str, kind: &str) -> Option<&'static Schema> {
    let catalog = catalog();
    if kind.contains('/') {
        // Not a kind of the files' but still a key of the catalog (`v1/Kind`), as the key
        // would be made.
        let at = *catalog.kinds.get(&format!("{api_version}/{kind}"))?;
        return catalog.schemas.get(at);
    }
    let (_, at) = catalog
        .by_kind
        .get(kind)?
        .iter()
        .find(|(v, _)| v == api_version)?;
    catalog.schemas.get(*at)
}

/// One CEL rule of a compiled-in kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CelRule {
    /// `group/version/Kind`.
    pub kind: String,
    /// The rule's message or, without one, the rule.
    pub text: String,
    pub status: super::openapi_cel::Status,
}

/// The CEL rules (`x-kubernetes-validations`) of every compiled-in kind, with what
/// `crd-schemas` does with each.
pub fn cel_rules() -> Vec<CelRule> {
    fn walk(node: &Value, kind: &str, out: &mut Vec<CelRule>) {
        match node {
            Value::Object(map) => {
                for (key, value) in map {
                    if key == "x-kubernetes-validations" {
                        for rule in value.as_array().into_iter().flatten() {
                            let source = rule.get("rule").and_then(Value::as_str).unwrap_or("");
                            let text = rule
                                .get("message")
                                .and_then(Value::as_str)
                                .unwrap_or(source);
                            out.push(CelRule {
                                kind: kind.to_string(),
                                text: text.to_string(),
                                status: super::openapi_cel::status(source),
                            });
                        }
                    } else {
                        walk(value, kind, out);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, kind, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    let catalog = catalog();
    let mut kinds: Vec<(&String, &Value)> = catalog
        .kinds
        .iter()
        .map(|(k, at)| (k, &catalog.schemas[*at].raw))
        .collect();
    kinds.sort_by_key(|(k, _)| *k);
    for (kind, schema) in kinds {
        walk(schema, kind, &mut out);
    }
    out
}

pub use super::field_path::{SchemaError, Step, path_text};

/// The errors of an object's `spec` against its kind's schema. Unknown fields come alone, as
/// the API server refuses the object on decoding, before it validates anything else.
pub fn validate_spec(schema: &'static Schema, spec: &Value) -> Vec<SchemaError> {
    let Some(spec_schema) = schema.spec() else {
        return Vec::new();
    };
    if spec.is_null() {
        return Vec::new();
    }
    let (mut out, mut unknown) = (Vec::new(), Vec::new());
    // Copied only when a null field is to be dropped or a default filled in; else the unknown
    // fields are found by the walk of the checks, on the same value.
    let copied = has_null_field(spec) || needs_defaults(spec_schema, spec);
    let defaulted = if copied {
        unknown_fields(
            spec_schema,
            spec,
            &mut vec![StepRef::Key("spec")],
            &mut unknown,
        );
        if !unknown.is_empty() {
            return unknown;
        }
        let mut defaulted = spec.clone();
        drop_null_fields(&mut defaulted);
        fill_defaults(spec_schema, &mut defaulted);
        Cow::Owned(defaulted)
    } else {
        Cow::Borrowed(spec)
    };
    let mut path = vec![StepRef::Key("spec")];
    let unknown_too = (!copied).then_some(&mut unknown);
    check(spec_schema, &defaulted, &mut path, &mut out, unknown_too);
    if !unknown.is_empty() {
        return unknown;
    }
    // The CEL rules run only when no error "blocks" them (apiextensions'
    // `hasBlockingErr`: a wrong type, a value outside an enum, a required field missing,
    // too long, too many); the API server then says only that some were not checked.
    if !out.iter().any(blocks_cel) {
        super::openapi_cel::validate(spec_schema, &defaulted, &mut path, &mut out);
    }
    out
}

/// True for the errors after which the API server does not run the CEL rules.
fn blocks_cel(error: &SchemaError) -> bool {
    let m = &error.message;
    m.contains(": Required value")
        || m.contains(": Unsupported value: ")
        || m.contains(": Too long: ")
        || m.contains(": Too many: ")
        || m.contains(" in body must be of type ")
}

/// True when a field or map entry somewhere in the value is `null`.
fn has_null_field(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.values().any(|v| v.is_null() || has_null_field(v)),
        Value::Array(items) => items.iter().any(has_null_field),
        _ => false,
    }
}

/// A field or map entry whose value is `null` is left out of what `kubectl apply` sends
/// (measured: `portLevelMtls: {"8080": null}` is an empty map to the API server), at every
/// level; a `null` list item stays, and the schema says whether it may.
fn drop_null_fields(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_null_fields);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_fields),
        _ => {}
    }
}

/// True when [`fill_defaults`] would fill in a default somewhere in the value.
fn needs_defaults(schema: &Node, value: &Value) -> bool {
    if !schema.defaults_below {
        return false;
    }
    match value {
        Value::Object(map) => {
            schema
                .defaults
                .iter()
                .any(|(key, _)| !map.contains_key(*key))
                || map
                    .iter()
                    .any(|(key, v)| schema.field(key).is_some_and(|sub| needs_defaults(sub, v)))
        }
        Value::Array(items) => schema
            .items
            .as_deref()
            .is_some_and(|sub| items.iter().any(|i| needs_defaults(sub, i))),
        _ => false,
    }
}

/// The API server's structural defaulting: an absent property with a `default` gets it, at
/// every level of the object (in list items and map values too).
fn fill_defaults(schema: &Node, value: &mut Value) {
    if !schema.defaults_below {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, default) in &schema.defaults {
                if !map.contains_key(*key) {
                    map.insert(key.to_string(), (*default).clone());
                }
            }
            for (key, v) in map.iter_mut() {
                if let Some(sub) = schema.field(key) {
                    fill_defaults(sub, v);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.items.as_deref() {
                items.iter_mut().for_each(|i| fill_defaults(sub, i));
            }
        }
        _ => {}
    }
}

fn child(path: &[StepRef], step: Step) -> Vec<Step> {
    let mut p = owned(path);
    p.push(step);
    p
}

/// `path` with `step` added for the time of `f` (the one path of a walk, never copied but
/// for an error).
fn under<'v, R>(
    path: &mut Vec<StepRef<'v>>,
    step: StepRef<'v>,
    f: impl FnOnce(&mut Vec<StepRef<'v>>) -> R,
) -> R {
    path.push(step);
    let result = f(path);
    path.pop();
    result
}

/// A path's text (`spec.http[0].route`), made only when shown: most values have no error.
struct PathText<'p, 'v>(&'p [StepRef<'v>]);

impl std::fmt::Display for PathText<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&path_text(&owned(self.0)))
    }
}

/// The error of an unknown field `key` of the object at `path`.
fn unknown_field(path: &[StepRef], key: &str) -> SchemaError {
    let here = child(path, Step::Key(key.to_string()));
    SchemaError {
        message: format!(
            "strict decoding error: unknown field {}",
            go_quote(&path_text(&here))
        ),
        path: here,
    }
}

/// The unknown fields of the value, in the document's order.
fn unknown_fields<'v>(
    schema: &Node,
    value: &'v Value,
    path: &mut Vec<StepRef<'v>>,
    out: &mut Vec<SchemaError>,
) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if let Some(sub) = schema.field(key) {
                    under(path, StepRef::Key(key), |p| unknown_fields(sub, v, p, out));
                } else if schema.properties.is_some() && !schema.preserves_unknown {
                    out.push(unknown_field(path, key));
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    under(path, StepRef::Index(i), |p| {
                        unknown_fields(sub, item, p, out)
                    });
                }
            }
        }
        _ => {}
    }
}

/// The JSON type name the API server uses for a value.
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn fits(expected: &str, value: &Value) -> bool {
    match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => matches!(value, Value::Number(n) if n.is_i64() || n.is_u64()),
        "number" => value.is_number(),
        _ => true,
    }
}

/// A value as the API server prints it after `Invalid value:`.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Object(_) | Value::Array(_) => go_quote(type_of(value)),
        other => other.to_string(),
    }
}

/// The checks of the schema on the value, and, when `unknown` is given, the unknown fields
/// (as [`unknown_fields`] finds them) in it.
fn check<'v>(
    schema: &Node,
    value: &'v Value,
    path: &mut Vec<StepRef<'v>>,
    out: &mut Vec<SchemaError>,
    mut unknown: Option<&mut Vec<SchemaError>>,
) {
    if !own_checks(schema, value, path, out) {
        // The children are not checked, but their unknown fields are still found.
        if let Some(unknown) = unknown {
            unknown_fields(schema, value, path, unknown);
        }
        return;
    }
    if let Value::Object(map) = value {
        object_rules(schema, map, path, out, unknown.as_deref_mut());
    }
    if let Value::Array(items) = value {
        if let Some(sub) = schema.items.as_deref() {
            for (i, item) in items.iter().enumerate() {
                under(path, StepRef::Index(i), |p| {
                    check(sub, item, p, out, unknown.as_deref_mut())
                });
            }
        }
        if schema.keyed_list
            && let Some(raw) = schema.raw
        {
            for (i, shown) in list_duplicates(raw, items) {
                let here = child(path, Step::Index(i));
                out.push(SchemaError {
                    message: format!("{}: Duplicate value: {shown}", path_text(&here)),
                    path: here,
                });
            }
        }
    }
    for sub in &schema.all_of {
        check(sub, value, path, out, None);
    }
    if let Some(not) = schema.not.as_deref()
        && is_valid(not, value)
    {
        out.push(SchemaError {
            path: owned(path),
            message: format!(
                "<nil>: Invalid value: \"\": \"{}\" must not validate the schema (not)",
                PathText(path)
            ),
        });
    }
    if let Some(alternatives) = &schema.any_of
        && !alternatives.iter().any(|s| is_valid(s, value))
    {
        out.push(SchemaError {
            path: owned(path),
            message: format!(
                "<nil>: Invalid value: \"\": \"{}\" must validate at least one schema (anyOf)",
                PathText(path)
            ),
        });
        closest_failure(alternatives, value, path, out);
    }
    if let Some(alternatives) = &schema.one_of {
        let valid = alternatives.iter().filter(|s| is_valid(s, value)).count();
        let found = match valid {
            0 => "Found none valid".to_string(),
            1 => String::new(),
            n => format!("Found {n} valid alternatives"),
        };
        if valid != 1 {
            out.push(SchemaError {
                path: owned(path),
                message: format!(
                    "<nil>: Invalid value: \"\": \"{}\" must validate one and only one schema (oneOf). {found}",
                    PathText(path)
                ),
            });
        }
        if valid == 0 {
            closest_failure(alternatives, value, path, out);
        }
    }
}

/// The checks of this node alone (the path is read, not extended): false when its children
/// are not to be checked (a null, a value of the wrong type).
fn own_checks(schema: &Node, value: &Value, path: &[StepRef], out: &mut Vec<SchemaError>) -> bool {
    let at = PathText(path);
    let mut push = |message: String| {
        out.push(SchemaError {
            path: owned(path),
            message,
        })
    };
    if value.is_null() {
        // Only a list item can be null here (fields and map entries that are null are not
        // sent): refused unless the schema makes it nullable, as any value of the wrong type.
        let nullable = schema.nullable || schema.int_or_string;
        if let Some(expected) = schema.ty
            && !nullable
            && matches!(path.last(), Some(StepRef::Index(_)))
        {
            push(format!(
                "{at}: Invalid value: \"null\": {at} in body must be of type {expected}: \"null\""
            ));
        }
        return false;
    }
    // A value of the wrong type is also checked against the enum (measured: both are said).
    let wrong_type = schema
        .ty
        .filter(|expected| !schema.int_or_string && !fits(expected, value));
    if let Some(expected) = wrong_type {
        let actual = type_of(value);
        push(format!(
            "{at}: Invalid value: \"{actual}\": {at} in body must be of type {expected}: \"{actual}\""
        ));
    }
    if let Some(options) = schema.enumeration
        && !options.contains(value)
    {
        let supported: Vec<String> = options.iter().map(shown).collect();
        push(format!(
            "{at}: Unsupported value: {}: supported values: {}",
            shown(value),
            supported.join(", ")
        ));
    }
    if wrong_type.is_some() {
        return false;
    }
    match value {
        Value::String(s) => string_rules(schema, s, &at, &mut push),
        Value::Number(n) => number_rules(schema, n, &at, &mut push),
        Value::Array(items) => {
            let n = items.len() as u64;
            if let Some(max) = schema.max_items
                && n > max
            {
                push(format!(
                    "{at}: Too many: {n}: must have at most {max} items"
                ));
            }
            if let Some(min) = schema.min_items
                && n < min
            {
                push(format!(
                    "{at}: Invalid value: {n}: {at} in body should have at least {min} items"
                ));
            }
        }
        _ => {}
    }
    true
}

/// The errors of the alternative that came closest (kube-openapi's "best failures": the most
/// checks passed, here the most of the value's properties valid; the first on a tie).
fn closest_failure<'v>(
    alternatives: &[Node],
    value: &'v Value,
    path: &mut Vec<StepRef<'v>>,
    out: &mut Vec<SchemaError>,
) {
    let passed = |alternative: &Node| -> usize {
        let (Some(properties), Some(map)) = (alternative.properties.as_ref(), value.as_object())
        else {
            return 0;
        };
        map.iter()
            .filter(|(k, v)| properties.get(k).is_some_and(|s| is_valid(s, v)))
            .count()
    };
    let mut best: Option<(&Node, usize)> = None;
    for alternative in alternatives {
        let score = passed(alternative);
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((alternative, score));
        }
    }
    if let Some((alternative, _)) = best {
        check(alternative, value, path, out, None);
    }
}

/// True when the value meets the schema (for `oneOf`, `anyOf` and `not`).
fn is_valid(schema: &Node, value: &Value) -> bool {
    let mut errors = Vec::new();
    check(schema, value, &mut Vec::new(), &mut errors, None);
    errors.is_empty()
}

fn object_rules<'v>(
    schema: &Node,
    map: &'v Map<String, Value>,
    path: &mut Vec<StepRef<'v>>,
    out: &mut Vec<SchemaError>,
    mut unknown: Option<&mut Vec<SchemaError>>,
) {
    let at = PathText(path);
    for (key, defaulted) in &schema.required {
        if !map.contains_key(*key) && !defaulted {
            let here = child(path, Step::Key(key.to_string()));
            out.push(SchemaError {
                message: format!("{}: Required value", path_text(&here)),
                path: owned(path),
            });
        }
    }
    let n = map.len() as u64;
    if let Some(max) = schema.max_properties
        && n > max
    {
        out.push(SchemaError {
            path: owned(path),
            message: format!("{at}: Too many: {n}: must have at most {max} items"),
        });
    }
    if let Some(min) = schema.min_properties
        && n < min
    {
        out.push(SchemaError {
            path: owned(path),
            message: format!(
                "{at}: Invalid value: {n}: {at} in body should have at least {min} properties"
            ),
        });
    }
    for (key, v) in map {
        if let Some(sub) = schema.field(key) {
            under(path, StepRef::Key(key), |p| {
                check(sub, v, p, out, unknown.as_deref_mut())
            });
        } else if let Some(unknown) = unknown.as_deref_mut()
            && schema.properties.is_some()
            && !schema.preserves_unknown
        {
            unknown.push(unknown_field(path, key));
        }
    }
}

/// The first of `maxLength`, `minLength` and `pattern` that fails, as the API server says only
/// that one (measured: an empty string below `minLength` is not also said not to match), and
/// the `format`.
fn string_rules(schema: &Node, s: &str, at: &PathText, push: &mut impl FnMut(String)) {
    // Counted only when a length is checked.
    let chars = || s.chars().count() as u64;
    if let Some(max) = schema.max_length
        && chars() > max
    {
        push(format!("{at}: Too long: may not be more than {max} bytes"));
    } else if let Some(min) = schema.min_length
        && chars() < min
    {
        push(format!(
            "{at}: Invalid value: {}: {at} in body should be at least {min} chars long",
            go_quote(s)
        ));
    } else if let Some(pattern) = schema.pattern
        && !matches_pattern(pattern, s)
    {
        push(format!(
            "{at}: Invalid value: {}: {at} in body should match '{pattern}'",
            go_quote(s)
        ));
    }
    // The format is a check of its own, said beside the first of the others.
    if let Some(format) = schema.format
        && format_ok(format, s) == Some(false)
    {
        let quoted = go_quote(s);
        push(format!(
            "{at}: Invalid value: {quoted}: {at} in body must be of type {format}: {quoted}"
        ));
    }
}

/// Go's RE2 `MatchString` with Rust's `regex` (the same syntax for what the CRDs use); a
/// pattern that does not compile here is taken as matched (never a false rejection).
fn matches_pattern(pattern: &str, s: &str) -> bool {
    super::patterns::with_regex(pattern, |re| re.is_none_or(|re| re.is_match(s)))
}

fn number_rules(
    schema: &Node,
    n: &serde_json::Number,
    at: &PathText,
    push: &mut impl FnMut(String),
) {
    let Some(v) = n.as_f64() else { return };
    let show = |b: f64| {
        if b.fract() == 0.0 {
            format!("{}", b as i64)
        } else {
            b.to_string()
        }
    };
    if let Some(min) = schema.minimum {
        if schema.exclusive_minimum && v <= min {
            push(format!(
                "{at}: Invalid value: {n}: {at} in body should be greater than {}",
                show(min)
            ));
        } else if v < min {
            push(format!(
                "{at}: Invalid value: {n}: {at} in body should be greater than or equal to {}",
                show(min)
            ));
        }
    }
    if let Some(max) = schema.maximum {
        if schema.exclusive_maximum && v >= max {
            push(format!(
                "{at}: Invalid value: {n}: {at} in body should be less than {}",
                show(max)
            ));
        } else if v > max {
            push(format!(
                "{at}: Invalid value: {n}: {at} in body should be less than or equal to {}",
                show(max)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(api_version: &str, kind: &str, spec: Value) -> Vec<String> {
        let schema = schema_of(api_version, kind).expect("a compiled-in kind");
        validate_spec(schema, &spec)
            .into_iter()
            .map(|e| e.message)
            .collect()
    }

    #[test]
    fn every_kind_the_files_read_has_its_schema() {
        for (api, kind) in [
            ("networking.istio.io/v1", "DestinationRule"),
            ("networking.istio.io/v1alpha3", "VirtualService"),
            ("security.istio.io/v1beta1", "AuthorizationPolicy"),
            ("telemetry.istio.io/v1", "Telemetry"),
            ("extensions.istio.io/v1alpha1", "WasmPlugin"),
            ("gateway.networking.k8s.io/v1", "HTTPRoute"),
            ("gateway.networking.k8s.io/v1", "GatewayClass"),
        ] {
            assert!(schema_of(api, kind).is_some(), "{api} {kind}");
        }
        assert!(cel_rules().len() > 100);
    }

    #[test]
    fn every_cel_rule_is_evaluated_but_the_transition_rule() {
        use super::super::openapi_cel::Status;
        let rules = cel_rules();
        let not_checked: Vec<&CelRule> = rules
            .iter()
            .filter(|r| matches!(r.status, Status::NotChecked(_)))
            .collect();
        assert!(not_checked.is_empty(), "{not_checked:#?}");
        let transition: Vec<&str> = rules
            .iter()
            .filter(|r| r.status == Status::Transition)
            .map(|r| r.kind.as_str())
            .collect();
        assert_eq!(
            transition,
            [
                "gateway.networking.k8s.io/v1/GatewayClass",
                "gateway.networking.k8s.io/v1beta1/GatewayClass"
            ]
        );
    }

    #[test]
    fn a_destination_rule_with_the_api_servers_messages() {
        let got = errors(
            "networking.istio.io/v1",
            "DestinationRule",
            json!({"host": "reviews", "trafficPolicy": {
                "outlierDetection": {"consecutive5xxErrors": -3},
                "loadBalancer": {"simple": "FOO"},
                "connectionPool": {"tcp": {"maxConnections": "x"}}}}),
        );
        assert_eq!(
            got,
            [
                "spec.trafficPolicy.outlierDetection.consecutive5xxErrors: Invalid value: -3: spec.trafficPolicy.outlierDetection.consecutive5xxErrors in body should be greater than or equal to 0",
                "spec.trafficPolicy.loadBalancer.simple: Unsupported value: \"FOO\": supported values: \"UNSPECIFIED\", \"LEAST_CONN\", \"RANDOM\", \"PASSTHROUGH\", \"ROUND_ROBIN\", \"LEAST_REQUEST\"",
                "spec.trafficPolicy.connectionPool.tcp.maxConnections: Invalid value: \"string\": spec.trafficPolicy.connectionPool.tcp.maxConnections in body must be of type integer: \"string\"",
            ]
        );
        assert_eq!(
            errors(
                "networking.istio.io/v1",
                "DestinationRule",
                json!({"trafficPolicy": {}})
            ),
            ["spec.host: Required value"]
        );
    }

    #[test]
    fn null_list_items_are_refused_null_fields_are_not_sent() {
        assert_eq!(
            errors(
                "security.istio.io/v1",
                "AuthorizationPolicy",
                json!({"action": null, "rules": [null, {}]})
            ),
            [
                "spec.rules[0]: Invalid value: \"null\": spec.rules[0] in body must be of type object: \"null\""
            ]
        );
        assert_eq!(
            errors(
                "security.istio.io/v1",
                "PeerAuthentication",
                json!({"selector": {"matchLabels": {"app": "web"}}, "portLevelMtls": {"8080": null}})
            ),
            [
                "spec.portLevelMtls: Invalid value: 0: spec.portLevelMtls in body should have at least 1 properties"
            ]
        );
    }

    #[test]
    fn cel_rules_run_unless_an_error_blocks_them() {
        let dr = |policy: Value| {
            errors(
                "networking.istio.io/v1",
                "DestinationRule",
                json!({"host": "reviews", "trafficPolicy": policy}),
            )
        };
        assert_eq!(
            dr(json!({"outlierDetection": {"interval": "0s", "consecutive5xxErrors": -1}})),
            [
                "spec.trafficPolicy.outlierDetection.consecutive5xxErrors: Invalid value: -1: spec.trafficPolicy.outlierDetection.consecutive5xxErrors in body should be greater than or equal to 0",
                "spec.trafficPolicy.outlierDetection.interval: Invalid value: \"string\": must be a valid duration greater than 1ms",
            ]
        );
        // A value outside an enum blocks them (the API server says only that some rules were
        // not checked).
        assert_eq!(
            dr(json!({"outlierDetection": {"interval": "0s"}, "loadBalancer": {"simple": "FOO"}}))
                .len(),
            1
        );
    }

    #[test]
    fn unknown_fields_come_alone() {
        assert_eq!(
            errors(
                "networking.istio.io/v1",
                "DestinationRule",
                json!({"host": 1, "foo": 1})
            ),
            ["strict decoding error: unknown field \"spec.foo\""]
        );
    }

    #[test]
    fn gateway_api_patterns_bounds_and_one_of() {
        let got = errors(
            "gateway.networking.k8s.io/v1",
            "HTTPRoute",
            json!({"parentRefs": [{"name": "gw", "port": 0}], "hostnames": ["Bad_Host"]}),
        );
        assert!(got.iter().any(|m| m.starts_with("spec.hostnames[0]: Invalid value: \"Bad_Host\": spec.hostnames[0] in body should match '")), "{got:#?}");
        assert!(got.contains(&"spec.parentRefs[0].port: Invalid value: 0: spec.parentRefs[0].port in body should be greater than or equal to 1".to_string()));
        let got = errors(
            "networking.istio.io/v1",
            "VirtualService",
            json!({"hosts": ["r"], "http": [{"match": [{"uri": {"exact": "/a", "prefix": "/b"}}],
                "route": [{"destination": {"host": "r"}}]}]}),
        );
        assert_eq!(
            got,
            [
                "<nil>: Invalid value: \"\": \"spec.http[0].match[0].uri\" must validate one and only one schema (oneOf). Found 2 valid alternatives"
            ]
        );
    }
}
