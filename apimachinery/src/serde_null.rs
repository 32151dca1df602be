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
