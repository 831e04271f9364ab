//! The evaluation of a parsed CEL expression ([`super::cel`]) on a JSON value, as the API
//! server's cel-go evaluates a CRD's validation rule: CEL's standard functions and macros, the
//! `strings` extension Kubernetes enables (`substring`, `split`, ...), and Kubernetes' own
//! library functions the compiled-in rules call (`isURL`, `url`, `getScheme`, `isIP`, in
//! [`super::cel_library`]), with cel-go's error texts where the API server prints them
//! (measured with `kubectl apply --dry-run=server`). What is not written here is
//! [`Fault::NotChecked`]: the rule is then not said, never guessed. Pure.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value as Json;

use super::cel::{Expr, MacroKind, Op};
use super::cel_library;
use crate::formats::go_duration::parse_duration;

/// A CEL value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(String),
    /// Nanoseconds.
    Duration(i64),
    /// A URL of Kubernetes' library, by its scheme (the one accessor the rules use).
    Url {
        scheme: String,
    },
    List(Vec<Value>),
    /// An object or a map of the schema: string keys, in the document's order.
    Map(Vec<(String, Value)>),
}

/// Why an expression has no value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// An evaluation error with cel-go's text: the API server says it (`... evaluating rule:`).
    Error(String),
    /// Something this evaluator does not do as cel-go does: the rule is not said.
    NotChecked(String),
}

type Result<T> = std::result::Result<T, Fault>;

fn not_checked<T>(what: impl Into<String>) -> Result<T> {
    Err(Fault::NotChecked(what.into()))
}

fn error<T>(what: impl Into<String>) -> Result<T> {
    Err(Fault::Error(what.into()))
}

impl Value {
    /// A JSON value as the API server hands it to CEL; a field whose value is `null` is left
    /// out of its object (as the schema walk treats it as absent).
    pub fn from_json(json: &Json) -> Value {
        match json {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Value::Int(i),
                (None, Some(u)) => Value::Uint(u),
                _ => Value::Double(n.as_f64().unwrap_or(0.0)),
            },
            Json::String(s) => Value::Str(s.clone()),
            Json::Array(items) => Value::List(items.iter().map(Value::from_json).collect()),
            Json::Object(map) => Value::Map(
                map.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null_type",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint(_) => "uint",
            Value::Double(_) => "double",
            Value::Str(_) => "string",
            Value::Duration(_) => "google.protobuf.Duration",
            Value::Url { .. } => "kubernetes.URL",
            Value::List(_) => "list",
            Value::Map(_) => "map",
        }
    }
}

/// Kubernetes' escaping of property names that are not CEL identifiers: `__namespace__` is
/// the property `namespace`, `__dash__` a `-`, `__dot__` a `.`, `__slash__` a `/`,
/// `__underscores__` a `__`.
fn unescape_field(name: &str) -> Cow<'_, str> {
    const RESERVED: &[&str] = &[
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    if let Some(inner) = name.strip_prefix("__").and_then(|n| n.strip_suffix("__"))
        && RESERVED.contains(&inner)
    {
        return Cow::Borrowed(inner);
    }
    // Every escape starts with `__`: a name without one is itself.
    if !name.contains("__") {
        return Cow::Borrowed(name);
    }
    Cow::Owned(
        name.replace("__underscores__", "__")
            .replace("__dot__", ".")
            .replace("__dash__", "-")
            .replace("__slash__", "/"),
    )
}

/// The variables in scope, innermost last.
pub struct Scope<'a> {
    vars: Vec<(&'a str, Cow<'a, Value>)>,
}

impl<'a> Scope<'a> {
    pub fn new(vars: Vec<(&'a str, Value)>) -> Self {
        Scope {
            vars: vars.into_iter().map(|(n, v)| (n, Cow::Owned(v))).collect(),
        }
    }

    /// One variable, its value borrowed (not copied).
    pub fn one(name: &'a str, value: &'a Value) -> Self {
        Scope {
            vars: vec![(name, Cow::Borrowed(value))],
        }
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| &**v)
    }
}

