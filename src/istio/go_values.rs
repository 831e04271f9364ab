//! Values as Istio's Go code reads and prints them: a duration string as Go's
//! `time.ParseDuration` reads it (Istio's YAML reader, the legacy `jsonpb`, decodes every
//! protobuf `Duration` with it: `1m`, `1h30m`, `500ms` and `1.5s` all work), and a float as Go's
//! `%v` prints it.

/// Go's `time.ParseDuration`: the duration in nanoseconds, `None` for text Go refuses.
pub fn parse_duration(text: &str) -> Option<i64> {
    const LIMIT: u64 = 1 << 63;
    let (negative, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if s == "0" {
        return Some(0);
    }
    if s.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let first = s.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return None;
        }
        let (whole, rest) = leading_int(s)?;
        let before = rest.len() != s.len();
        s = rest;
        let (mut fraction, mut scale, mut after) = (0u64, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let (f, sc, r) = leading_fraction(rest);
            after = r.len() != rest.len();
            (fraction, scale, s) = (f, sc, r);
        }
        if !before && !after {
            return None;
        }
        let unit_len = s
            .bytes()
            .position(|c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return None;
        }
        let unit: u64 = match &s[..unit_len] {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        s = &s[unit_len..];
        if whole > LIMIT / unit {
            return None;
        }
        let mut value = whole * unit;
        if fraction > 0 {
            value += (fraction as f64 * (unit as f64 / scale)) as u64;
            if value > LIMIT {
                return None;
            }
        }
        total += value;
        if total > LIMIT {
            return None;
        }
    }
    if negative {
        return Some((total as i64).wrapping_neg());
    }
    i64::try_from(total).ok()
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

/// Go's `%v` of a float64: the shortest digits, with an exponent (`1e+06`, `5e-05`) when it is
/// below -4 or at least 6.
pub fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let scientific = format!("{f:e}");
    let (mantissa, exp) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    format!("{f}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_go_reads_them() {
        for (text, want) in [
            ("1m", Some(60_000_000_000)),
            (".5s", Some(500_000_000)),
            ("1.s", Some(1_000_000_000)),
            ("0", Some(0)),
            ("-0", Some(0)),
            ("+5s", Some(5_000_000_000)),
            ("1h2m3.5s", Some(3_723_500_000_000)),
            ("0.0005s", Some(500_000)),
            ("1e3s", None),
            ("5parsecs", None),
            ("", None),
            ("1.0000000001s", Some(1_000_000_000)),
            ("9223372036s", Some(9_223_372_036_000_000_000)),
            ("\u{b5}s", None),
            ("1\u{b5}s", Some(1_000)),
            ("100us", Some(100_000)),
            ("-1.5ms", Some(-1_500_000)),
            ("5", None),
            ("s", None),
            (".s", None),
        ] {
            assert_eq!(parse_duration(text), want, "{text:?}");
        }
    }

    #[test]
    fn floats_as_go_prints_them() {
        for (f, want) in [
            (150.0, "150"),
            (-5.0, "-5"),
            (0.00005, "5e-05"),
            (100.5, "100.5"),
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (1e21, "1e+21"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e-7, "1e-07"),
            (-0.5, "-0.5"),
        ] {
            assert_eq!(float_v(f), want, "{f}");
        }
    }
}
