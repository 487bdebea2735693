//! Splitting text records into fields and parsing numbers straight from bytes.
//!
//! The parsers work on byte slices of a reused line buffer so that no line costs an allocation.
//! Numbers are parsed by hand with checked arithmetic: an overflow is a malformed field, never a
//! panic or a silently wrapped value. Decimal fractions are converted exactly to integer units
//! (nanoseconds, usually) without going through floating point.

/// Splits `line` at runs of spaces and tabs, ignoring leading and trailing ones. The first `N`
/// fields go into `out`; the return value counts all fields, so a caller can report how many
/// there were even when there were too many to keep.
pub(crate) fn split_whitespace<'a, const N: usize>(
    line: &'a [u8],
    out: &mut [&'a [u8]; N],
) -> usize {
    let mut count = 0;
    let mut i = 0;
    let len = line.len();
    while i < len {
        while i < len && is_blank(line[i]) {
            i += 1;
        }
        if i == len {
            break;
        }
        let start = i;
        while i < len && !is_blank(line[i]) {
            i += 1;
        }
        if count < N {
            out[count] = &line[start..i];
        }
        count += 1;
    }
    count
}

/// Splits `line` at every `sep` byte, trimming spaces and tabs around each field. An empty line
/// has one empty field, as in CSV.
pub(crate) fn split_on<'a, const N: usize>(
    line: &'a [u8],
    sep: u8,
    out: &mut [&'a [u8]; N],
) -> usize {
    let mut count = 0;
    for field in line.split(|&b| b == sep) {
        if count < N {
            out[count] = trim(field);
        }
        count += 1;
    }
    count
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Removes spaces and tabs at both ends.
pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if is_blank(*first) {
            s = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = s {
        if is_blank(*last) {
            s = rest;
        } else {
            break;
        }
    }
    s
}

/// Parses a non-empty run of ASCII digits.
pub(crate) fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for &b in s {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
    }
    Some(value)
}

/// Exactly `N` unsigned decimal integers separated by spaces or tabs, in one pass over the
/// line; `None` for anything else (a sign, a letter, a missing or extra field, a value of 19
/// digits or more), which the caller's general path then parses and reports precisely. This is
/// the hot path of all-integer formats: it avoids splitting first and checking each digit's
/// arithmetic.
#[inline]
pub(crate) fn parse_uints<const N: usize>(line: &[u8]) -> Option<[u64; N]> {
    let mut out = [0u64; N];
    let mut i = 0;
    let len = line.len();
    for slot in out.iter_mut() {
        while i < len && is_blank(line[i]) {
            i += 1;
        }
        let start = i;
        let mut value = 0u64;
        while i < len {
            let digit = line[i].wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            // Wrapping: a value past 18 digits is thrown away below, whatever it became.
            value = value.wrapping_mul(10).wrapping_add(digit as u64);
            i += 1;
        }
        // 18 digits cannot overflow; longer numbers take the checked path.
        let digits = i - start;
        if digits == 0 || digits > 18 || (i < len && !is_blank(line[i])) {
            return None;
        }
        *slot = value;
    }
    while i < len && is_blank(line[i]) {
        i += 1;
    }
    (i == len).then_some(out)
}

pub(crate) fn parse_u32(s: &[u8]) -> Option<u32> {
    parse_u64(s).and_then(|v| u32::try_from(v).ok())
}

/// Parses hexadecimal digits with an optional `0x` prefix, as C's `%x` accepts them.
pub(crate) fn parse_hex_u64(s: &[u8]) -> Option<u64> {
    let digits = match s {
        [b'0', b'x' | b'X', rest @ ..] => rest,
        _ => s,
    };
    if digits.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for &b in digits {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return None,
        };
        value = value.checked_mul(16)?.checked_add(u64::from(digit))?;
    }
    Some(value)
}