/// The value of an expression.
pub fn eval<'a>(expr: &'a Expr, scope: &mut Scope<'a>) -> Result<Value> {
    Ok(match expr {
        Expr::Null => Value::Null,
        Expr::Bool(b) => Value::Bool(*b),
        Expr::Int(n) => Value::Int(*n),
        Expr::Uint(n) => Value::Uint(*n),
        Expr::Double(d) => Value::Double(*d),
        Expr::Str(s) => Value::Str(s.clone()),
        Expr::Ident(name) => match scope.get(name) {
            Some(v) => v.clone(),
            None => return not_checked(format!("unknown name {name}")),
        },
        Expr::Select {
            operand,
            field,
            test,
        } => {
            // A variable or a field of one is read in place: only the field selected is copied.
            if let Some(operand) = place(operand, scope) {
                select(operand?, field, *test)?
            } else {
                select(&eval(operand, scope)?, field, *test)?
            }
        }
        Expr::Index(operand, index) => {
            let operand = eval(operand, scope)?;
            let index = eval(index, scope)?;
            match (operand, index) {
                (Value::List(items), Value::Int(i)) => match usize::try_from(i)
                    .ok()
                    .and_then(|i| items.into_iter().nth(i))
                {
                    Some(v) => v,
                    None => return not_checked("list index out of range"),
                },
                (Value::Map(entries), Value::Str(key)) => {
                    match entries.into_iter().find(|(k, _)| *k == key) {
                        Some((_, v)) => v,
                        None => return error(format!("no such key: {key}")),
                    }
                }
                (o, i) => return not_checked(format!("{}[{}]", o.kind(), i.kind())),
            }
        }
        Expr::Call {
            target,
            function,
            args,
        } => {
            // A target that is a variable or a field of one is read in place, after its
            // arguments (read again then: they leave the scope as they found it), its errors
            // still first.
            let in_place = match target.as_deref().and_then(|t| place(t, scope)) {
                Some(found) => {
                    found?;
                    true
                }
                None => false,
            };
            let owned = match target {
                Some(t) if !in_place => Some(eval(t, scope)?),
                _ => None,
            };
            let mut values = Vec::with_capacity(args.len());
            for a in args {
                values.push(eval(a, scope)?);
            }
            let this = match (&owned, target) {
                (Some(v), _) => Some(v),
                (None, Some(t)) => match place(t, scope) {
                    Some(found) => Some(found?),
                    None => unreachable!("a target read in place before"),
                },
                (None, None) => None,
            };
            call(this, function, values)?
        }
        Expr::List(items) => {
            let mut out = Vec::with_capacity(items.len());
            for i in items {
                out.push(eval(i, scope)?);
            }
            Value::List(out)
        }
        Expr::Map(entries) => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let Value::Str(key) = eval(k, scope)? else {
                    return not_checked("a map literal with keys that are not strings");
                };
                out.push((key, eval(v, scope)?));
            }
            Value::Map(out)
        }
        Expr::Not(inner) => match eval(inner, scope)? {
            Value::Bool(b) => Value::Bool(!b),
            other => return not_checked(format!("!{}", other.kind())),
        },
        Expr::Negate(inner) => match eval(inner, scope)? {
            Value::Int(n) => match n.checked_neg() {
                Some(n) => Value::Int(n),
                None => return error("integer overflow"),
            },
            Value::Double(d) => Value::Double(-d),
            Value::Duration(d) => Value::Duration(-d),
            other => return not_checked(format!("-{}", other.kind())),
        },
        Expr::Cond(cond, yes, no) => match eval(cond, scope)? {
            Value::Bool(true) => eval(yes, scope)?,
            Value::Bool(false) => eval(no, scope)?,
            other => return not_checked(format!("{} ? :", other.kind())),
        },
        Expr::Binary(Op::And, l, r) => logic(eval(l, scope), eval(r, scope), false)?,
        Expr::Binary(Op::Or, l, r) => logic(eval(l, scope), eval(r, scope), true)?,
        Expr::Binary(op, l, r) => {
            let l = eval(l, scope)?;
            let r = eval(r, scope)?;
            binary(*op, l, r)?
        }
        Expr::Macro {
            kind,
            range,
            var,
            body,
        } => comprehension(*kind, eval(range, scope)?, var, body, scope)?,
    })
}

