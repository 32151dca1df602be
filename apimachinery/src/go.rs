//! Go's `encoding/json` rules for one field, as the generated structs' writing uses them.
//!
//! Generated structs keep presence (`Option<T>` for optional fields) while Go's encoder decides
//! by the Go field's type and tag (see `codegen/src/gosrc.rs`):
//!
//! - `omitempty` omits `false`, `0`, `""`, nil pointers and empty slices, maps and `[]byte`, but
//!   never a value struct ([`opt_is_zero`], `Vec::is_empty`);
//! - `omitzero` omits a zero value, for a struct every field zero or its `IsZero()`
//!   ([`opt_is_zero_struct`], [`IsZero`]);
//! - without either, a nil pointer, slice or map is `null` ([`vec_or_null`], [`map_or_null`]) and
//!   an absent value field is written as its zero value ([`opt_or_default`]).

use std::collections::BTreeMap;

use crate::write::{JsonWriter, WriteJson};

/// `omitempty` on a Go value scalar (`bool`, `int32`, `string`, …) kept as `Option<T>`: absent
/// or Go's zero value.
pub fn opt_is_zero<T: Default + PartialEq>(v: &Option<T>) -> bool {
    v.as_ref().is_none_or(|v| *v == T::default())
}

/// A Go `string` value field kept as `Option<String>`, as Go code reads it: absent is `""`.
pub fn string(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or_default()
}

/// `omitempty` on a required (bare) Go value scalar: Go's zero value.
pub fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// `omitempty` on a Go `[]byte` kept as `Option<Vec<u8>>`: nil or empty.
pub fn bytes_opt_is_empty(v: &Option<Vec<u8>>) -> bool {
    v.as_ref().is_none_or(Vec::is_empty)
}

/// A type's `IsZero()` as Go's `omitzero` consults it (`metav1.Time`: the zero time).
pub trait IsZero {
    fn is_zero(&self) -> bool;
}

impl IsZero for crate::Time {
    fn is_zero(&self) -> bool {
        crate::Time::is_zero(self)
    }
}

impl IsZero for crate::MicroTime {
    fn is_zero(&self) -> bool {
        crate::MicroTime::is_zero(self)
    }
}

/// `omitzero` on a Go value struct with an `IsZero()` method kept as `Option<T>`.
pub fn opt_is_zero_struct<T: IsZero>(v: &Option<T>) -> bool {
    v.as_ref().is_none_or(IsZero::is_zero)
}

/// Whether the part of `a` and `b` that `part` reads (a kind's `spec` or `status`; `part_mut`
/// reaches the same field to change it) is the same Go value: equal as held, or equal once each
/// is put in its Go form ([`crate::Walk::canonicalize`] of an object holding only that part),
/// as their JSON forms are.
pub fn parts_equal<T: Default + crate::Walk, P: Clone + PartialEq>(
    a: &T,
    b: &T,
    part: fn(&T) -> &P,
    part_mut: fn(&mut T) -> &mut P,
) -> bool {
    let go_form = |object: &T| {
        let mut only = T::default();
        *part_mut(&mut only) = part(object).clone();
        only.canonicalize();
        only
    };
    part(a) == part(b) || part(&go_form(a)) == part(&go_form(b))
}

/// A Go value field kept as `Option<T>` without `omitempty`, or a value struct (which
/// `omitempty` never omits): absent is written as the zero value (for a generated struct its
/// default, whose fields follow the same rules).
pub fn opt_or_default<T: Default + WriteJson>(v: &Option<T>, w: &mut JsonWriter<'_>) {
    match v {
        Some(v) => v.write_json(w),
        None => T::default().write_json(w),
    }
}

/// A Go pointer without `omitempty` that the specs call required, kept bare: its default stands
/// for nil and is `null`.
pub fn default_as_null<T: Default + PartialEq + WriteJson>(v: &T, w: &mut JsonWriter<'_>) {
    if *v == T::default() { w.null() } else { v.write_json(w) }
}

/// A Go slice without `omitempty`: nil is `null`. An empty `Vec` stands for nil (Go's zero).
pub fn vec_or_null<T: WriteJson>(v: &[T], w: &mut JsonWriter<'_>) {
    if v.is_empty() { w.null() } else { v.write_json(w) }
}

/// A Go map without `omitempty`: nil is `null`. An empty map stands for nil (Go's zero).
pub fn map_or_null<T: WriteJson>(v: &BTreeMap<String, T>, w: &mut JsonWriter<'_>) {
    if v.is_empty() { w.null() } else { v.write_json(w) }
}

/// A Go `[]byte` without `omitempty` kept as a bare `Vec<u8>`: nil (empty) is `null`.
pub fn bytes_or_null(v: &[u8], w: &mut JsonWriter<'_>) {
    if v.is_empty() { w.null() } else { crate::serde_bytes::base64_vec::write(v, w) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A struct with one field of each rule, written as a generated struct is.
    #[derive(Default)]
    struct Holder {
        b: Option<bool>,
        s: Option<String>,
        l: Vec<String>,
        m: BTreeMap<String, String>,
        t: Option<crate::Time>,
        c: Option<crate::Time>,
    }

    impl WriteJson for Holder {
        fn write_json(&self, w: &mut JsonWriter<'_>) {
            w.begin_object();
            if !opt_is_zero(&self.b) {
                w.field("b");
                self.b.write_json(w);
            }
            w.field("s");
            opt_or_default(&self.s, w);
            w.field("l");
            vec_or_null(&self.l, w);
            w.field("m");
            map_or_null(&self.m, w);
            if !opt_is_zero_struct(&self.t) {
                w.field("t");
                self.t.write_json(w);
            }
            w.field("c");
            opt_or_default(&self.c, w);
            w.end_object();
        }
    }

    fn text(h: &Holder) -> String {
        String::from_utf8(crate::write::to_vec(h).unwrap()).unwrap()
    }

    #[test]
    fn go_rules() {
        let h = Holder { b: Some(false), ..Holder::default() };
        assert_eq!(text(&h), r#"{"s":"","l":null,"m":null,"c":null}"#);
        let h = Holder { b: Some(true), s: Some("x".into()), l: vec!["a".into()], t: Some(crate::Time::zero()), ..Holder::default() };
        assert_eq!(text(&h), r#"{"b":true,"s":"x","l":["a"],"m":null,"c":null}"#);
    }

    #[test]
    fn special_zero_values() {
        // What an absent Go value field of each special type encodes as.
        assert_eq!(serde_json::to_string(&crate::Quantity::default()).unwrap(), r#""0""#);
        assert_eq!(serde_json::to_string(&crate::IntOrString::default()).unwrap(), "0");
        assert_eq!(serde_json::to_string(&crate::Duration::default()).unwrap(), r#""0s""#);
        assert_eq!(serde_json::to_string(&crate::RawExtension::default()).unwrap(), "null");
        assert_eq!(serde_json::to_string(&crate::Json::default()).unwrap(), "null");
    }
}
