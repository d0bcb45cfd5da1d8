//! RFC 8785 (JCS) canonical JSON, written straight into a [`Sink`]: the
//! digest's hash, or a string when the text itself is wanted (a lock file's
//! `definition`). Nothing is serialized twice and no object is buffered as
//! text: a digest costs one walk of the value.
//!
//! What JCS asks, and how it is met here:
//! - no white space; literals as JSON writes them;
//! - strings with only `"`, `\` and the control characters escaped (`\b`,
//!   `\t`, `\n`, `\f`, `\r` by name, the others as `\u00xx` in lowercase
//!   hex), everything else as its UTF-8;
//! - numbers as ECMAScript's `Number.prototype.toString` writes the double
//!   they denote (ryu-js, the algorithm JCS names);
//! - object members sorted by their names' UTF-16 code units.
//!
//! One extension: a number no double can hold (`1e400`, which the registry
//! keeps verbatim) is written as `{"$number":"1e+400"}`, so that every
//! definition has a digest and a change of such a number still changes it.

use serde_json::{Map, Number, Value};
use sha2::{Digest as _, Sha256};

/// Where canonical text goes.
pub trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Sha256 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Writes `value` canonically.
pub fn write(value: &Value, out: &mut impl Sink) {
    match value {
        Value::Null => out.put(b"null"),
        Value::Bool(true) => out.put(b"true"),
        Value::Bool(false) => out.put(b"false"),
        Value::Number(n) => number(n, out),
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.put(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(b",");
                }
                write(item, out);
            }
            out.put(b"]");
        }
        Value::Object(map) => object(map, out),
    }
}

/// The canonical text of `value`.
pub fn to_string(value: &Value) -> String {
    let mut out = Vec::new();
    write(value, &mut out);
    // Only whole UTF-8 strings and ASCII are ever put.
    String::from_utf8(out).unwrap_or_default()
}

/// A member's value for [`sorted_members`]: JSON, or text written as a
/// JSON string (so that a caller need not copy a `String` into a `Value`).
#[derive(Debug, Clone, Copy)]
pub enum Member<'a> {
    Json(&'a Value),
    Text(&'a str),
}

/// Writes an object whose members are given already sorted by name (as
/// JCS sorts them), skipping the absent ones: for a caller that knows its
/// keys and need not build a map to have them sorted.
pub fn sorted_members<'a>(
    members: impl IntoIterator<Item = (&'a str, Option<Member<'a>>)>,
    out: &mut impl Sink,
) {
    out.put(b"{");
    let mut first = true;
    for (key, value) in members {
        let Some(value) = value else { continue };
        debug_assert!(key.is_ascii(), "only ASCII names are given sorted");
        if !first {
            out.put(b",");
        }
        first = false;
        string(key, out);
        out.put(b":");
        match value {
            Member::Json(v) => write(v, out),
            Member::Text(t) => string(t, out),
        }
    }
    out.put(b"}");
}

fn object(map: &Map<String, Value>, out: &mut impl Sink) {
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    members.sort_unstable_by(|a, b| utf16_order(a.0, b.0));
    out.put(b"{");
    for (i, (key, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.put(b",");
        }
        string(key, out);
        out.put(b":");
        write(value, out);
    }
    out.put(b"}");
}