/// The value of a variable or of a field of one (`self.spec.port`), in place; `None` for any
/// other expression (evaluated by [`eval`]). The same errors as [`eval`].
fn place<'v>(expr: &Expr, scope: &'v Scope<'_>) -> Option<Result<&'v Value>> {
    Some(match expr {
        Expr::Ident(name) => match scope.get(name) {
            Some(v) => Ok(v),
            None => not_checked(format!("unknown name {name}")),
        },
        Expr::Select {
            operand,
            field,
            test: false,
        } => place(operand, scope)?.and_then(|operand| {
            let Value::Map(entries) = operand else {
                return not_checked(format!("field selection on {}", operand.kind()));
            };
            let field = unescape_field(field);
            match entries.iter().find(|(k, _)| *k == field) {
                Some((_, v)) => Ok(v),
                None => error(format!("no such key: {field}")),
            }
        }),
        _ => return None,
    })
}

/// `operand.field`, or `has(operand.field)` when `test`.
fn select(operand: &Value, field: &str, test: bool) -> Result<Value> {
    let Value::Map(entries) = operand else {
        return not_checked(format!("field selection on {}", operand.kind()));
    };
    let field = unescape_field(field);
    Ok(match entries.iter().find(|(k, _)| *k == field) {
        Some(_) if test => Value::Bool(true),
        None if test => Value::Bool(false),
        Some((_, v)) => v.clone(),
        None => return error(format!("no such key: {field}")),
    })
}

fn as_bool(v: Result<Value>) -> Result<bool> {
    match v? {
        Value::Bool(b) => Ok(b),
        other => not_checked(format!("{} where a bool is needed", other.kind())),
    }
}

/// `&&` (`wins` false) and `||` (`wins` true) as CEL has them: commutative, the deciding value
/// wins over an error on the other side.
fn logic(l: Result<Value>, r: Result<Value>, wins: bool) -> Result<Value> {
    let (l, r) = (as_bool(l), as_bool(r));
    if l == Ok(wins) || r == Ok(wins) {
        return Ok(Value::Bool(wins));
    }
    // A side this evaluator cannot judge leaves the result unjudged.
    for side in [&l, &r] {
        if let Err(Fault::NotChecked(why)) = side {
            return not_checked(why.clone());
        }
    }
    l?;
    r?;
    Ok(Value::Bool(!wins))
}

fn comprehension<'a>(
    kind: MacroKind,
    range: Value,
    var: &'a str,
    body: &'a Expr,
    scope: &mut Scope<'a>,
) -> Result<Value> {
    let items: Vec<Value> = match range {
        Value::List(items) => items,
        Value::Map(entries) => entries.into_iter().map(|(k, _)| Value::Str(k)).collect(),
        other => return not_checked(format!("a macro over {}", other.kind())),
    };
    let run = |item: Value, scope: &mut Scope<'a>| {
        scope.vars.push((var, Cow::Owned(item)));
        let out = eval(body, scope);
        scope.vars.pop();
        out
    };
    match kind {
        // `all` and `exists` stop at the deciding element, and an error elsewhere gives way
        // to it.
        MacroKind::All | MacroKind::Exists => {
            let wins = kind == MacroKind::Exists;
            let mut pending: Option<Fault> = None;
            for item in items {
                match as_bool(run(item, scope)) {
                    Ok(b) if b == wins => return Ok(Value::Bool(wins)),
                    Ok(_) => {}
                    Err(f) => {
                        if !matches!(pending, Some(Fault::NotChecked(_))) {
                            pending = Some(f);
                        }
                    }
                }
            }
            match pending {
                Some(f) => Err(f),
                None => Ok(Value::Bool(!wins)),
            }
        }
        MacroKind::ExistsOne => {
            let mut count = 0;
            for item in items {
                if as_bool(run(item, scope))? {
                    count += 1;
                }
            }
            Ok(Value::Bool(count == 1))
        }
        MacroKind::Filter => {
            let mut out = Vec::new();
            for item in items {
                if as_bool(run(item.clone(), scope))? {
                    out.push(item);
                }
            }
            Ok(Value::List(out))
        }
        MacroKind::Map => {
            let mut out = Vec::new();
            for item in items {
                out.push(run(item, scope)?);
            }
            Ok(Value::List(out))
        }
    }
}

fn equal(l: &Value, r: &Value) -> bool {
    match (l, r) {
        (Value::List(a), Value::List(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| equal(x, y))
        }
        (Value::Map(a), Value::Map(b)) => {
            a.len() == b.len()
                && a.iter().all(|(k, v)| {
                    b.iter()
                        .find(|(k2, _)| k2 == k)
                        .is_some_and(|(_, v2)| equal(v, v2))
                })
        }
        _ => match compare(l, r) {
            Some(o) => o == Ordering::Equal,
            None => l == r,
        },
    }
}

