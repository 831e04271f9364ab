//! The CEL rules of a CRD's schema (`x-kubernetes-validations`) on a custom resource's spec, as
//! the API server runs them on a create (apiextensions' CEL validator, Kubernetes 1.34,
//! measured with `kubectl apply --dry-run=server`): each rule runs on every value present at its
//! schema node (never on a null or absent one), the node's rules before its children's; a rule
//! that is false says its `messageExpression`'s text, else its `message`, else `failed rule:
//! <rule>`, at its node's path (and `fieldPath`, when given), as `<path>: Invalid value:
//! "<schema type>": <message>` (or the `reason`'s form); a rule whose evaluation fails says
//! cel-go's error and `evaluating rule: <message>`. Transition rules (those that read
//! `oldSelf`) do not run on a create and are skipped; a rule that calls a function
//! [`super::cel_eval`] does not have, or that it cannot judge on a value, says nothing. Pure.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value as Json;

use super::cel::{self, Expr};
use super::cel_eval::{self, FUNCTIONS, Fault, Scope, Value};
use super::field_path::{SchemaError, Step, StepRef, owned, path_text};
use super::openapi_node::{Node, Rule};

/// What mesh-doctor does with one rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Evaluated on every file object.
    Checked,
    /// A transition rule (`oldSelf`): the API server does not run it on a create.
    Transition,
    /// Not evaluated, with why.
    NotChecked(String),
}

/// The status of a rule's text.
pub fn status(rule: &str) -> Status {
    match compiled(rule) {
        Compiled::Rule(_) => Status::Checked,
        Compiled::Transition => Status::Transition,
        Compiled::Unsupported(why) => Status::NotChecked(why),
    }
}

#[derive(Clone)]
enum Compiled {
    Rule(Arc<Expr>),
    Transition,
    Unsupported(String),
}

fn compiled(rule: &str) -> Compiled {
    thread_local! {
        static CACHE: std::cell::RefCell<HashMap<String, Compiled>> =
            std::cell::RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| {
        if let Some(found) = cache.borrow().get(rule) {
            return found.clone();
        }
        let compiled = compile(rule);
        cache
            .borrow_mut()
            .insert(rule.to_string(), compiled.clone());
        compiled
    })
}

fn compile(rule: &str) -> Compiled {
    let expr = match cel::parse(rule) {
        Ok(e) => e,
        Err(why) => return Compiled::Unsupported(format!("not read: {why}")),
    };
    let (mut names, mut functions) = (Vec::new(), Vec::new());
    walk(&expr, &mut names, &mut functions);
    if names.iter().any(|n| n == "oldSelf") {
        return Compiled::Transition;
    }
    if let Some(f) = functions.iter().find(|f| !FUNCTIONS.contains(&f.as_str())) {
        return Compiled::Unsupported(format!("calls {f}()"));
    }
    Compiled::Rule(Arc::new(expr))
}

/// The names and the functions an expression uses.
fn walk(expr: &Expr, names: &mut Vec<String>, functions: &mut Vec<String>) {
    match expr {
        Expr::Ident(n) => names.push(n.clone()),
        Expr::Select { operand, .. } => walk(operand, names, functions),
        Expr::Index(a, b) => {
            walk(a, names, functions);
            walk(b, names, functions);
        }
        Expr::Call {
            target,
            function,
            args,
        } => {
            functions.push(function.clone());
            if let Some(t) = target {
                walk(t, names, functions);
            }
            args.iter().for_each(|a| walk(a, names, functions));
        }
        Expr::List(items) => items.iter().for_each(|i| walk(i, names, functions)),
        Expr::Map(entries) => entries.iter().for_each(|(k, v)| {
            walk(k, names, functions);
            walk(v, names, functions);
        }),
        Expr::Not(e) | Expr::Negate(e) => walk(e, names, functions),
        Expr::Binary(_, a, b) => {
            walk(a, names, functions);
            walk(b, names, functions);
        }
        Expr::Cond(a, b, c) => {
            walk(a, names, functions);
            walk(b, names, functions);
            walk(c, names, functions);
        }
        Expr::Macro { range, body, .. } => {
            walk(range, names, functions);
            walk(body, names, functions);
        }
        _ => {}
    }
}