/// Names in the order of their UTF-16 code units. UTF-8's byte order is
/// the order of code points, which differs from UTF-16's only between a
/// character past U+FFFF (a surrogate pair, 0xD800..) and one in
/// U+E000..=U+FFFF; so bytes decide unless such a pair is met.
fn utf16_order(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() || b.is_ascii() {
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

fn number(n: &Number, out: &mut impl Sink) {
    // `as_f64` parses the number's own text (the registry keeps numbers
    // verbatim) and gives `None` past the range of a double.
    match n.as_f64().filter(|f| f.is_finite()) {
        Some(f) => out.put(ryu_js::Buffer::new().format_finite(f).as_bytes()),
        None => {
            out.put(b"{\"$number\":");
            string(&n.to_string(), out);
            out.put(b"}");
        }
    }
}

fn string(s: &str, out: &mut impl Sink) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.put(b"\"");
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0xf) as usize],
            ],
            _ => continue,
        };
        out.put(&bytes[start..i]);
        out.put(escape);
        start = i + 1;
    }
    out.put(&bytes[start..]);
    out.put(b"\"");
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// The crate this writer replaced, kept as its oracle: its text, with a
    /// number no double holds written as the writer writes it.
    fn oracle(value: &Value) -> String {
        fn finite(value: &Value) -> Value {
            match value {
                Value::Number(n) if n.as_f64().is_none_or(|f| !f.is_finite()) => {
                    json!({"$number": n.to_string()})
                }
                Value::Array(a) => Value::Array(a.iter().map(finite).collect()),
                Value::Object(o) => {
                    Value::Object(o.iter().map(|(k, v)| (k.clone(), finite(v))).collect())
                }
                other => other.clone(),
            }
        }
        serde_json_canonicalizer::to_string(&finite(value)).expect("the oracle writes it")
    }

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).expect("test JSON")
    }

    /// The examples of RFC 8785 itself: its sorting example (section 3.2.3)
    /// and the number table of its Appendix B, each as a double's bits and
    /// the text ECMAScript gives.
    #[test]
    fn the_rfcs_own_examples() {
        let sorting = parse(
            r#"{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
                "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control",
                "\u00f6": "Latin Small Letter O With Diaeresis"}"#,
        );
        assert_eq!(
            to_string(&sorting),
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
             \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
             \"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
        );
        let example = parse(
            r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
                "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
                "literals": [null, true, false]}"#,
        );
        assert_eq!(
            to_string(&example),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
        let table: [(u64, &str); 24] = [
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for (bits, text) in table {
            let value = Value::from(f64::from_bits(bits));
            assert_eq!(to_string(&value), text, "{bits:#x}");
            assert_eq!(to_string(&value), oracle(&value), "{bits:#x}");
        }
    }

    #[test]
    fn a_number_no_double_holds_is_written_as_text() {
        let v = parse(r#"{"max": 1e400, "min": -1e400, "ok": 1e300}"#);
        assert_eq!(
            to_string(&v),
            r#"{"max":{"$number":"1e+400"},"min":{"$number":"-1e+400"},"ok":1e+300}"#
        );
        assert_eq!(to_string(&v), oracle(&v));
    }

    #[test]
    fn sorted_members_are_an_object() {
        let (a, b) = (json!(1), json!({"y": 2, "x": [true]}));
        let mut out = Vec::new();
        sorted_members(
            [
                ("a", Some(Member::Json(&a))),
                ("absent", None),
                ("b", Some(Member::Json(&b))),
                ("c", Some(Member::Text("say \"hi\"\n"))),
            ],
            &mut out,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            to_string(&json!({"c": "say \"hi\"\n", "b": b, "a": a}))
        );
    }

    /// Deep nesting is written as deep as a value goes (serde_json refuses
    /// to read past 128 levels; a value built in code may be deeper).
    #[test]
    fn deep_nesting() {
        let mut v = json!("leaf");
        for i in 0..300 {
            v = if i % 2 == 0 {
                json!([v])
            } else {
                json!({"k": v})
            };
        }
        let text = to_string(&v);
        assert!(text.starts_with("{\"k\":[{\"k\":["), "{}", &text[..20]);
        assert_eq!(text, oracle(&v));
    }

    /// Number texts in every form `arbitrary_precision` keeps: integers
    /// past 64 bits, exponents, leading zeros in fractions, negative zero,
    /// values that round to the same double.
    fn number_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| f.to_string()),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| format!("{f:e}")),
            (any::<bool>(), 1u64..u64::MAX, 0u32..40).prop_map(|(neg, digits, extra)| format!(
                "{}{digits}{}",
                if neg { "-" } else { "" },
                "0".repeat(extra as usize)
            )),
            (0u64..1000, 0u64..100_000, -400i32..400)
                .prop_map(|(i, f, e)| format!("{i}.{f:05}e{e}")),
            Just("-0".to_string()),
            Just("-0.0".to_string()),
            Just("0.1e1".to_string()),
        ]
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{0,4}",
            // Characters either side of the surrogates, where UTF-16 order
            // and code point order part.
            proptest::collection::vec(
                prop_oneof![
                    Just('a'),
                    Just('\u{7f}'),
                    Just('\u{e9}'),
                    Just('\u{d7ff}'),
                    Just('\u{e000}'),
                    Just('\u{ffff}'),
                    Just('\u{10000}'),
                    Just('\u{1f600}'),
                    Just('\u{10ffff}'),
                    Just('"'),
                    Just('\u{1}'),
                ],
                0..4
            )
            .prop_map(|c| c.into_iter().collect()),
            any::<String>(),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            number_text().prop_map(|t| parse(&t)),
            any::<String>().prop_map(Value::String),
            "[\u{0}-\u{1f}\"\\\\/a\u{2028}\u{7f}]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(12, 256, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec((key(), inner), 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_writer_agrees_with_the_crate(v in value()) {
            prop_assert_eq!(to_string(&v), oracle(&v));
        }

        #[test]
        fn numbers_agree_with_the_crate(t in number_text()) {
            let v = parse(&t);
            prop_assert_eq!(to_string(&v), oracle(&v));
        }

        #[test]
        fn the_hash_is_the_hash_of_the_text(v in value()) {
            let mut hash = Sha256::new();
            write(&v, &mut hash);
            let direct: [u8; 32] = hash.finalize().into();
            let of_text: [u8; 32] = Sha256::digest(oracle(&v).as_bytes()).into();
            prop_assert_eq!(direct, of_text);
        }
    }
}
