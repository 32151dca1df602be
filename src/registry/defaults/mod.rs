//! Defaulting: upstream's hand-written `SetDefaults_<Type>` functions
//! (`pkg/apis/<group>/<version>/defaults.go`) and its declarative `+default` values, as
//! `set_defaults_<type>` functions on the generated external types, one module per group.
//!
//! The generated walkers ([`kapi_apimachinery::Walk`], `walk.rs` in every generated package)
//! visit an object and every nested struct, parent before children, as upstream's generated
//! `SetObjectDefaults_<Kind>` do; [`apply_defaults`] calls the function registered for each
//! visited value's type. Request bodies are defaulted once, after decoding into the typed struct
//! and before anything else looks at them (`server::objects::decode_defaulted`); objects read
//! from storage are not defaulted again.
//!
//! Go's zero values: a non-pointer Go string is "unset" when empty, and protobuf bodies from Go
//! clients carry the empty string, so those fields are defaulted when `None` or `Some("")`
//! ([`default_str`]); pointer fields (`*string`, `*int32`) are defaulted only when `None`.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::LazyLock;

pub mod admissionregistration;
pub mod apiextensions;
pub mod apiregistration;
pub mod apps;
pub mod autoscaling;
pub mod batch;
pub mod certificates;
pub mod core;
pub mod discovery;
pub mod flowcontrol;
pub mod networking;
pub mod rbac;
pub mod resource;
pub mod scheduling;
pub mod storage;

type Defaulter = Box<dyn Fn(&mut dyn Any) + Send + Sync>;

/// The defaulting function of each type that has one, keyed by the generated type.
#[derive(Default)]
pub struct Registry {
    by_type: HashMap<TypeId, Defaulter>,
}

impl Registry {
    /// Registers `f` as the defaulting function of `T`. Like upstream's scheme, one function per
    /// type: a second one is a programming error.
    pub fn add<T: Any>(&mut self, f: fn(&mut T)) {
        let call: Defaulter = Box::new(move |v: &mut dyn Any| {
            if let Some(t) = v.downcast_mut::<T>() {
                f(t);
            }
        });
        let previous = self.by_type.insert(TypeId::of::<T>(), call);
        assert!(previous.is_none(), "two defaulting functions for {}", std::any::type_name::<T>());
    }
}

/// Every group's functions, registered once.
static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    let mut r = Registry::default();
    core::register(&mut r);
    apps::register(&mut r);
    batch::register(&mut r);
    autoscaling::register(&mut r);
    networking::register(&mut r);
    rbac::register(&mut r);
    storage::register(&mut r);
    scheduling::register(&mut r);
    discovery::register(&mut r);
    admissionregistration::register(&mut r);
    flowcontrol::register(&mut r);
    apiextensions::register(&mut r);
    apiregistration::register(&mut r);
    resource::register(&mut r);
    certificates::register(&mut r);
    r
});

/// Defaults `obj` and everything nested in it: upstream's `scheme.Default(obj)`.
pub fn apply_defaults(obj: &mut dyn kapi_apimachinery::Walk) {
    let registry = &*REGISTRY;
    obj.walk_mut(&mut |v: &mut dyn Any| {
        if let Some(f) = registry.by_type.get(&(*v).type_id()) {
            f(v);
        }
    });
}

/// Go's `if s == "" { s = value }` on a non-pointer string field.
pub(crate) fn default_str(field: &mut Option<String>, value: &str) {
    if field.as_deref().is_none_or(str::is_empty) {
        *field = Some(value.to_owned());
    }
}

/// Go's `if n == 0 { n = value }` on a non-pointer integer field.
pub(crate) fn default_int<N: Copy + Default + PartialEq>(field: &mut Option<N>, value: N) {
    if field.is_none_or(|n| n == N::default()) {
        *field = Some(value);
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use kapi_apimachinery::Object;
    use serde_json::Value;

    /// Decodes `input` as `T`, defaults it, and compares the JSON with `expected`; defaulting
    /// the result again changes nothing (updates and patches default stored, already defaulted
    /// objects).
    #[track_caller]
    pub fn assert_defaults<T: Object>(input: Value, expected: Value) {
        let mut obj: T = serde_json::from_value(input).expect("input decodes");
        super::apply_defaults(&mut obj);
        let got = serde_json::to_value(&obj).unwrap();
        // Compared as upstream writes both: the expected object goes through the same type, so
        // it need not spell out what Go's encoder adds for zero values (`"status": {}`,
        // `"containers": null`) or leaves out (`false`, `0`), which tests/go_value_semantics.rs
        // checks.
        let expected = serde_json::to_value(serde_json::from_value::<T>(expected).expect("expected object decodes")).unwrap();
        let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap();
        assert_eq!(got, expected, "\n got: {}\nwant: {}", pretty(&got), pretty(&expected));
        super::apply_defaults(&mut obj);
        assert_eq!(serde_json::to_value(&obj).unwrap(), got, "defaulting twice changes the object");
    }
}
