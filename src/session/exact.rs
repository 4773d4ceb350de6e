//! Whether a session file can be written back without changing what it says.
//!
//! Loading keeps fields this build does not know and writes them back on save. Some JSON
//! cannot make that trip exactly through `serde_json`: a number with more precision or range
//! than an `f64`/`u64`/`i64` (`123456789012345678901234567890`, `0.10000000000000000000001`,
//! `1e-400`), and an object with the same key twice (one of them would be dropped). Such a
//! file is refused as damaged (exit 5) and left untouched, never rewritten lossily. So is an
//! integer that would come back as a float (`-0`, written back as `-0.0`). A number
//! whose value survives but whose spelling changes (`1E2` written back as `100.0`) is fine.
//! (Lone surrogates such as `"\ud800"` and numbers out of `f64` range such as `1e400` are
//! already refused by `serde_json` itself.)

use std::borrow::Cow;
use std::collections::HashSet;
use std::str::FromStr;

use serde_json::Value;

/// Checks a document that `serde_json` already parsed (so it is valid JSON), in one pass.
///
/// Errors: a description of the first value that cannot be kept exactly, with its line.
pub fn check(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    // One entry per open object (its keys so far, and whether a key comes next) or array.
    // Keys are borrowed from the text unless they hold an escape.
    let mut stack: Vec<Option<(Keys<'_>, bool)>> = Vec::new();
    let mut line = 1usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => line += 1,
            b'{' => stack.push(Some((Keys::default(), true))),
            b'[' => stack.push(None),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(Some((_, key_next))) = stack.last_mut() {
                    *key_next = true;
                }
            }
            b':' => {
                if let Some(Some((_, key_next))) = stack.last_mut() {
                    *key_next = false;
                }
            }
            b'"' => {
                let start = i;
                i += 1;
                let mut escaped = false;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' => {
                            escaped = true;
                            i += 1;
                        }
                        b'"' => break,
                        _ => {}
                    }
                    i += 1;
                }
                if let Some(Some((keys, true))) = stack.last_mut() {
                    let raw = &text[start..=i.min(bytes.len() - 1)];
                    let key: Cow<'_, str> = if escaped {
                        serde_json::from_str::<String>(raw)
                            .map_err(|e| e.to_string())?
                            .into()
                    } else {
                        raw[1..raw.len() - 1].into()
                    };
                    if let Some(key) = keys.insert(key) {
                        return Err(format!(
                            "line {line}: the key \"{}\" appears twice in one object, and only one could be kept",
                            crate::term::clean_line(&key)
                        ));
                    }
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let token = &text[start..i];
                if !exact(token) {
                    let back = serde_json::Number::from_str(token)
                        .map(|n| n.to_string())
                        .unwrap_or_else(|_| "an error".into());
                    return Err(format!(
                        "line {line}: the number {token} cannot be kept exactly by this version (it would be written back as {back})"
                    ));
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The keys of one object so far: a list searched in order while it is short (most objects
/// have a handful of keys, and hashing each one cost more than the search, measured on long
/// sessions), a hash set beyond [`Keys::LIST`] so that an object with very many keys stays
/// linear.
#[derive(Default)]
struct Keys<'t> {
    list: Vec<Cow<'t, str>>,
    set: HashSet<Cow<'t, str>>,
}

impl<'t> Keys<'t> {
    /// Longest list searched in order.
    const LIST: usize = 16;

    /// Adds `key`; gives it back when the object already has it.
    fn insert(&mut self, key: Cow<'t, str>) -> Option<Cow<'t, str>> {
        if self.set.is_empty() {
            if self.list.contains(&key) {
                return Some(key);
            }
            if self.list.len() < Self::LIST {
                self.list.push(key);
                return None;
            }
            self.set.extend(self.list.drain(..));
        }
        if self.set.contains(&key) {
            return Some(key);
        }
        self.set.insert(key);
        None
    }
}

/// The one rule for a count pas-agent reads out of a record's unknown fields: a JSON integer
/// written as one (`3`, not `3.0`, `3e0` or `"3"`), not negative. `None` for anything else.
pub fn count(value: &Value) -> Option<u64> {
    value.as_u64()
}

/// Whether `serde_json` writes the number back with the same value, and an integer as an
/// integer (`-0` would come back as the float `-0.0`).
fn exact(token: &str) -> bool {
    // A plain non-negative integer that fits a u64 comes back as it is (JSON allows no
    // leading zeros): the common case, without the round trip below.
    if token.len() <= 19 && token.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    let Ok(n) = serde_json::Number::from_str(token) else {
        return false;
    };
    let is_integer = |t: &str| !t.contains(['.', 'e', 'E']);
    let back = n.to_string();
    if is_integer(token) && !is_integer(&back) {
        return false;
    }
    match (decimal(token), decimal(&back)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// A JSON number as `(negative, significant digits, exponent)`, value `0.digits × 10^exp`
/// (zero: no digits, exponent 0, the sign kept). `None` when the exponent does not fit.
fn decimal(token: &str) -> Option<(bool, String, i64)> {
    let (neg, rest) = match token.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, token),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{int}{frac}");
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all
        .trim_start_matches('0')
        .trim_end_matches('0')
        .to_string();
    if digits.is_empty() {
        return Some((neg, digits, 0));
    }
    let exp: i64 = match exp {
        Some(e) => e.trim_start_matches('+').parse().ok()?,
        None => 0,
    };
    let point = i64::try_from(int.len()).ok()? - i64::try_from(lead).ok()?;
    Some((neg, digits, exp.checked_add(point)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_inexact_numbers() {
        for ok in [
            "0",
            "1",
            "-1",
            "1.0",
            "1E2",
            "1e2",
            "0.5",
            "18446744073709551615",
            "-9223372036854775808",
            "1.5e300",
            "0.1",
            "123.456",
        ] {
            assert!(exact(ok), "{ok}");
        }
        for bad in [
            "123456789012345678901234567890",
            "18446744073709551616",
            "-9223372036854775809",
            "0.10000000000000000000001",
            "1e400",
            "1e-400",
            "-0",
        ] {
            assert!(!exact(bad), "{bad}");
        }
    }

    proptest::proptest! {
        /// Whatever number pas-agent itself writes is read back: no false refusals.
        #[test]
        fn numbers_serde_json_writes_are_exact(f in proptest::num::f64::ANY, u: u64, i: i64) {
            for v in [serde_json::json!(f), serde_json::json!(u), serde_json::json!(i)] {
                if v.is_number() {
                    let text = v.to_string();
                    proptest::prop_assert!(exact(&text), "{}", text);
                }
            }
        }

        /// A decimal with more significant digits than a double keeps is refused unless it
        /// happens to be exactly what comes back.
        #[test]
        fn long_decimals_are_refused_or_exact(int in 0u64..1000, frac in "[0-9]{18,30}") {
            let token = format!("{int}.{frac}1");
            let back = serde_json::Number::from_str(&token).unwrap().to_string();
            proptest::prop_assert_eq!(exact(&token), decimal(&token) == decimal(&back));
            proptest::prop_assert!(!exact(&token));
        }
    }

    #[test]
    fn duplicate_keys_at_any_depth() {
        assert!(check(r#"{"a":1,"b":{"a":2}}"#).is_ok());
        assert!(check(r#"{"a":1,"a":2}"#).unwrap_err().contains("twice"));
        assert!(check(r#"{"x":[{"k":1,"k":1}]}"#).is_err());
        assert!(check(r#"{"a\u0062":1,"ab":2}"#).is_err());
        assert!(check(r#"{"s":"a:b,\"c\"","t":"{"}"#).is_ok());
    }

    #[test]
    fn duplicate_keys_in_objects_of_any_size() {
        for n in [
            1,
            Keys::LIST - 1,
            Keys::LIST,
            Keys::LIST + 1,
            5 * Keys::LIST,
        ] {
            let keys: Vec<String> = (0..n).map(|k| format!("\"k{k}\":{k}")).collect();
            let whole = format!("{{{}}}", keys.join(","));
            assert!(check(&whole).is_ok(), "{n}");
            // The first key again, and the last, after all the others.
            for again in [0, n - 1] {
                let doubled = format!("{{{},\"k{again}\":0}}", keys.join(","));
                let err = check(&doubled).unwrap_err();
                assert!(
                    err.contains(&format!("\"k{again}\" appears twice")),
                    "{n}: {err}"
                );
            }
        }
    }

    #[test]
    fn names_the_line() {
        let err = check("{\n\"a\":\n123456789012345678901234567890}").unwrap_err();
        assert!(err.starts_with("line 3:"), "{err}");
    }
}
