//! Kubernetes' format library (`k8s.io/apiserver/pkg/cel/library/format.go`): the named formats
//! (`format.dns1123Label()`, ..., `format.named("...")`, an optional) and
//! `<format>.validate(string)`, none when the string is of the format, else the list of what
//! is wrong with it (apimachinery's validation messages).

use std::sync::Arc;

use ::cel::common::types::{STRING_TYPE, Type};
use ::cel::common::value::CowVal;
use ::cel::objects::{Opaque, OptionalValue};
use ::cel::{DeclarationError, Env, ExecutionError, Value as CelValue};

use super::urls;
use super::{Answer, text};
use crate::registry::apiextensions::schema::formats;
use crate::selectors;

fn format_type() -> Type {
    Type::new_opaque_type("kubernetes.NamedFormat")
}

/// One named format; equal by name, as upstream's `Format.Equal`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Format {
    name: &'static str,
    validate: fn(&str) -> Vec<String>,
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.name == other.name
    }
}

impl Eq for Format {}

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

/// apimachinery's `maskTrailingDash`: a prefix may end in `-`, the name completed after it.
fn mask_trailing_dash(s: &str) -> String {
    match s.strip_suffix('-') {
        Some(head) if !head.is_empty() => format!("{head}a"),
        _ => s.to_owned(),
    }
}

fn one(ok: bool, message: &str) -> Vec<String> {
    if ok { Vec::new() } else { vec![message.to_owned()] }
}

fn uri(s: &str) -> Vec<String> {
    urls::parse_request_uri(s).err().into_iter().collect()
}

/// Upstream's `ConstantFormats`, by the name `format.<name>()` calls them.
const FORMATS: [(&str, Format); 13] = [
    ("dns1123Label", Format { name: "DNS1123Label", validate: selectors::dns1123_label_errors }),
    ("dns1123Subdomain", Format { name: "DNS1123Subdomain", validate: selectors::dns1123_subdomain_errors }),
    ("dns1035Label", Format { name: "DNS1035Label", validate: selectors::dns1035_label_errors }),
    ("qualifiedName", Format { name: "QualifiedName", validate: selectors::label_key_errors }),
    ("dns1123LabelPrefix", Format { name: "DNS1123LabelPrefix", validate: |s| selectors::dns1123_label_errors(&mask_trailing_dash(s)) }),
    (
        "dns1123SubdomainPrefix",
        Format { name: "DNS1123SubdomainPrefix", validate: |s| selectors::dns1123_subdomain_errors(&mask_trailing_dash(s)) },
    ),
    ("dns1035LabelPrefix", Format { name: "DNS1035LabelPrefix", validate: |s| selectors::dns1035_label_errors(&mask_trailing_dash(s)) }),
    ("labelValue", Format { name: "LabelValue", validate: selectors::label_value_errors }),
    ("uri", Format { name: "URI", validate: uri }),
    ("uuid", Format { name: "uuid", validate: |s| one(formats::validates("uuid", s), "does not match the UUID format") }),
    ("byte", Format { name: "byte", validate: |s| one(formats::validates("byte", s), "invalid base64") }),
    ("date", Format { name: "date", validate: |s| one(formats::validates("date", s), "invalid date") }),
    ("datetime", Format { name: "datetime", validate: |s| one(formats::validates("datetime", s), "invalid datetime") }),
];

fn named(name: &str) -> Option<Format> {
    FORMATS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

on_values!(named_fn, format_named);
on_values!(validate_fn, validate);

/// `format.<name>()`: one function per format, each returning its constant.
fn constant<'b, 'v>(name: &'static str) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let format = named(name).ok_or_else(|| ExecutionError::function_error(name, "unknown format"))?;
    Ok(CowVal::Owned(Box::<dyn ::cel::common::value::Val>::try_from(CelValue::Opaque(Arc::new(format)))?))
}

macro_rules! constants {
    ($($fn_name:ident => $name:literal),* $(,)?) => {
        $(
            fn $fn_name<'b, 'v>(_: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
                constant($name)
            }
        )*
        fn register_constants(env: &mut Env) -> Result<(), DeclarationError> {
            $(env.add_overload(concat!("format.", $name), concat!("format.", $name), vec![], $fn_name)?;)*
            Ok(())
        }
    };
}

constants!(
    dns1123_label => "dns1123Label",
    dns1123_subdomain => "dns1123Subdomain",
    dns1035_label => "dns1035Label",
    qualified_name => "qualifiedName",
    dns1123_label_prefix => "dns1123LabelPrefix",
    dns1123_subdomain_prefix => "dns1123SubdomainPrefix",
    dns1035_label_prefix => "dns1035LabelPrefix",
    label_value => "labelValue",
    uri_format => "uri",
    uuid => "uuid",
    byte => "byte",
    date => "date",
    datetime => "datetime",
);

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    register_constants(env)?;
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named_fn)?;
    env.add_member_overload("validate", "format-validate", format_type(), vec![STRING_TYPE], validate_fn)?;
    Ok(())
}

fn optional(value: Option<CelValue>) -> CelValue {
    CelValue::Opaque(Arc::new(match value {
        Some(v) => OptionalValue::of(v),
        None => OptionalValue::none(),
    }))
}

fn format_named(values: &[CelValue]) -> Answer<CelValue> {
    let name = text(values, 0, "format.named")?;
    Ok(optional(named(name).map(|f| CelValue::Opaque(Arc::new(f)))))
}

fn validate(values: &[CelValue]) -> Answer<CelValue> {
    let format = match values.first() {
        Some(CelValue::Opaque(o)) => o.downcast_ref::<Format>().copied(),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::no_such_overload("validate", vec!["dyn".to_owned()]))?;
    let errors = (format.validate)(text(values, 1, "validate")?);
    Ok(optional(
        (!errors.is_empty()).then(|| CelValue::List(Arc::new(errors.into_iter().map(|e| CelValue::String(Arc::new(e))).collect()))),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_validate_with_apimachinerys_messages() {
        let check = |name: &str, s: &str| (named(name).expect(name).validate)(s);
        assert!(check("dns1123Label", "my-name").is_empty());
        assert_eq!(
            check("dns1123Label", "My_Name"),
            [
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert!(check("dns1123LabelPrefix", "my-").is_empty());
        assert!(!check("dns1123Label", "my-").is_empty());
        assert!(check("qualifiedName", "example.com/MyName").is_empty());
        assert!(check("labelValue", "").is_empty());
        assert_eq!(check("uri", "nope"), [r#"parse "nope": invalid URI for request"#]);
        assert_eq!(check("uuid", "nope"), ["does not match the UUID format"]);
        assert!(check("uuid", "123e4567-e89b-12d3-a456-426614174000").is_empty());
        assert_eq!(check("date", "2024-13-01"), ["invalid date"]);
        assert!(named("nope").is_none());
    }
}
