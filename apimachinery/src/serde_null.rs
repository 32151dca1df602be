//! Go's `encoding/json` decodes `null` into a non-pointer field as that field's zero value;
//! serde would reject it. Generated non-`Option` fields deserialize through this.

use serde::{Deserialize, Deserializer};

pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A value read as [`null_as_default`] reads it: what the generated structs' non-`Option`
/// fields are read through (see [`crate::read`]).
pub struct NullAsDefault<T>(pub T);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for NullAsDefault<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        null_as_default(deserializer).map(NullAsDefault)
    }
}
