//! Go's `time.ParseDuration`, which Istio's YAML reader and Kubernetes' CEL `duration()` both
//! use to read a duration string, with its error texts.

/// Go's `time.ParseDuration`: the duration in nanoseconds, `None` for text Go refuses.
pub fn parse_duration(text: &str) -> Option<i64> {
    go_parse_duration(text).ok()
}

/// Go's `time.ParseDuration` with its error text (`time: unknown unit "e" in duration "1e3s"`).
pub fn go_parse_duration(text: &str) -> Result<i64, String> {
    const LIMIT: u64 = 1 << 63;
    let invalid = || format!("time: invalid duration {}", quote(text));
    let (negative, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let first = s.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let (whole, rest) = leading_int(s).ok_or_else(invalid)?;
        let before = rest.len() != s.len();
        s = rest;
        let (mut fraction, mut scale, mut after) = (0u64, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let (f, sc, r) = leading_fraction(rest);
            after = r.len() != rest.len();
            (fraction, scale, s) = (f, sc, r);
        }
        if !before && !after {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .position(|c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", quote(text)));
        }
        let unit: u64 = match &s[..unit_len] {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            other => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    quote(other),
                    quote(text)
                ));
            }
        };
        s = &s[unit_len..];
        if whole > LIMIT / unit {
            return Err(invalid());
        }
        let mut value = whole * unit;
        if fraction > 0 {
            value += (fraction as f64 * (unit as f64 / scale)) as u64;
            if value > LIMIT {
                return Err(invalid());
            }
        }
        total += value;
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if negative {
        return Ok((total as i64).wrapping_neg());
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// The `time` package's `quote`: double quotes, `"` and `\` escaped, every byte of a character
/// that is not printable ASCII as `\xNN`.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if (c as u32) < 0x20 || !c.is_ascii() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// Go's `leadingInt`: the leading digits, `None` on overflow.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let mut x: u64 = 0;
    let mut i = 0;
    for c in s.bytes() {
        if !c.is_ascii_digit() {
            break;
        }
        if x > (1 << 63) / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > 1 << 63 {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

/// Go's `leadingFraction`: the digits after the point and their scale (precision stops growing
/// on overflow).
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let (mut x, mut scale, mut overflow) = (0u64, 1f64, false);
    let mut i = 0;
    for c in s.bytes() {
        if !c.is_ascii_digit() {
            break;
        }
        i += 1;
        if overflow {
            continue;
        }
        if x > ((1u64 << 63) - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > 1 << 63 {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[i..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_error_texts() {
        assert_eq!(go_parse_duration("1.5h"), Ok(5_400_000_000_000));
        for (text, want) in [
            ("1e3s", r#"time: unknown unit "e" in duration "1e3s""#),
            (
                "5parsecs",
                r#"time: unknown unit "parsecs" in duration "5parsecs""#,
            ),
            ("5", r#"time: missing unit in duration "5""#),
            ("", r#"time: invalid duration """#),
            ("abc", r#"time: invalid duration "abc""#),
            ("9999999999h", r#"time: invalid duration "9999999999h""#),
            (
                "5\u{e9}s",
                r#"time: unknown unit "\xc3\xa9s" in duration "5\xc3\xa9s""#,
            ),
        ] {
            assert_eq!(go_parse_duration(text), Err(want.to_string()), "{text:?}");
        }
    }
}
