//! Go's `strconv` formatting that upstream's messages are built with.

/// Go's `strconv.Quote` (and `%q` of a string): double quotes, `\"` and `\\`, C escapes for
/// control characters, `\x`/`\u`/`\U` for other unprintable ones. "Printable" approximates Go's
/// `unicode.IsPrint` as "not a control character and not a space other than U+0020".
///
/// Not the `time` package's own quoting of parse errors, which escapes every non-ASCII byte
/// (`crate::time::quote`).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c == ' ' || (!c.is_control() && !c.is_whitespace()) => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_matches_strconv_quote() {
        let cases = [
            ("x", r#""x""#),
            ("", r#""""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("\u{1}\u{7f}\t", r#""\x01\x7f\t""#),
            ("\u{7}\u{8}\u{c}\n\r\u{b}", r#""\a\b\f\n\r\v""#),
            ("héllo 世界", "\"héllo 世界\""),
            ("\u{a0}\u{2028}", r#""\u00a0\u2028""#),
            ("\u{85}", r#""\u0085""#),
        ];
        for (input, want) in cases {
            assert_eq!(quote(input), want, "{input:?}");
        }
    }
}
