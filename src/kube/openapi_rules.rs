//! Two of the API server's CRD checks beside the schema walk of [`super::openapi`]: the string
//! `format`s (kube-openapi's `strfmt` registry, the formats the compiled-in CRDs use on a spec:
//! `byte`, `ipv4`, `ipv6`) and the duplicates of a list whose `x-kubernetes-list-type` is `set`
//! or `map` (apiextensions' `listtype` validation), with the API server's wording (Kubernetes
//! 1.34, measured with `kubectl apply --dry-run=server`).

use std::net::Ipv6Addr;

use serde_json::{Map, Value};

use super::object_rules::go_quote;

/// kube-openapi's verdict on a string of a `format`; `None` for a format it does not check on
/// strings the compiled-in CRDs hold in a spec (`int32`, `date-time`, ...: never a false
/// rejection).
pub fn format_ok(format: &str, s: &str) -> Option<bool> {
    Some(match format {
        "byte" => is_base64(s),
        // `netutils.ParseIPSloppy` (leading zeros allowed) and a dot.
        "ipv4" => (sloppy_ipv4(s) || is_ipv6(s)) && s.contains('.'),
        // `net.ParseIP` and a colon.
        "ipv6" => is_ipv6(s),
        _ => return None,
    })
}

/// govalidator's base64 pattern: groups of four of the standard alphabet, padded; not empty.
fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    let alphabet = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let (body, last) = b.split_at(b.len() - 4);
    body.iter().all(alphabet)
        && match last {
            [a, b, b'=', b'='] => alphabet(a) && alphabet(b),
            [a, b, c, b'='] => alphabet(a) && alphabet(b) && alphabet(c),
            rest => rest.iter().all(alphabet),
        }
}

/// Go's IPv4 reading before 1.17 (what `ParseIPSloppy` keeps): four decimal parts up to 255,
/// leading zeros allowed.
fn sloppy_ipv4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|c| c.is_ascii_digit())
                && p.trim_start_matches('0').len() <= 3
                && p.parse::<u32>().is_ok_and(|n| n <= 255)
        })
}

fn is_ipv6(s: &str) -> bool {
    s.parse::<Ipv6Addr>().is_ok()
}

/// A value as a `Duplicate value:` prints it: a scalar as itself (a string quoted), an object
/// or list as compact JSON with sorted keys.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        other => sorted(other).to_string(),
    }
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), sorted(&map[k]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The duplicates of a `set` or `map` list, each duplicated value once, at its second
/// occurrence: (index, the value as the API server shows it). A `map` list compares the
/// elements' keys (`x-kubernetes-list-map-keys`, an absent key left out of the comparison).
pub fn list_duplicates(schema: &Value, items: &[Value]) -> Vec<(usize, String)> {
    let key_of = |item: &Value| -> Option<Value> {
        match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => Some(item.clone()),
            Some("map") => {
                let object = item.as_object()?;
                let mut key = Map::new();
                for k in schema
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if let Some(v) = object.get(k) {
                        key.insert(k.to_string(), v.clone());
                    }
                }
                Some(Value::Object(key))
            }
            _ => None,
        }
    };
    let mut seen: Vec<(Value, usize)> = Vec::new();
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(key) = key_of(item) else {
            continue;
        };
        match seen.iter_mut().find(|(k, _)| *k == key) {
            Some((_, times)) => {
                *times += 1;
                if *times == 2 {
                    out.push((i, shown(&key)));
                }
            }
            None => seen.push((key, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_as_kube_openapi_reads_them() {
        for (format, s, ok) in [
            ("byte", "aGVsbG8=", true),
            ("byte", "YQ==", true),
            ("byte", "AAAA", true),
            ("byte", "", false),
            ("byte", "aGVsbG8", false),
            ("byte", "aGVs bG8=", false),
            ("byte", "aGVsbG8-", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0.01", true),
            ("ipv4", "::ffff:1.2.3.4", true),
            ("ipv4", "300.1.1.1", false),
            ("ipv4", " 10.0.0.1", false),
            ("ipv4", "::1", false),
            ("ipv6", "::1", true),
            ("ipv6", "1::2::3", false),
            ("ipv6", "fe80::1%eth0", false),
            ("ipv6", "10.0.0.1", false),
        ] {
            assert_eq!(format_ok(format, s), Some(ok), "{format} {s:?}");
        }
        assert_eq!(format_ok("int32", "x"), None);
    }

    #[test]
    fn duplicates_of_sets_and_maps() {
        let set = json!({"x-kubernetes-list-type": "set"});
        assert_eq!(
            list_duplicates(&set, &[json!("a"), json!("b"), json!("a"), json!("a")]),
            [(2, "\"a\"".to_string())]
        );
        let map = json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]});
        assert_eq!(
            list_duplicates(
                &map,
                &[
                    json!({"name": "https", "number": 443}),
                    json!({"name": "https", "number": 8443}),
                    json!({"number": 1}),
                    json!({"number": 2}),
                ]
            ),
            [
                (1, "{\"name\":\"https\"}".to_string()),
                (3, "{}".to_string())
            ]
        );
        assert!(list_duplicates(&json!({}), &[json!(1), json!(1)]).is_empty());
    }
}