/// CEL's ordering, numbers compared across their types.
fn compare(l: &Value, r: &Value) -> Option<Ordering> {
    match (l, r) {
        (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
        (Value::Uint(a), Value::Uint(b)) => Some(a.cmp(b)),
        (Value::Int(a), Value::Uint(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
        (Value::Uint(a), Value::Int(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
        (Value::Double(a), Value::Double(b)) => a.partial_cmp(b),
        (Value::Double(a), Value::Int(b)) => a.partial_cmp(&(*b as f64)),
        (Value::Int(a), Value::Double(b)) => (*a as f64).partial_cmp(b),
        (Value::Double(a), Value::Uint(b)) => a.partial_cmp(&(*b as f64)),
        (Value::Uint(a), Value::Double(b)) => (*a as f64).partial_cmp(b),
        (Value::Str(a), Value::Str(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        (Value::Duration(a), Value::Duration(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

fn binary(op: Op, l: Value, r: Value) -> Result<Value> {
    let overflow = || Fault::Error("integer overflow".into());
    Ok(match op {
        Op::Eq => Value::Bool(equal(&l, &r)),
        Op::Ne => Value::Bool(!equal(&l, &r)),
        Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let Some(o) = compare(&l, &r) else {
                return not_checked(format!("{} compared with {}", l.kind(), r.kind()));
            };
            Value::Bool(match op {
                Op::Lt => o == Ordering::Less,
                Op::Le => o != Ordering::Greater,
                Op::Gt => o == Ordering::Greater,
                _ => o != Ordering::Less,
            })
        }
        Op::In => match r {
            Value::List(items) => Value::Bool(items.iter().any(|i| equal(&l, i))),
            Value::Map(entries) => match l {
                Value::Str(key) => Value::Bool(entries.iter().any(|(k, _)| *k == key)),
                other => return not_checked(format!("{} in map", other.kind())),
            },
            other => return not_checked(format!("in {}", other.kind())),
        },
        Op::Add => match (l, r) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a.checked_add(b).ok_or_else(overflow)?),
            (Value::Uint(a), Value::Uint(b)) => Value::Uint(a.checked_add(b).ok_or_else(overflow)?),
            (Value::Double(a), Value::Double(b)) => Value::Double(a + b),
            (Value::Str(a), Value::Str(b)) => Value::Str(a + &b),
            (Value::List(mut a), Value::List(b)) => {
                a.extend(b);
                Value::List(a)
            }
            (Value::Duration(a), Value::Duration(b)) => {
                Value::Duration(a.checked_add(b).ok_or_else(overflow)?)
            }
            (a, b) => return not_checked(format!("{} + {}", a.kind(), b.kind())),
        },
        Op::Sub => match (l, r) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a.checked_sub(b).ok_or_else(overflow)?),
            (Value::Double(a), Value::Double(b)) => Value::Double(a - b),
            (Value::Duration(a), Value::Duration(b)) => {
                Value::Duration(a.checked_sub(b).ok_or_else(overflow)?)
            }
            (a, b) => return not_checked(format!("{} - {}", a.kind(), b.kind())),
        },
        Op::Mul => match (l, r) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a.checked_mul(b).ok_or_else(overflow)?),
            (Value::Double(a), Value::Double(b)) => Value::Double(a * b),
            (a, b) => return not_checked(format!("{} * {}", a.kind(), b.kind())),
        },
        Op::Div | Op::Rem => match (l, r) {
            (Value::Int(_), Value::Int(0)) => {
                return error(if op == Op::Div {
                    "division by zero"
                } else {
                    "modulus by zero"
                });
            }
            (Value::Int(a), Value::Int(b)) => Value::Int(
                if op == Op::Div {
                    a.checked_div(b)
                } else {
                    a.checked_rem(b)
                }
                .ok_or_else(overflow)?,
            ),
            (a, b) => return not_checked(format!("{} / {}", a.kind(), b.kind())),
        },
        Op::And | Op::Or => unreachable!("evaluated by logic()"),
    })
}

/// The functions every compiled-in rule may call, by name: a rule that calls another is not
/// checked at all (`--list-analyzers` says so).
pub const FUNCTIONS: &[&str] = &[
    "size",
    "int",
    "string",
    "duration",
    "startsWith",
    "endsWith",
    "contains",
    "matches",
    "substring",
    "split",
    "lowerAscii",
    "upperAscii",
    "isURL",
    "url",
    "getScheme",
    "isIP",
];

fn call(target: Option<&Value>, function: &str, args: Vec<Value>) -> Result<Value> {
    // A global call with its receiver as first argument is the same function (`size(x)`).
    let (this, args): (&Value, &[Value]) = match target {
        Some(t) => (t, &args),
        None => {
            let Some((first, rest)) = args.split_first() else {
                return not_checked(format!("{function}()"));
            };
            (first, rest)
        }
    };
    let text = match &this {
        Value::Str(s) => Some(s.as_str()),
        _ => None,
    };
    let arg_text = |i: usize| match args.get(i) {
        Some(Value::Str(s)) => Some(s.as_str()),
        _ => None,
    };
    let arg_int = |i: usize| match args.get(i) {
        Some(Value::Int(n)) => Some(*n),
        _ => None,
    };
    Ok(match (function, this, args.len()) {
        ("size", Value::Str(s), 0) => Value::Int(s.chars().count() as i64),
        ("size", Value::List(items), 0) => Value::Int(items.len() as i64),
        ("size", Value::Map(entries), 0) => Value::Int(entries.len() as i64),
        ("int", Value::Int(n), 0) => Value::Int(*n),
        ("int", Value::Uint(n), 0) => {
            Value::Int(i64::try_from(*n).map_err(|_| Fault::Error("integer overflow".into()))?)
        }
        ("int", Value::Str(s), 0) => match go_parse_int(s) {
            Some(n) => Value::Int(n),
            None => return error("type conversion error from 'string' to 'int'"),
        },
        ("string", Value::Str(s), 0) => Value::Str(s.clone()),
        ("string", Value::Int(n), 0) => Value::Str(n.to_string()),
        ("duration", Value::Str(s), 0) => match parse_duration(s) {
            Some(d) => Value::Duration(d),
            None => {
                return error("type conversion error from 'string' to 'google.protobuf.Duration'");
            }
        },
        ("duration", Value::Duration(d), 0) => Value::Duration(*d),
        ("startsWith", _, 1) if text.is_some() && arg_text(0).is_some() => {
            Value::Bool(text.unwrap_or("").starts_with(arg_text(0).unwrap_or("")))
        }
        ("endsWith", _, 1) if text.is_some() && arg_text(0).is_some() => {
            Value::Bool(text.unwrap_or("").ends_with(arg_text(0).unwrap_or("")))
        }
        ("contains", _, 1) if text.is_some() && arg_text(0).is_some() => {
            Value::Bool(text.unwrap_or("").contains(arg_text(0).unwrap_or("")))
        }
        ("matches", _, 1) if text.is_some() && arg_text(0).is_some() => {
            Value::Bool(matches(text.unwrap_or(""), arg_text(0).unwrap_or(""))?)
        }
        ("substring", Value::Str(s), 1 | 2) if arg_int(0).is_some() => {
            let end = if args.len() == 2 {
                match arg_int(1) {
                    Some(e) => Some(e),
                    None => return not_checked("substring() with a non-int end"),
                }
            } else {
                None
            };
            Value::Str(substring(s, arg_int(0).unwrap_or(0), end)?)
        }
        ("split", Value::Str(s), 1) if arg_text(0).is_some() => {
            let sep = arg_text(0).unwrap_or("");
            let parts: Vec<Value> = if sep.is_empty() {
                s.chars().map(|c| Value::Str(c.to_string())).collect()
            } else {
                s.split(sep).map(|p| Value::Str(p.to_string())).collect()
            };
            Value::List(parts)
        }
        ("lowerAscii", Value::Str(s), 0) => Value::Str(s.to_ascii_lowercase()),
        ("upperAscii", Value::Str(s), 0) => Value::Str(s.to_ascii_uppercase()),
        ("isURL", Value::Str(s), 0) => match cel_library::parse_request_uri(s) {
            cel_library::UrlParse::Url { .. } => Value::Bool(true),
            cel_library::UrlParse::Invalid(_) => Value::Bool(false),
            cel_library::UrlParse::Unknown => return not_checked("a URL Go may read otherwise"),
        },
        ("url", Value::Str(s), 0) => match cel_library::url(s) {
            cel_library::UrlParse::Url { scheme } => Value::Url { scheme },
            cel_library::UrlParse::Invalid(why) => {
                return error(format!(
                    "URL parse error during conversion from string: {why}"
                ));
            }
            cel_library::UrlParse::Unknown => return not_checked("a URL Go may read otherwise"),
        },
        ("getScheme", Value::Url { scheme }, 0) => Value::Str(scheme.clone()),
        ("isIP", Value::Str(s), 0) => Value::Bool(cel_library::is_ip(s)),
        _ => {
            return not_checked(format!(
                "{}.{function}() with {} argument(s)",
                this.kind(),
                args.len()
            ));
        }
    })
}

/// Go's `strconv.ParseInt(s, 10, 64)`: an optional sign and decimal digits.
fn go_parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    // Rust's parse takes the same sign and digits.
    s.parse().ok()
}

/// The `strings` extension's `substring`: code points, its range errors.
fn substring(s: &str, start: i64, end: Option<i64>) -> Result<String> {
    let chars: Vec<char> = s.chars().collect();
    let len = chars.len() as i64;
    if let Some(end) = end
        && start > end
    {
        return error(format!(
            "invalid substring range. start: {start}, end: {end}"
        ));
    }
    if start < 0 || start > len {
        return error(format!("index out of range: {start}"));
    }
    let end = end.unwrap_or(len);
    if end < 0 || end > len {
        return error(format!("index out of range: {end}"));
    }
    Ok(chars[start as usize..end as usize].iter().collect())
}

/// RE2's `MatchString` through Rust's `regex` (the same syntax for what the rules use); a
/// pattern it does not compile is not judged.
fn matches(s: &str, pattern: &str) -> Result<bool> {
    super::patterns::with_regex(pattern, |re| match re {
        Some(re) => Ok(re.is_match(s)),
        None => not_checked(format!("the pattern {pattern:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::super::cel::parse;
    use super::*;
    use serde_json::json;

    fn run(rule: &str, this: Json) -> Result<Value> {
        let expr = parse(rule).unwrap();
        let mut scope = Scope::new(vec![("self", Value::from_json(&this))]);
        eval(&expr, &mut scope)
    }

    #[test]
    fn durations_as_go_reads_them() {
        let rule = "duration(self) >= duration('1ms')";
        assert_eq!(run(rule, json!("0s")), Ok(Value::Bool(false)));
        assert_eq!(run(rule, json!("1ms")), Ok(Value::Bool(true)));
        assert_eq!(run(rule, json!("1.5h")), Ok(Value::Bool(true)));
        assert_eq!(
            run(rule, json!("1e3s")),
            Err(Fault::Error(
                "type conversion error from 'string' to 'google.protobuf.Duration'".into()
            ))
        );
    }

    #[test]
    fn logic_absorbs_errors_as_cel_does() {
        assert_eq!(run("self.x == 1 || true", json!({})), Ok(Value::Bool(true)));
        assert_eq!(
            run("self.x == 1 && true", json!({})),
            Err(Fault::Error("no such key: x".into()))
        );
        assert_eq!(
            run("self.all(k, 0 < int(k))", json!({"abc": 1, "0": 1})),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            run("self.all(k, 0 < int(k))", json!({"abc": 1, "+80": 1})),
            Err(Fault::Error(
                "type conversion error from 'string' to 'int'".into()
            ))
        );
    }

    #[test]
    fn strings_macros_and_escaped_names() {
        assert_eq!(
            run("self.substring(7, 8) == '/'", json!("unix://")),
            Err(Fault::Error("index out of range: 8".into()))
        );
        assert_eq!(
            run(
                "self.filter(f, f.type == 'A').size() <= 1",
                json!([{"type": "A"}, {"type": "A"}])
            ),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            run(
                "self.all(p, self.exists_one(q, has(p.__namespace__) == has(q.__namespace__)))",
                json!([{"namespace": "a"}, {}])
            ),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            run(
                "self.all(k, k.split('/')[0].size() < 3)",
                json!({"ab/c": 1, "abc": 2})
            ),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            run(r#"self.matches(r"""^(?i)\.?[a-z_]+$""")"#, json!(".Abc")),
            Ok(Value::Bool(true))
        );
        assert!(matches!(
            run("self.frobnicate()", json!("x")),
            Err(Fault::NotChecked(_))
        ));
    }
}