/// Parses a non-negative decimal number such as `12`, `0.026214` or `.5` and returns it in
/// units of 10^-`scale` (so `scale` 9 turns seconds into nanoseconds), rounding any further
/// digits to the nearest unit, halves up. There is no exponent syntax.
pub(crate) fn parse_decimal_scaled(s: &[u8], scale: u32) -> Option<u64> {
    let (int_part, frac_part) = match s.iter().position(|&b| b == b'.') {
        Some(dot) => (&s[..dot], &s[dot + 1..]),
        None => (s, &s[s.len()..]),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let whole = if int_part.is_empty() {
        0
    } else {
        parse_u64(int_part)?
    };
    let mut value = whole.checked_mul(10u64.checked_pow(scale)?)?;
    let mut frac: u64 = 0;
    let mut round_up = false;
    for (i, &b) in frac_part.iter().enumerate() {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        let i = i as u64;
        if i < u64::from(scale) {
            frac = frac * 10 + u64::from(digit);
        } else if i == u64::from(scale) {
            round_up = digit >= 5;
        }
    }
    let kept = frac_part.len().min(scale as usize) as u32;
    frac *= 10u64.pow(scale - kept);
    value = value.checked_add(frac)?;
    if round_up {
        value = value.checked_add(1)?;
    }
    Some(value)
}

/// Renders an offending field for an error message: lossy UTF-8, quoted, cut to 40 characters.
pub(crate) fn show(s: &[u8]) -> String {
    const LIMIT: usize = 40;
    let text = String::from_utf8_lossy(s);
    let mut shown: String = text.chars().take(LIMIT).collect();
    if text.chars().count() > LIMIT {
        shown.push_str("...");
    }
    format!("{shown:?}")
}

/// The message for a field that did not parse: which field (1-based), what it holds, what was
/// expected and what was found.
pub(crate) fn bad_field(position: usize, name: &str, expected: &str, found: &[u8]) -> String {
    format!(
        "field {position} ({name}): expected {expected}, found {}",
        show(found)
    )
}

/// Multiplies a count of `unit`-byte blocks into bytes, reporting overflow in the given field.
pub(crate) fn blocks_to_bytes(
    blocks: u64,
    unit: u64,
    position: usize,
    name: &str,
) -> Result<u64, String> {
    blocks.checked_mul(unit).ok_or_else(|| {
        format!("field {position} ({name}): {blocks} blocks of {unit} bytes overflow a 64-bit byte offset")
    })
}

/// Checks that a request's end (offset plus length) is representable, so that no later stage
/// can overflow computing it.
pub(crate) fn check_end(offset_bytes: u64, len_bytes: u64) -> Result<(), String> {
    match offset_bytes.checked_add(len_bytes) {
        Some(_) => Ok(()),
        None => Err(format!(
            "the request at byte offset {offset_bytes} with length {len_bytes} ends beyond 2^64 bytes"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_uints_takes_exactly_n_plain_integers() {
        assert_eq!(parse_uints::<3>(b"1 22\t333"), Some([1, 22, 333]));
        assert_eq!(parse_uints::<3>(b"  1 22 333  "), Some([1, 22, 333]));
        assert_eq!(
            parse_uints::<1>(b"999999999999999999"),
            Some([999_999_999_999_999_999])
        );
        for bad in [
            &b"1 2"[..],
            b"1 2 3 4",
            b"1 -2 3",
            b"1 2x 3",
            b"1 2 3x",
            b"",
            b"1 2 9999999999999999999",
        ] {
            assert_eq!(
                parse_uints::<3>(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn whitespace_split_counts_every_field() {
        let mut out = [&b""[..]; 3];
        let n = split_whitespace(b"  a\tbb  c d ", &mut out);
        assert_eq!(n, 4);
        assert_eq!(out, [&b"a"[..], b"bb", b"c"]);
        assert_eq!(split_whitespace(b" \t ", &mut out), 0);
    }

    #[test]
    fn separator_split_trims_and_keeps_empty_fields() {
        let mut out = [&b""[..]; 4];
        let n = split_on(b" 1, x ,,", b',', &mut out);
        assert_eq!(n, 4);
        assert_eq!(out, [&b"1"[..], b"x", b"", b""]);
    }

    #[test]
    fn integers_reject_junk_and_overflow() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"1a"), None);
        assert_eq!(parse_u32(b"4294967296"), None);
        assert_eq!(parse_hex_u64(b"0x1F"), Some(31));
        assert_eq!(parse_hex_u64(b"10"), Some(16));
        assert_eq!(parse_hex_u64(b"0x"), None);
    }

    #[test]
    fn decimals_convert_exactly() {
        assert_eq!(parse_decimal_scaled(b"0.026214", 9), Some(26_214_000));
        assert_eq!(parse_decimal_scaled(b"9.378414801", 9), Some(9_378_414_801));
        assert_eq!(parse_decimal_scaled(b"13.191135", 6), Some(13_191_135));
        assert_eq!(parse_decimal_scaled(b"20935.440364", 3), Some(20_935_440));
        assert_eq!(parse_decimal_scaled(b"1.0005", 3), Some(1_001));
        assert_eq!(parse_decimal_scaled(b"7", 3), Some(7_000));
        assert_eq!(parse_decimal_scaled(b".5", 1), Some(5));
        assert_eq!(parse_decimal_scaled(b"3.", 1), Some(30));
        assert_eq!(parse_decimal_scaled(b".", 1), None);
        assert_eq!(parse_decimal_scaled(b"1.2.3", 3), None);
        assert_eq!(parse_decimal_scaled(b"1e3", 3), None);
        assert_eq!(
            parse_decimal_scaled(b"18446744073.709551615", 9),
            Some(u64::MAX)
        );
        assert_eq!(parse_decimal_scaled(b"18446744073.709551616", 9), None);
        assert_eq!(parse_decimal_scaled(b"99999999999", 9), None);
    }

    #[test]
    fn shown_fields_are_bounded() {
        assert_eq!(show(b"abc"), "\"abc\"");
        assert!(show(&[b'x'; 100]).ends_with("...\""));
    }
}