/// The expression of a rule that runs (not a transition rule, no function missing), for
/// [`Node::compile`].
pub fn runnable(rule: &str) -> Option<Arc<Expr>> {
    match compiled(rule) {
        Compiled::Rule(expr) => Some(expr),
        _ => None,
    }
}

/// The errors of the CEL rules of `schema` (the spec's schema) on `value` (the spec with its
/// defaults filled in) at `path`.
pub fn validate<'v>(
    schema: &Node,
    value: &'v Json,
    path: &mut Vec<StepRef<'v>>,
    out: &mut Vec<SchemaError>,
) {
    walk_rules(schema, value, None, path, out);
}

/// [`validate`], with the value as CEL sees it when a node above made it (`converted`, the
/// same as `Value::from_json(value)`): made once, at the highest node with a rule.
fn walk_rules<'v>(
    schema: &Node,
    value: &'v Json,
    converted: Option<&Value>,
    path: &mut Vec<StepRef<'v>>,
    out: &mut Vec<SchemaError>,
) {
    // A node with no rule at or under it says nothing.
    if value.is_null() || !schema.rules_below {
        return;
    }
    let made;
    let this = if schema.rules.is_empty() {
        converted
    } else {
        let this = match converted {
            Some(this) => this,
            None => {
                made = Value::from_json(value);
                &made
            }
        };
        for rule in &schema.rules {
            if let Some(error) = run_rule(schema, rule, this, path) {
                out.push(error);
            }
        }
        Some(this)
    };
    match value {
        Json::Object(map) => {
            let properties = schema.properties.as_ref();
            let additional = schema.additional.as_deref();
            // The converted entries: the same, in the same order, but the null fields.
            let mut entries = match this {
                Some(Value::Map(entries)) => Some(entries.iter()),
                _ => None,
            };
            for (key, v) in map {
                let converted = if v.is_null() {
                    None
                } else {
                    entries
                        .as_mut()
                        .and_then(Iterator::next)
                        .filter(|(k, _)| k == key)
                        .map(|(_, c)| c)
                };
                let (sub, step) = match properties.and_then(|p| p.get(key)) {
                    Some(sub) => (Some(sub), StepRef::Key(key)),
                    None => (additional, StepRef::MapKey(key)),
                };
                if let Some(sub) = sub {
                    path.push(step);
                    walk_rules(sub, v, converted, path, out);
                    path.pop();
                }
            }
        }
        Json::Array(items) => {
            let converted = match this {
                Some(Value::List(converted)) => Some(converted),
                _ => None,
            };
            if let Some(sub) = schema.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    path.push(StepRef::Index(i));
                    walk_rules(sub, item, converted.and_then(|c| c.get(i)), path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

fn run_rule(schema: &Node, rule: &Rule, this: &Value, path: &[StepRef]) -> Option<SchemaError> {
    let (raw, text) = (rule.raw, rule.text);
    let mut scope = Scope::one("self", this);
    let result = cel_eval::eval(&rule.expr, &mut scope);
    let message = raw
        .get("message")
        .and_then(Json::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty());
    let shown_type = schema.ty.unwrap_or("");
    let detail = match result {
        Ok(Value::Bool(false)) => {
            let from_expression = raw
                .get("messageExpression")
                .and_then(Json::as_str)
                .and_then(|m| message_expression(m, this));
            match (from_expression, message) {
                (Some(m), _) => m,
                (None, Some(m)) => m.to_string(),
                (None, None) => format!("failed rule: {}", text.trim()),
            }
        }
        Err(Fault::Error(why)) => {
            // The rule as an error names it: its message, else its text.
            let named = message.map_or_else(|| text.trim().to_string(), str::to_string);
            let path = owned(path);
            return Some(SchemaError {
                message: format!(
                    "{}: Invalid value: \"{shown_type}\": {why} evaluating rule: {named}",
                    path_text(&path)
                ),
                path,
            });
        }
        // True, not a bool, or not judged here.
        _ => return None,
    };
    let mut at = owned(path);
    if let Some(field_path) = raw.get("fieldPath").and_then(Json::as_str) {
        // A plain `.a.b` path; another form is not judged.
        let steps: Vec<&str> = field_path.strip_prefix('.')?.split('.').collect();
        if steps
            .iter()
            .any(|s| s.is_empty() || s.contains(['[', ']', '\'']))
        {
            return None;
        }
        at.extend(steps.iter().map(|s| Step::Key(s.to_string())));
    }
    let where_ = path_text(&at);
    let message = match raw.get("reason").and_then(Json::as_str) {
        None | Some("FieldValueInvalid") => {
            format!("{where_}: Invalid value: \"{shown_type}\": {detail}")
        }
        Some("FieldValueForbidden") => format!("{where_}: Forbidden: {detail}"),
        Some("FieldValueRequired") => format!("{where_}: Required value: {detail}"),
        Some(_) => return None,
    };
    Some(SchemaError { path: at, message })
}

/// A `messageExpression`'s text, when it gives one the API server uses (a string, not blank,
/// on one line).
fn message_expression(expression: &str, this: &Value) -> Option<String> {
    let Compiled::Rule(expr) = compiled(expression) else {
        return None;
    };
    let mut scope = Scope::one("self", this);
    match cel_eval::eval(&expr, &mut scope) {
        Ok(Value::Str(s)) if !s.trim().is_empty() && !s.contains(['\n', '\r']) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(schema: Json, value: Json) -> Vec<String> {
        let mut out = Vec::new();
        validate(
            &Node::compile(&schema, &runnable),
            &value,
            &mut vec![StepRef::Key("spec")],
            &mut out,
        );
        out.into_iter().map(|e| e.message).collect()
    }

    #[test]
    fn rules_at_their_nodes_with_the_api_servers_wording() {
        let schema = json!({"type": "object", "properties": {"interval": {"type": "string",
            "x-kubernetes-validations": [{"rule": "duration(self) >= duration('1ms')",
                "message": "must be a valid duration greater than 1ms"}]}},
            "x-kubernetes-validations": [{"rule": "has(self.interval)"},
                {"rule": "self.old == oldSelf.old", "message": "immutable"}]});
        assert_eq!(
            errors(schema.clone(), json!({"interval": "0s"})),
            ["spec.interval: Invalid value: \"string\": must be a valid duration greater than 1ms"]
        );
        assert_eq!(
            errors(schema.clone(), json!({"interval": "1e3s"})),
            [
                "spec.interval: Invalid value: \"string\": type conversion error from 'string' to 'google.protobuf.Duration' evaluating rule: must be a valid duration greater than 1ms"
            ]
        );
        assert_eq!(
            errors(schema.clone(), json!({})),
            ["spec: Invalid value: \"object\": failed rule: has(self.interval)"]
        );
        assert!(errors(schema, json!({"interval": "2ms"})).is_empty());
    }

    #[test]
    fn message_expressions_field_paths_and_reasons() {
        let schema = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.a < 3", "messageExpression": "'a is ' + string(self.a)",
             "fieldPath": ".a", "reason": "FieldValueForbidden"}]});
        assert_eq!(
            errors(schema, json!({"a": 5})),
            ["spec.a: Forbidden: a is 5"]
        );
    }

    #[test]
    fn statuses() {
        assert_eq!(status("self == oldSelf"), Status::Transition);
        assert_eq!(status("self.size() > 0"), Status::Checked);
        assert!(matches!(status("self.frob()"), Status::NotChecked(_)));
        assert!(matches!(status("self +"), Status::NotChecked(_)));
    }
}
