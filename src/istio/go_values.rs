//! Values as Istio's Go code reads and prints them: a duration string as Go's
//! `time.ParseDuration` reads it (Istio's YAML reader, the legacy `jsonpb`, decodes every
//! protobuf `Duration` with it: `1m`, `1h30m`, `500ms` and `1.5s` all work), and a float as Go's
//! `%v` prints it.

pub use crate::formats::go_duration::parse_duration;

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
