//! Durations and sizes, pure: kubectl's (Go's) duration syntax and Kubernetes' quantity suffixes,
//! with the limits every flag shares.

use std::time::Duration;

/// The longest duration any flag accepts. A longer one is a usage error (exit 64), never a
/// clock overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Parses kubectl's (Go's) duration syntax: a sequence of decimal numbers, each with a unit
/// (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), such as `500ms`, `30s`, `1m30s`, `2h`, `1.5h`; a bare
/// number is seconds (as kubectl's `--request-timeout` takes it). At most [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let invalid = || format!("invalid duration {text:?}: use e.g. 500ms, 30s, 1m30s or 2h");
    let too_long = || {
        format!(
            "duration {text:?} is too long: at most {}h",
            MAX_DURATION.as_secs() / 3600
        )
    };
    if text.is_empty() {
        return Err(invalid());
    }
    // A bare number: seconds.
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return scaled(text, 1_000_000_000)
            .ok_or_else(invalid)?
            .ok_or_else(too_long);
    }
    let body = text.strip_prefix('+').unwrap_or(text);
    if body.starts_with('-') {
        return Err(format!(
            "invalid duration {text:?}: it must not be negative"
        ));
    }
    let mut rest = body;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(digits);
        if number.is_empty() {
            return Err(invalid());
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let nanos_per_unit: u128 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(invalid()),
        };
        let part = scaled(number, nanos_per_unit)
            .ok_or_else(invalid)?
            .ok_or_else(too_long)?;
        total += part.as_nanos();
        if total > MAX_DURATION.as_nanos() {
            return Err(too_long());
        }
        rest = next;
    }
    Ok(Duration::from_nanos(
        u64::try_from(total).map_err(|_| too_long())?,
    ))
}

/// Parses a size in bytes as Kubernetes quantities write it: `64Mi`, `1Gi`, `500Ki`, `100M`,
/// `2G`, `1000`. At least 1 byte.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let invalid =
        || format!("invalid size {text:?}: use e.g. 64Mi, 1Gi, 500Ki or a number of bytes");
    let number: u64 = number.parse().map_err(|_| invalid())?;
    let factor: u64 = match unit {
        "" => 1,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        _ => return Err(invalid()),
    };
    let bytes = number
        .checked_mul(factor)
        .ok_or_else(|| format!("size {text:?} is too large"))?;
    if bytes == 0 {
        return Err(format!("invalid size {text:?}: it must be at least 1 byte"));
    }
    Ok(bytes)
}

/// A size as `--max-input-size` takes it: `64Mi`, `1Gi`, or bytes.
pub fn show_size(bytes: u64) -> String {
    for (unit, factor) in [
        ("Ti", 1u64 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ] {
        if bytes >= factor && bytes.is_multiple_of(factor) {
            return format!("{}{unit}", bytes / factor);
        }
    }
    format!("{bytes} bytes")
}

/// A duration as the flags take it: `1m30s`, `2m`, `500ms`, `1.5s`.
pub fn show_duration(d: Duration) -> String {
    let millis = d.as_millis();
    if millis < 1000 {
        return if millis == 0 && !d.is_zero() {
            format!("{}us", d.as_micros())
        } else {
            format!("{millis}ms")
        };
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let frac = d.subsec_millis();
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || frac > 0 {
        if frac > 0 {
            let f = format!("{:03}", frac);
            out.push_str(&format!("{s}.{}s", f.trim_end_matches('0')));
        } else {
            out.push_str(&format!("{s}s"));
        }
    }
    out
}

/// An age or an elapsed time as kubectl shows one (its HumanDuration): `45s`, `2m5s`, `17m`,
/// `5h3m`, `30h`, `3d4h`, `400d`, `2y10d`. Every age and uptime the tool prints is written so.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let d = (hours / 24) % 365;
        return if d == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{d}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// `number` (decimal digits with at most one `.`) times `nanos_per_unit` nanoseconds, exactly:
/// `None` when it is not a number, `Some(None)` when it exceeds [`MAX_DURATION`].
fn scaled(number: &str, nanos_per_unit: u128) -> Option<Option<Duration>> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty())
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let max = MAX_DURATION.as_nanos();
    let mut nanos: u128 = 0;
    for digit in whole.bytes() {
        nanos = nanos * 10 + u128::from(digit - b'0');
        if nanos.saturating_mul(nanos_per_unit) > max {
            return Some(None);
        }
    }
    let mut total = nanos * nanos_per_unit;
    // Fractions below a nanosecond are dropped, as Go drops them.
    let mut scale = nanos_per_unit;
    for digit in fraction.bytes() {
        scale /= 10;
        if scale == 0 {
            break;
        }
        total += u128::from(digit - b'0') * scale;
    }
    if total > max {
        return Some(None);
    }
    Some(u64::try_from(total).ok().map(Duration::from_nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_durations() {
        assert_eq!(human_duration(45), "45s");
        assert_eq!(human_duration(125), "2m5s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 120), "3h2m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86400 + 4 * 3600), "3d4h");
        assert_eq!(human_duration(400 * 86400), "400d");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert!(parse_duration("5x").is_err());
    }

    #[test]
    fn durations_take_kubectls_syntax() {
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h2m3s").unwrap(), Duration::from_secs(3723));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("10ns").unwrap(), Duration::from_nanos(10));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("24h").unwrap(), MAX_DURATION);
        for bad in [
            "", "s", "1.2.3s", "-5s", "5 s", "1m30", "h1", ".s", "1d", "\u{0}",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn durations_are_shown_as_flags_take_them() {
        assert_eq!(show_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(show_duration(Duration::from_secs(120)), "2m");
        assert_eq!(show_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(show_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(show_duration(Duration::from_secs(7200)), "2h");
        for d in ["1m30s", "2m", "500ms", "1.5s", "2h", "1h0m5s"] {
            let shown = show_duration(parse_duration(d).unwrap());
            assert_eq!(parse_duration(&shown).unwrap(), parse_duration(d).unwrap());
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64Mi").unwrap(), 64 << 20);
        assert_eq!(parse_size("1Gi").unwrap(), 1 << 30);
        assert_eq!(parse_size("100M").unwrap(), 100_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        for bad in ["", "0", "1x", "-1", "1.5Mi", "99999999999999999999Gi"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert_eq!(show_size(64 << 20), "64Mi");
        assert_eq!(show_size(1000), "1000 bytes");
    }

    // Regression (issue 11, item 2): huge values panicked in Duration::from_secs_f64, or
    // overflowed Instant arithmetic in the workers; they are usage errors now.
    #[test]
    fn durations_beyond_the_maximum_are_rejected() {
        for huge in [
            "6000000000000000h",
            "9223372036854775807s",
            "9223372036854775807",
            "24h1ns",
            "25h",
            "1441m",
            "99999999999999999999999999999999999999999999ms",
        ] {
            let err = parse_duration(huge).unwrap_err();
            assert!(err.contains("too long"), "{huge}: {err}");
        }
    }
}
