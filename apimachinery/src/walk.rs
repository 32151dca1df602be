//! The walker generated for every API type: what upstream's `defaulter-gen` writes out per kind
//! (`zz_generated.defaults.go`, `SetObjectDefaults_<Kind>`) as one generic traversal instead.
//!
//! [`Walk::walk_mut`] visits a value and then every nested generated struct, parent before
//! children, through `Option`, `Vec`, maps and `Box`, as upstream's generated defaulters call
//! `SetDefaults_<Type>` on an object first and then on its nested values. The visitor sees each
//! struct as `&mut dyn Any`, so hand-written code (the runtime's defaulting functions, keyed by
//! `TypeId`) can pick the types it knows without the generated crate knowing about them.
//! Because the parent is visited before its fields are walked, a field a parent's visit creates
//! (an `emptyDir: {}` for a volume without a source) is visited too, as upstream does.

use std::any::Any;
use std::collections::BTreeMap;

/// A value whose nested generated structs can be visited mutably. Implemented by the generator
/// for every generated struct (`walk.rs` next to `types.rs`), and here for containers and the
/// special types.
pub trait Walk: Any {
    /// Calls `visit` with `self` (for structs) and then with every nested generated struct.
    fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any));

    /// Puts the value, and everything nested in it, in the one form that stands for its Go
    /// value: the form reading its JSON back gives (see [`crate::go`]). A Go value field is
    /// never absent, so an absent value struct, or value scalar written without
    /// `omitempty`, is its zero value; a zero value scalar `omitempty` leaves out, and a zero
    /// time (written as `null`), are absent; times keep the precision they are written with.
    /// Objects decoded from protobuf or from JSON without some fields then compare and
    /// convert as Go's would.
    fn canonicalize(&mut self) {}
}

impl<T: Walk> Walk for Option<T> {
    fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any)) {
        if let Some(v) = self {
            v.walk_mut(visit);
        }
    }

    fn canonicalize(&mut self) {
        if let Some(v) = self {
            v.canonicalize();
        }
    }
}

impl<T: Walk> Walk for Vec<T> {
    fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any)) {
        for v in self {
            v.walk_mut(visit);
        }
    }

    fn canonicalize(&mut self) {
        self.iter_mut().for_each(Walk::canonicalize);
    }
}

impl<T: Walk> Walk for BTreeMap<String, T> {
    fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any)) {
        for v in self.values_mut() {
            v.walk_mut(visit);
        }
    }

    fn canonicalize(&mut self) {
        self.values_mut().for_each(Walk::canonicalize);
    }
}

impl<T: Walk> Walk for Box<T> {
    fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any)) {
        (**self).walk_mut(visit);
    }

    fn canonicalize(&mut self) {
        (**self).canonicalize();
    }
}

/// Special types are leaves: they are visited themselves and have nothing nested. (The
/// generated walkers do not descend into special-typed fields; these impls let generic code
/// walk any field type.)
macro_rules! leaf {
    ($($t:ty),*) => {$(
        impl Walk for $t {
            fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any)) {
                visit(self);
            }
        }
    )*};
}

leaf!(crate::Duration, crate::Quantity, crate::IntOrString, crate::RawExtension, crate::FieldsV1, crate::Json);

/// Times are leaves too; they are written at their precision, which reading them back keeps.
macro_rules! time_leaf {
    ($($t:ty: $truncate:ident),*) => {$(
        impl Walk for $t {
            fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any)) {
                visit(self);
            }

            fn canonicalize(&mut self) {
                *self = self.$truncate();
            }
        }
    )*};
}

time_leaf!(crate::Time: truncate_to_seconds, crate::MicroTime: truncate_to_micros);

impl<T: 'static> Walk for crate::JsonSchemaPropsOrBool<T> {
    fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any)) {
        visit(self);
    }
}

impl<T: 'static> Walk for crate::JsonSchemaPropsOrArray<T> {
    fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any)) {
        visit(self);
    }
}

impl<T: 'static> Walk for crate::JsonSchemaPropsOrStringArray<T> {
    fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any)) {
        visit(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Child(u32);
    #[derive(Default)]
    struct Parent {
        name: String,
        one: Option<Child>,
        many: Vec<Child>,
        boxed: Option<Box<Parent>>,
    }
    impl Walk for Child {
        fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any)) {
            visit(self);
        }
    }
    impl Walk for Parent {
        fn walk_mut(&mut self, visit: &mut dyn FnMut(&mut dyn Any)) {
            visit(self);
            self.one.walk_mut(visit);
            self.many.walk_mut(visit);
            self.boxed.walk_mut(visit);
        }
    }

    #[test]
    fn visits_parents_before_children_and_what_a_parent_creates() {
        let mut p = Parent { name: "outer".into(), many: vec![Child(1), Child(2)], ..Default::default() };
        p.boxed = Some(Box::new(Parent { name: "inner".into(), ..Default::default() }));
        let mut seen = Vec::new();
        p.walk_mut(&mut |v| {
            if let Some(p) = v.downcast_mut::<Parent>() {
                seen.push(p.name.clone());
                // A parent's visit may create a child, which is then visited.
                p.one.get_or_insert(Child(7));
            } else if let Some(c) = v.downcast_mut::<Child>() {
                seen.push(c.0.to_string());
            }
        });
        assert_eq!(seen, ["outer", "7", "1", "2", "inner", "7"]);
    }
}
