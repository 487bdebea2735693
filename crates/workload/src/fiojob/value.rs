//! fio's value syntax: integers with unit suffixes that depend on `kb_base`, times whose
//! default unit depends on the option, booleans, percentages and the comma-separated
//! read,write,trim triples.
//!
//! Hand-written because fio's rules are its own: with the default `kb_base=1024`, `4k`, `4kb`
//! and `4ki` are 4096 bytes but `4kib` is 4000 (fio 3.33, checked against fio itself by
//! `crates/sim/tests/fio_jobs.rs`), which no size-parsing library reproduces.

use crate::flows::Extent;

/// The expected form of a size, for messages.
pub(super) const SIZE_EXPECTED: &str =
    "a whole number with an optional unit such as 4k, 64KiB, 1m, 2g or 0x1000";

/// Reads an integer as fio does: decimal or `0x` hexadecimal, then an optional unit. With
/// `kb_base` 1024 (fio's default) `k`, `kb` and `ki` are 1024 and `kib` is 1000 (and so on for
/// m, g, t, p); with 1000 the two are swapped. `b` is bytes. Case does not matter.
pub(super) fn int(text: &str, kb_base: u64) -> Result<u64, String> {
    let text = text.trim();
    let lower = text.to_ascii_lowercase();
    let (number, suffix) = if let Some(hex) = lower.strip_prefix("0x") {
        let digits = hex.bytes().take_while(u8::is_ascii_hexdigit).count();
        let value = u64::from_str_radix(&hex[..digits], 16).map_err(|_| SIZE_EXPECTED)?;
        (value, &hex[digits..])
    } else {
        let digits = lower.bytes().take_while(u8::is_ascii_digit).count();
        let value = lower[..digits]
            .parse::<u64>()
            .map_err(|_| SIZE_EXPECTED.to_string())?;
        (value, &lower[digits..])
    };
    let multiplier = unit_multiplier(suffix.trim(), kb_base).ok_or(SIZE_EXPECTED)?;
    number
        .checked_mul(multiplier)
        .ok_or_else(|| format!("{SIZE_EXPECTED}, below 16 EiB"))
}

/// The multiplier of a size unit (already lower case), or `None` if it is not one.
fn unit_multiplier(suffix: &str, kb_base: u64) -> Option<u64> {
    if suffix.is_empty() || suffix == "b" {
        return Some(1);
    }
    let mut chars = suffix.chars();
    let power = match chars.next()? {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => return None,
    };
    let base = match chars.as_str() {
        "" | "b" | "i" => kb_base,
        // fio reads the three-letter IEC form in the other base than kb_base's.
        "ib" => {
            if kb_base == 1000 {
                1024
            } else {
                1000
            }
        }
        _ => return None,
    };
    base.checked_pow(power)
}

/// Reads a size or a percentage of the device (`20%`), as fio's `size` and `offset` take them.
pub(super) fn extent(text: &str, kb_base: u64) -> Result<Extent, String> {
    let text = text.trim();
    if let Some(number) = text.strip_suffix('%') {
        return match number.trim().parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => Ok(Extent::Percent(p)),
            _ => Err("a percentage above 0% and at most 100%".into()),
        };
    }
    int(text, kb_base).map(Extent::Bytes)
}

/// Reads a time as fio does: a whole number with an optional unit (`d`, `h`, `m` or `min`,
/// `s` or `sec`, `ms` or `msec`, `us` or `usec`, `ns` or `nsec`; any case), in nanoseconds.
/// Without a unit the number is in `default_unit_ns` (seconds for most options, microseconds
/// for `thinktime`).
pub(super) fn time_ns(text: &str, default_unit_ns: u64) -> Result<u64, String> {
    let expected = "a whole number with an optional unit d, h, m, s, ms, us or ns, e.g. 30s";
    let lower = text.trim().to_ascii_lowercase();
    let digits = lower.bytes().take_while(u8::is_ascii_digit).count();
    let number = lower[..digits]
        .parse::<u64>()
        .map_err(|_| expected.to_string())?;
    let unit_ns = match lower[digits..].trim() {
        "" => default_unit_ns,
        "ns" | "nsec" => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return Err(expected.into()),
    };
    number
        .checked_mul(unit_ns)
        .ok_or_else(|| format!("{expected}, below 584 years"))
}

/// Reads a boolean: `1` or `0` (a bare flag, `None`, is true).
pub(super) fn boolean(value: Option<&str>) -> Result<bool, String> {
    match value.map(str::trim) {
        None | Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(_) => Err("1 or 0".into()),
    }
}

/// Reads a whole number without a unit.
pub(super) fn count(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| "a whole number".to_string())
}

/// Reads a percentage from 0 to 100.
pub(super) fn percent(text: &str) -> Result<u8, String> {
    match count(text) {
        Ok(p) if p <= 100 => Ok(p as u8),
        _ => Err("a whole percentage from 0 to 100".into()),
    }
}

/// The read, write and trim parts of a value that fio lets differ by direction
/// (`bs=4k,64k`), as fio reads them: one value applies to all three; with several, a missing
/// one repeats the last given and an empty one means the option's default (`None`).
pub(super) fn per_direction(value: &str) -> [Option<&str>; 3] {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    let at = |i: usize| {
        let part = parts.get(i).or(parts.last()).copied().unwrap_or("");
        (!part.is_empty()).then_some(part)
    };
    [at(0), at(1), at(2)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_fio_and_its_kb_base() {
        for (text, bytes) in [
            ("4096", 4096),
            ("4k", 4096),
            ("4K", 4096),
            ("4kb", 4096),
            ("4KB", 4096),
            ("4ki", 4096),
            ("4kib", 4000),
            ("4KiB", 4000),
            ("1mi", 1 << 20),
            ("1000ki", 1_024_000),
            ("4096b", 4096),
            ("0x1000", 4096),
            ("2g", 2 << 30),
        ] {
            assert_eq!(int(text, 1024), Ok(bytes), "{text}");
        }
        assert_eq!(int("4k", 1000), Ok(4000));
        assert_eq!(int("4ki", 1000), Ok(4000));
        assert_eq!(int("4kib", 1000), Ok(4096));
        for bad in ["", "k", "4x", "4kk", "-4k", "4.5k", "99999999999999999999"] {
            assert!(int(bad, 1024).is_err(), "{bad}");
        }
        assert_eq!(extent("25%", 1024), Ok(Extent::Percent(25.0)));
        assert!(extent("0%", 1024).is_err());
    }

    #[test]
    fn times_take_the_option_s_default_unit() {
        assert_eq!(time_ns("30", 1_000_000_000), Ok(30_000_000_000));
        assert_eq!(time_ns("30", 1_000), Ok(30_000));
        assert_eq!(time_ns("2m", 1_000), Ok(120_000_000_000));
        assert_eq!(time_ns("10msec", 1), Ok(10_000_000));
        assert_eq!(time_ns("5US", 1), Ok(5_000));
        assert!(time_ns("5 parsecs", 1).is_err());
    }

    #[test]
    fn per_direction_values_repeat_the_last_and_leave_empty_ones_to_the_default() {
        assert_eq!(per_direction("4k"), [Some("4k"); 3]);
        assert_eq!(
            per_direction("4k,64k"),
            [Some("4k"), Some("64k"), Some("64k")]
        );
        assert_eq!(per_direction("4k,"), [Some("4k"), None, None]);
        assert_eq!(per_direction(",8k"), [None, Some("8k"), Some("8k")]);
        assert_eq!(
            per_direction("1k,2k,3k"),
            [Some("1k"), Some("2k"), Some("3k")]
        );
    }
}
