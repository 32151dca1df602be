//! PATCH bodies applied to an object, as kube-apiserver's patch handler applies them
//! (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go`).
//!
//! The object is the versioned JSON form (`serde_json::Value`) of the stored object; the result is
//! the patched JSON form, which the caller decodes into the kind, defaults, validates and stores.
//! I/O-free.
//!
//! - [`PatchType::Json`] (`application/json-patch+json`): RFC 6902 through the `json-patch` crate,
//!   with upstream's quirks and error wording (upstream uses `gopkg.in/evanphx/json-patch.v4`):
//!   at most [`MAX_JSON_PATCH_OPERATIONS`] operations (a 413), `copy` operations adding at most
//!   [`MAX_JSON_PATCH_COPY_BYTES`] in all, no value nested deeper than [`MAX_PATCHED_DEPTH`], a
//!   `test` of `null` passes on a missing key, a failed operation is a 422.
//! - [`PatchType::Merge`] (`application/merge-patch+json`): RFC 7386 as evanphx's `MergePatch`
//!   does it: `null` deletes, objects merge recursively, anything else (lists included) replaces;
//!   `null`s inside newly added objects are dropped.
//! - [`PatchType::StrategicMerge`] (`application/strategic-merge-patch+json`): upstream's
//!   `strategicpatch.StrategicMergeMapPatch` (`k8s.io/apimachinery/pkg/util/strategicpatch`),
//!   driven by the generated field facts ([`FieldInfo`]) where upstream reads Go struct tags. See
//!   [the strategic merge section](#strategic-merge-patch).
//! - [`PatchType::Apply`] (`application/apply-patch+yaml`): server-side apply is the field
//!   manager's (`registry::fieldmanager`), not a patch applied here; [`apply_patch`] answers
//!   [`PatchError::ApplyNotSupported`] (415) to a caller that hands it an apply (every route
//!   that accepts apply, `scale` included, gives it to the field manager instead).
//!
//! Every [`PatchError`] carries the HTTP code upstream answers with ([`PatchError::status_code`]).
//!
//! # Bounds
//!
//! The work and memory of a patch are bounded by its body (at most 3 MiB) and the object:
//! merge and strategic merge patches take every value of the result from the object or the
//! patch, once (the result is at most the two together, and no deeper than the deeper of them);
//! a JSON patch also adds at most [`MAX_JSON_PATCH_COPY_BYTES`] by copying, and its operations
//! are refused before they would nest a value deeper than [`MAX_PATCHED_DEPTH`] (paths can name
//! places far deeper than any body nests). The patch body itself is read by `serde_json`, whose
//! recursion limit (127 levels) refuses deeper bodies as syntax errors (400).
//!
//! Time is near-linear too: strategic merge patch finds list elements by merge key or value
//! through hashed indexes where upstream scans the list for each element (quadratic in the
//! length of a list), with the same results. What stays quadratic is what upstream does too: a
//! JSON patch's `add`/`remove` at the front of a long list shift it once per operation, and
//! elements missing from the order they are sorted by (not seen with the server's own
//! lists) are still ordered by an insertion sort with upstream's comparator.
//!
//! # Strategic merge patch
//!
//! A field's merge behaviour comes from its `x-kubernetes-patch-strategy` and
//! `x-kubernetes-patch-merge-key` ([`FieldInfo::patch_strategy`], [`FieldInfo::patch_merge_key`]),
//! which upstream generates from the same `patchStrategy`/`patchMergeKey` struct tags the server
//! reads. `x-kubernetes-list-type`/`x-kubernetes-list-map-keys` play no part: upstream's server
//! builds its patch metadata from the struct tags only (`NewPatchMetaFromStruct`), so a
//! `listType=map` list without a patch strategy (e.g. `resources.claims` of a container) is
//! replaced, as upstream does.
//!
//! - Objects merge key by key; `null` deletes a key (a `null` for a missing key is ignored); a
//!   value whose JSON type differs from the original's replaces it; a field with strategy
//!   `replace` is replaced whole.
//! - Lists with strategy `merge`: lists of objects merge element by element on the merge key
//!   (new elements are appended), lists of scalars are unioned; the result is ordered as upstream
//!   orders it (patch order for the patch's elements, original order for the others, interleaved
//!   by their original positions). Other lists are replaced.
//! - Directives: `$patch: replace | delete` in an object (replace it by the rest of the patch / by
//!   `{}`), `$patch: delete | replace` in an element of a merged list (delete every element with
//!   that key / replace the list by the patch's other elements), `$retainKeys` (drop the
//!   original's keys not listed), `$deleteFromPrimitiveList/<field>` and
//!   `$setElementOrder/<field>`. `$patch: merge` is an error, as upstream (in an object: "unknown
//!   patch type", in a list: "merging lists cannot yet be specified in the patch").
//!
//! Where this differs from upstream, on purpose:
//! - A field the schema does not know (no [`FieldInfo`], or inside embedded JSON such as
//!   `RawExtension`) is merged like a field without strategy (objects merge, lists replace);
//!   upstream fails with "unable to find api field in struct ..." when both sides are
//!   objects or lists. Likewise the values of a map of objects (`JSONSchemaProps.properties`) are
//!   merged with their type's facts, where upstream fails with "merging an object in json but
//!   data type is not struct".
//! - Values taken from the patch as they are (a new key, a new list element, a replaced list or
//!   object) are cleaned as upstream's `discardNullValuesFromPatch` and `removeDirectives` do for
//!   new keys: `null` fields, objects carrying `$patch` and leftover `$retainKeys`,
//!   `$setElementOrder/`, `$deleteFromPrimitiveList/` keys are dropped. Upstream leaves some of
//!   them in and relies on its decoder to ignore them; this way the result always decodes.
//! - JSON numbers are one type: upstream (Go) tells integers from floats when checking that a
//!   list's elements share a type.

use std::collections::{BTreeSet, HashMap, HashSet};

use kapi_apimachinery::scheme::{FieldInfo, FieldShape};
use serde_json::{Map, Value};

/// The most operations a JSON patch may have (`maxJSONPatchOperations` in upstream's handler).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The most bytes the `copy` operations of one JSON patch may add: evanphx's
/// `AccumulatedCopySizeLimit`, which kube-apiserver sets from `JSONPatchMaxCopyBytes`, 3 MiB by
/// default (`k8s.io/apiserver/pkg/server/config.go`).
pub const MAX_JSON_PATCH_COPY_BYTES: u64 = 3 * 1024 * 1024;

/// The deepest a JSON patch may nest a value: the nesting `serde_json` reads (127 levels of
/// lists and objects), so that a patched object can be decoded, stored and read back as any
/// request body can. (Upstream's decoders stop at 10000 levels; a request body here cannot go
/// past 127 either.)
pub const MAX_PATCHED_DEPTH: usize = 127;

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_STRATEGY: &str = "retainKeys";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

/// The patch formats a PATCH request names in its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// `application/json-patch+json`: RFC 6902.
    Json,
    /// `application/merge-patch+json`: RFC 7386.
    Merge,
    /// `application/strategic-merge-patch+json`: Kubernetes' strategic merge patch.
    StrategicMerge,
    /// `application/apply-patch+yaml`: server-side apply.
    Apply,
}

impl PatchType {
    /// Every patch type, in upstream's order of `types.PatchType` constants.
    pub const ALL: [PatchType; 4] = [PatchType::Json, PatchType::Merge, PatchType::StrategicMerge, PatchType::Apply];

    /// The patch type of a `Content-Type` header value (parameters such as `charset` are
    /// ignored, the media type is case-insensitive); `None` for any other media type (a 415).
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        let essence = content_type.split(';').next().unwrap_or_default().trim();
        PatchType::ALL.into_iter().find(|t| t.content_type().eq_ignore_ascii_case(essence))
    }

    /// The media type of this patch type.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// Why a patch could not be applied. Messages follow upstream's wording (Go's `%v` rendering of
/// maps and lists included), since they end up in the `Status` body.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// `application/apply-patch+yaml` sent where apply is not served (see the module docs).
    #[error("server-side apply (application/apply-patch+yaml) is not supported yet")]
    ApplyNotSupported,
    /// The body is not JSON.
    #[error("{0}")]
    Syntax(#[from] serde_json::Error),
    /// The body is JSON of the wrong shape (a JSON patch that is not a list, a strategic merge
    /// patch that is not an object), in Go's `encoding/json` wording.
    #[error("json: cannot unmarshal {found} into Go value of type {expected}")]
    WrongShape { found: &'static str, expected: &'static str },
    /// A merge patch that is not JSON, or `null` or a scalar (evanphx's `ErrBadJSONPatch`).
    #[error("Invalid JSON Patch")]
    InvalidMergePatch,
    /// A merge patch applied to a `null` document (evanphx's `ErrBadJSONDoc`).
    #[error("Invalid JSON Document")]
    InvalidDocument,
    /// A JSON patch with more than [`MAX_JSON_PATCH_OPERATIONS`] operations.
    #[error("The allowed maximum operations in a JSON patch is {max}, got {0}", max = MAX_JSON_PATCH_OPERATIONS)]
    TooManyOperations(usize),
    /// A JSON patch operation failed (a `test` that does not hold, a path that does not exist,
    /// an unknown `op`, `copy` operations past [`MAX_JSON_PATCH_COPY_BYTES`], a value nested past
    /// [`MAX_PATCHED_DEPTH`]); `message` is evanphx's wording.
    #[error("{message}")]
    JsonPatchFailed {
        /// The index of the failed operation in the patch.
        operation: usize,
        message: String,
    },
    /// `$deleteFromPrimitiveList` not followed by `/<field>`.
    #[error("invalid patch format of primitive list")]
    BadPrimitiveListFormat,
    /// `$retainKeys` that is not a list, or a patch key missing from it.
    #[error("invalid patch format of retainKeys")]
    BadRetainKeysFormat,
    /// `$setElementOrder` not followed by `/<field>`.
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrderFormat,
    /// A list whose elements are lists.
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// An element of a merged list of objects without the merge key.
    #[error("map: {map} does not contain declared merge key: {key}")]
    NoMergeKey { map: String, key: String },
    /// A value of another JSON type than the patch format requires there.
    #[error("expected a {expected}, but received a {actual}")]
    BadArgType { expected: &'static str, actual: &'static str },
    /// `$patch` with a value other than `replace` or `delete` in an object (including `merge`),
    /// or other than `replace`, `delete` or `merge` in a list element.
    #[error("unknown patch type: {directive} in map: {map}")]
    UnknownDirective { directive: String, map: String },
    /// `$patch: merge` in an element of a merged list.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeDirectiveInList,
    /// A list of objects with strategy `merge` but no merge key; names the element type.
    #[error("cannot merge lists without merge key for {0}")]
    NoMergeKeyForList(&'static str),
    /// A merged list whose elements are not all of one JSON type.
    #[error("list element types are not identical: {0}")]
    MixedListElements(String),
    /// `$setElementOrder` for a list that is empty in both the object and the patch.
    #[error("no elements in any of the given slices")]
    NoListElements,
    /// A patch list whose order contradicts its `$setElementOrder` list.
    #[error("the order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}")]
    SetElementOrderMismatch { patch: String, order: String },
    /// A list with merge key holding a non-object at this index.
    #[error("value for key {0} is not a map")]
    NotAMap(usize),
    /// A field's patch strategy that upstream does not understand.
    #[error("unexpected patch strategy: {0}")]
    BadPatchStrategy(&'static str),
}

impl PatchError {
    /// The HTTP status upstream answers with: 400 for bodies that cannot be read as the patch
    /// type, 413 for too many JSON patch operations, 415 for server-side apply (what upstream
    /// answers when the apply patch type is not served), 422 for a failed JSON patch operation
    /// (the copy limit and the depth limit included) and for lists of lists (upstream's
    /// `NewGenericServerResponse(422, ..., isUnexpectedResponse=false)`: reason `Invalid`,
    /// message "the server rejected our request due to an error in our request", no causes, so
    /// upstream does not send this error's text, nor does `ApiError::unprocessable_patch`), and
    /// 500 for every other strategic merge error (upstream
    /// returns them as plain errors, which become `InternalError`-coded statuses with this text
    /// as message and an empty reason).
    pub fn status_code(&self) -> u16 {
        match self {
            PatchError::ApplyNotSupported => 415,
            PatchError::Syntax(_)
            | PatchError::WrongShape { .. }
            | PatchError::InvalidMergePatch
            | PatchError::BadPrimitiveListFormat
            | PatchError::BadRetainKeysFormat
            | PatchError::BadSetElementOrderFormat => 400,
            PatchError::TooManyOperations(_) => 413,
            PatchError::JsonPatchFailed { .. } | PatchError::ListOfLists => 422,
            PatchError::InvalidDocument
            | PatchError::NoMergeKey { .. }
            | PatchError::BadArgType { .. }
            | PatchError::UnknownDirective { .. }
            | PatchError::MergeDirectiveInList
            | PatchError::NoMergeKeyForList(_)
            | PatchError::MixedListElements(_)
            | PatchError::NoListElements
            | PatchError::SetElementOrderMismatch { .. }
            | PatchError::NotAMap(_)
            | PatchError::BadPatchStrategy(_) => 500,
        }
    }
}

/// Applies `patch` (the request body) of `patch_type` to `original` (the object's JSON form)
/// and returns the patched JSON form. `fields` are the kind's field facts
/// (`<Kind as TypeInfo>::fields()`), used by strategic merge patch only.
pub fn apply_patch(original: &Value, patch: &[u8], patch_type: PatchType, fields: &'static [FieldInfo]) -> Result<Value, PatchError> {
    match patch_type {
        PatchType::Json => json_patch(original, patch),
        PatchType::Merge => merge_patch(original, patch),
        PatchType::StrategicMerge => strategic_merge_patch(original, patch, fields),
        PatchType::Apply => Err(PatchError::ApplyNotSupported),
    }
}

// ---------------------------------------------------------------------------------------------
// JSON patch (RFC 6902)

fn json_patch(original: &Value, body: &[u8]) -> Result<Value, PatchError> {
    let operations = match serde_json::from_slice::<Value>(body)? {
        Value::Array(operations) => operations,
        // Go decodes `null` into an empty patch.
        Value::Null => Vec::new(),
        other => return Err(PatchError::WrongShape { found: json_kind(&other), expected: "jsonpatch.Patch" }),
    };
    if let Some(other) = operations.iter().find(|op| !op.is_object() && !op.is_null()) {
        return Err(PatchError::WrongShape { found: json_kind(other), expected: "jsonpatch.Operation" });
    }
    if operations.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations(operations.len()));
    }
    let mut doc = original.clone();
    let mut bounds = JsonPatchBounds { copied: 0, depth: depth_of(&doc), move_walk: MAX_MOVE_WALK_NODES };
    for (index, operation) in operations.into_iter().enumerate() {
        apply_json_patch_operation(&mut doc, operation, &mut bounds)
            .map_err(|message| PatchError::JsonPatchFailed { operation: index, message })?;
    }
    Ok(doc)
}

/// What one JSON patch has done so far that its limits bound.
struct JsonPatchBounds {
    /// The bytes `copy` operations added (evanphx's `accumulatedCopySize`).
    copied: u64,
    /// At least the nesting depth of the document (exact at the start).
    depth: usize,
    /// The nodes `move` operations may still walk to measure the depth of what they move.
    move_walk: usize,
}

/// The most nodes the `move` operations of a JSON patch walk, in all, to measure what they move
/// down when the document's depth does not already show it fits ([`check_json_patch_bounds`]).
const MAX_MOVE_WALK_NODES: usize = 1 << 20;

/// Applies one operation through the `json-patch` crate; on failure, says why in evanphx's words
/// (the document is left as it was).
fn apply_json_patch_operation(doc: &mut Value, operation: Value, bounds: &mut JsonPatchBounds) -> Result<(), String> {
    let Value::Object(mut operation) = operation else {
        return Err("Unexpected kind: unknown".to_owned());
    };
    let kind = operation.get("op").and_then(Value::as_str).unwrap_or("unknown").to_owned();
    if !matches!(kind.as_str(), "add" | "remove" | "replace" | "move" | "copy" | "test") {
        return Err(format!("Unexpected kind: {kind}"));
    }
    let path = string_member(&operation, "path").ok_or_else(|| format!("{kind} operation failed to decode path: missing value"))?;
    let from = match kind.as_str() {
        "move" | "copy" => {
            Some(string_member(&operation, "from").ok_or_else(|| format!("{kind} operation failed to decode from: missing value"))?)
        }
        _ => None,
    };
    // evanphx treats a missing `value` as `null`.
    if matches!(kind.as_str(), "add" | "replace" | "test") && !operation.contains_key("value") {
        operation.insert("value".to_owned(), Value::Null);
    }
    // A test of `null` holds for a missing key (evanphx compares with the absent node).
    if kind == "test"
        && operation.get("value").is_some_and(Value::is_null)
        && doc.pointer(&path).is_none()
        && parent_of(doc, &path).is_some_and(Value::is_object)
    {
        return Ok(());
    }
    // evanphx finds nothing to copy or move from the root (RFC 6902 would copy the document)
    // nor from a path without `/` (nor counts such a copy against its copy limit).
    if from.as_deref().is_some_and(|from| !from.contains('/')) {
        return Err(json_patch_failure(doc, &kind, &path, from.as_deref(), None));
    }
    // evanphx finds no parent for the root (RFC 6902 would replace the document on `add`), nor
    // for a path not starting with `/`.
    let missing_path = (!path.is_empty() && !path.starts_with('/')) || (kind == "add" && path.is_empty());
    let parsed = if missing_path { None } else { serde_json::from_value::<json_patch::PatchOperation>(Value::Object(operation)).ok() };
    let Some(parsed) = parsed else {
        return Err(json_patch_failure(doc, &kind, &path, from.as_deref(), None));
    };
    check_json_patch_bounds(doc, &parsed, &kind, &path, from.as_deref(), bounds)?;
    json_patch::patch(doc, std::slice::from_ref(&parsed))
        .map_err(|err| json_patch_failure(doc, &kind, &path, from.as_deref(), Some(err.kind)))
}

/// Refuses an operation that would take the patch past its limits, before it is applied (so
/// nothing is copied or nested beyond them):
/// - `copy` operations may add at most [`MAX_JSON_PATCH_COPY_BYTES`] in all, measured as
///   evanphx measures them (the length of the copied value as Go's `json.Marshal` writes it),
///   with evanphx's `AccumulatedCopySizeError` message. As there, the check comes once the
///   source and the destination's parent are found.
/// - No value may end up nested deeper than [`MAX_PATCHED_DEPTH`]: the depth of an added,
///   replacing or copied value is measured; a `move` to a deeper place is first judged by the
///   document's depth (which bounds the moved value's) plus the levels it goes down, and only
///   when that is too deep is the moved value walked, at most [`MAX_MOVE_WALK_NODES`] nodes in
///   all (past them, the first judgement stands), so that moves cannot make a patch walk the
///   document over and over.
///
/// Values added or replacing others come from the body and are inserted once each, so with
/// these limits a patched document is at most the original, plus the body, plus
/// [`MAX_JSON_PATCH_COPY_BYTES`] (as Go writes them).
fn check_json_patch_bounds(
    doc: &Value,
    operation: &json_patch::PatchOperation,
    kind: &str,
    path: &str,
    from: Option<&str>,
    bounds: &mut JsonPatchBounds,
) -> Result<(), String> {
    use json_patch::PatchOperation;
    let levels = |pointer: &str| pointer.bytes().filter(|b| *b == b'/').count();
    let destination_found = || parent_of(doc, path).is_some_and(|p| p.is_object() || p.is_array());
    let too_deep = || format!("{kind} operation does not apply: the patched object would be nested deeper than {MAX_PATCHED_DEPTH} levels");
    let depth = match operation {
        PatchOperation::Add(op) if destination_found() => levels(path) + depth_of(&op.value),
        PatchOperation::Replace(op) if doc.pointer(path).is_some() => levels(path) + depth_of(&op.value),
        PatchOperation::Copy(_) => {
            let from = from.unwrap_or_default();
            let source = if from.starts_with('/') { doc.pointer(from) } else { None };
            let Some(source) = source.filter(|_| destination_found()) else { return Ok(()) };
            let measured = measure(source);
            bounds.copied = bounds.copied.saturating_add(measured.go_json_bytes);
            if bounds.copied > MAX_JSON_PATCH_COPY_BYTES {
                return Err(format!(
                    "Unable to complete the copy, the accumulated size increase of copy is {}, exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}",
                    bounds.copied
                ));
            }
            levels(path) + measured.depth
        }
        PatchOperation::Move(_) => {
            let from = from.unwrap_or_default();
            let (up, down) = (levels(from), levels(path));
            let into_itself = path.strip_prefix(from).is_some_and(|rest| rest.starts_with('/'));
            let Some(moved) = doc.pointer(from).filter(|_| down > up && !into_itself && destination_found()) else {
                return Ok(());
            };
            // The moved value is at most as deep as the document below `from`; only when that
            // does not show it fits is it walked (within a budget for the whole patch).
            match bounds.depth.saturating_add(down - up) {
                fits if fits <= MAX_PATCHED_DEPTH => fits,
                bound => depth_within(moved, &mut bounds.move_walk).map_or(bound, |depth| down + depth),
            }
        }
        _ => return Ok(()),
    };
    if depth > MAX_PATCHED_DEPTH {
        return Err(too_deep());
    }
    bounds.depth = bounds.depth.max(depth);
    Ok(())
}

/// A value's size and depth.
struct Measured {
    /// The length of the value as Go's `encoding/json` writes it (compact, HTML-safe escaping).
    go_json_bytes: u64,
    /// The nesting depth: 0 for a scalar, 1 for a list or object of scalars (or empty), ...
    depth: usize,
}

/// The nesting depth of `value`: 0 for a scalar, 1 for a list or object of scalars (or empty).
fn depth_of(value: &Value) -> usize {
    let mut unbounded = usize::MAX;
    depth_within(value, &mut unbounded).unwrap_or(usize::MAX)
}

/// The depth of `value`, walking at most `budget` nodes (taken from it); `None` past that.
fn depth_within(value: &Value, budget: &mut usize) -> Option<usize> {
    let mut depth = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        *budget = budget.checked_sub(1)?;
        match value {
            Value::Array(items) => {
                depth = depth.max(level + 1);
                stack.extend(items.iter().map(|item| (item, level + 1)));
            }
            Value::Object(map) => {
                depth = depth.max(level + 1);
                stack.extend(map.values().map(|item| (item, level + 1)));
            }
            _ => {}
        }
    }
    Some(depth)
}

/// Measures a value without recursion (its depth is not bounded yet when it is measured).
fn measure(value: &Value) -> Measured {
    let mut measured = Measured { go_json_bytes: 0, depth: 0 };
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        let bytes = match value {
            Value::Null | Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(n) => go_json_number_len(n),
            Value::String(s) => go_json_string_len(s),
            Value::Array(items) => {
                measured.depth = measured.depth.max(level + 1);
                stack.extend(items.iter().map(|item| (item, level + 1)));
                // Brackets and commas.
                2 + items.len().saturating_sub(1) as u64
            }
            Value::Object(map) => {
                measured.depth = measured.depth.max(level + 1);
                stack.extend(map.values().map(|item| (item, level + 1)));
                // Braces, commas, colons and keys.
                2 + map.len().saturating_sub(1) as u64 + map.keys().map(|k| 1 + go_json_string_len(k)).sum::<u64>()
            }
        };
        measured.go_json_bytes = measured.go_json_bytes.saturating_add(bytes);
    }
    measured
}

/// The length of a string as Go's `encoding/json` writes it: quoted, `"` `\` and the control
/// characters `\b` `\f` `\n` `\r` `\t` as two-character escapes, other control characters and
/// `<` `>` `&` U+2028 U+2029 as `\uXXXX`.
fn go_json_string_len(s: &str) -> u64 {
    let escaped: u64 = s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
            '\0'..='\u{1f}' | '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => 6,
            c => c.len_utf8() as u64,
        })
        .sum();
    2 + escaped
}

/// The length of a number as Go's `encoding/json` writes it: integers in decimal, floats in the
/// shortest form, `%f`-like from 1e-6 to below 1e21, exponent form (`1e+21`, `1e-7`) outside.
fn go_json_number_len(n: &serde_json::Number) -> u64 {
    if n.is_i64() || n.is_u64() {
        return n.to_string().len() as u64;
    }
    let f = n.as_f64().unwrap_or_default();
    let sign = u64::from(f.is_sign_negative());
    let abs = f.abs();
    if abs == 0.0 {
        return sign + 1;
    }
    // The shortest digits and the decimal exponent of the first one.
    let scientific = format!("{abs:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits = mantissa.bytes().filter(u8::is_ascii_digit).count() as i64;
    let exponent: i64 = exponent.parse().unwrap_or_default();
    let body = if !(1e-6..1e21).contains(&abs) {
        let exponent_digits = exponent.unsigned_abs().to_string().len() as i64;
        digits + i64::from(digits > 1) + 2 + if exponent >= 0 { exponent_digits.max(2) } else { exponent_digits }
    } else if exponent >= 0 {
        (exponent + 1).max(digits) + i64::from(digits > exponent + 1)
    } else {
        2 + (-exponent - 1) + digits
    };
    sign + body as u64
}

fn string_member(operation: &Map<String, Value>, name: &str) -> Option<String> {
    operation.get(name).and_then(Value::as_str).map(str::to_owned)
}

/// The value holding the last token of `path`, if any.
fn parent_of<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    let (parent, _) = path.rsplit_once('/')?;
    doc.pointer(parent)
}

/// evanphx's message for a failed operation, from the operation and the (unchanged) document.
fn json_patch_failure(doc: &Value, kind: &str, path: &str, from: Option<&str>, error: Option<json_patch::PatchErrorKind>) -> String {
    let container = parent_of(doc, path).filter(|p| p.is_object() || p.is_array());
    let last = path.rsplit_once('/').map(|(_, last)| last.replace("~1", "/").replace("~0", "~")).unwrap_or_default();
    match (kind, error) {
        ("test", Some(json_patch::PatchErrorKind::TestFailed)) => format!("testing value {path} failed: test failed"),
        ("test", _) if container.is_some() => format!("testing value {path} failed: test failed"),
        ("test", _) => format!("test operation does not apply: is missing path: {path}: missing value"),
        ("add", _) if container.is_some() => {
            format!("error in add for path: '{path}': Unable to access invalid index: {last}: invalid index referenced")
        }
        ("add", _) => format!("add operation does not apply: doc is missing path: \"{path}\": missing value"),
        ("remove", _) => match container {
            Some(Value::Object(_)) => {
                format!("error in remove for path: '{path}': Unable to remove nonexistent key: {last}: missing value")
            }
            Some(_) => format!("error in remove for path: '{path}': Unable to access invalid index: {last}: invalid index referenced"),
            None => format!("remove operation does not apply: doc is missing path: \"{path}\": missing value"),
        },
        ("replace", _) if container.is_some() => {
            format!("replace operation does not apply: doc is missing key: {path}: missing value")
        }
        ("replace", _) => format!("replace operation does not apply: doc is missing path: {path}: missing value"),
        (_, Some(json_patch::PatchErrorKind::CannotMoveInsideItself)) => {
            format!("{kind} operation does not apply: cannot move {} into its own child {path}", from.unwrap_or_default())
        }
        (_, Some(json_patch::PatchErrorKind::InvalidPointer)) => {
            format!("{kind} operation does not apply: doc is missing destination path: {path}: missing value")
        }
        _ => format!("{kind} operation does not apply: doc is missing from path: {}: missing value", from.unwrap_or_default()),
    }
}

// ---------------------------------------------------------------------------------------------
// JSON merge patch (RFC 7386), as evanphx's MergePatch

fn merge_patch(original: &Value, body: &[u8]) -> Result<Value, PatchError> {
    let patch: Value = serde_json::from_slice(body).map_err(|_| PatchError::InvalidMergePatch)?;
    match (original, patch) {
        (_, Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)) => Err(PatchError::InvalidMergePatch),
        (Value::Null, _) => Err(PatchError::InvalidDocument),
        (Value::Object(doc), Value::Object(patch)) => {
            let mut doc = doc.clone();
            merge_objects(&mut doc, patch);
            Ok(Value::Object(doc))
        }
        // A document that is not an object, or a patch that is a list, becomes the patch.
        (_, mut patch) => {
            prune_nulls(&mut patch);
            Ok(patch)
        }
    }
}

fn merge_objects(doc: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (key, value) in patch {
        if value.is_null() {
            doc.remove(&key);
            continue;
        }
        match doc.get_mut(&key) {
            Some(current) if !current.is_null() => merge_values(current, value),
            _ => {
                let mut value = value;
                prune_nulls(&mut value);
                doc.insert(key, value);
            }
        }
    }
}

fn merge_values(current: &mut Value, patch: Value) {
    match (current, patch) {
        (Value::Object(current), Value::Object(patch)) => merge_objects(current, patch),
        // evanphx prunes the patch only when the current value is not an object.
        (current, patch) if current.is_object() => *current = patch,
        (current, mut patch) => {
            prune_nulls(&mut patch);
            *current = patch;
        }
    }
}

/// Drops `null` members of objects, recursively (also in objects inside lists).
fn prune_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(prune_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch

fn strategic_merge_patch(original: &Value, body: &[u8], fields: &'static [FieldInfo]) -> Result<Value, PatchError> {
    let patch = match serde_json::from_slice::<Value>(body)? {
        Value::Object(patch) => patch,
        // Go decodes `null` into an empty map: nothing to do.
        Value::Null => Map::new(),
        other => return Err(PatchError::WrongShape { found: json_kind(&other), expected: "map[string]interface {}" }),
    };
    let original = match original {
        Value::Object(original) => original.clone(),
        Value::Null => Map::new(),
        other => return Err(bad_arg_type(GO_MAP, other)),
    };
    merge_map(original, patch, Schema::Struct(fields)).map(Value::Object)
}

/// What is known about the values at some place in the object (upstream's `LookupPatchMeta`).
#[derive(Clone, Copy)]
enum Schema {
    /// A generated type: its JSON fields.
    Struct(&'static [FieldInfo]),
    /// A JSON object with arbitrary keys whose values are of the given type (or scalars).
    Map(Option<fn() -> &'static [FieldInfo]>),
    /// Nothing (embedded JSON, scalars, fields the schema does not have).
    Unknown,
}

/// A field's patch facts, with the schema of its value (or of its elements, for a list).
struct FieldMeta {
    schema: Schema,
    /// The patch strategy other than `retainKeys`: `merge`, `replace` or empty.
    strategy: &'static str,
    merge_key: &'static str,
}

impl Schema {
    fn of_type(elem: Option<fn() -> &'static [FieldInfo]>) -> Schema {
        elem.map_or(Schema::Unknown, |fields| Schema::Struct(fields()))
    }

    /// The Go kind upstream names in "cannot merge lists without merge key for ...".
    fn name(self) -> &'static str {
        match self {
            Schema::Struct(_) => "struct",
            Schema::Map(_) => "map",
            Schema::Unknown => "interface",
        }
    }

    fn field(self, key: &str) -> Option<&'static FieldInfo> {
        match self {
            Schema::Struct(fields) => fields.iter().find(|f| f.json_name == key),
            Schema::Map(_) | Schema::Unknown => None,
        }
    }

    /// The facts of `key` whose value is an object.
    fn lookup(self, key: &str) -> Result<FieldMeta, PatchError> {
        if let Schema::Map(elem) = self {
            return Ok(FieldMeta { schema: Schema::of_type(elem), strategy: "", merge_key: "" });
        }
        let Some(field) = self.field(key) else { return Ok(FieldMeta::unknown()) };
        let schema = match field.shape {
            FieldShape::Object => Schema::of_type(field.elem),
            FieldShape::Map => Schema::Map(field.elem),
            FieldShape::List | FieldShape::Scalar => Schema::Unknown,
        };
        FieldMeta::new(field, schema)
    }

    /// The facts of `key` whose value is a list; the schema is the elements'.
    fn lookup_list(self, key: &str) -> Result<FieldMeta, PatchError> {
        if let Schema::Map(_) = self {
            return Ok(FieldMeta::unknown());
        }
        let Some(field) = self.field(key) else { return Ok(FieldMeta::unknown()) };
        let schema = match field.shape {
            FieldShape::List => Schema::of_type(field.elem),
            FieldShape::Object | FieldShape::Map | FieldShape::Scalar => Schema::Unknown,
        };
        FieldMeta::new(field, schema)
    }
}

impl FieldMeta {
    fn unknown() -> FieldMeta {
        FieldMeta { schema: Schema::Unknown, strategy: "", merge_key: "" }
    }

    /// Splits the strategy as upstream's `extractRetainKeysPatchStrategy` does: `retainKeys`
    /// only matters to clients (which send `$retainKeys`), the other strategy drives merging.
    fn new(field: &'static FieldInfo, schema: Schema) -> Result<FieldMeta, PatchError> {
        let tag = field.patch_strategy.unwrap_or_default();
        let mut parts = tag.split(',');
        let strategy = match (parts.next(), parts.next(), parts.next()) {
            (Some(RETAIN_KEYS_STRATEGY), None, None) => "",
            (Some(one), None, None) => one,
            (Some(RETAIN_KEYS_STRATEGY), Some(other), None) | (Some(other), Some(RETAIN_KEYS_STRATEGY), None) => other,
            _ => return Err(PatchError::BadPatchStrategy(tag)),
        };
        Ok(FieldMeta { schema, strategy, merge_key: field.patch_merge_key.unwrap_or_default() })
    }
}

/// Merges `patch` into `original` (upstream's `mergeMap` with the server's options: parallel
/// lists are applied, unmatched `null`s ignored).
fn merge_map(mut original: Map<String, Value>, mut patch: Map<String, Value>, schema: Schema) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
        return match directive.as_str() {
            Some(REPLACE_DIRECTIVE) => {
                patch.remove(DIRECTIVE_MARKER);
                Ok(clean_map(patch))
            }
            Some(DELETE_DIRECTIVE) => Ok(Map::new()),
            _ => Err(PatchError::UnknownDirective { directive: go_format(directive), map: go_format_map(&patch) }),
        };
    }

    apply_retain_keys(&mut original, &mut patch)?;
    merge_ordered_lists(&mut original, &mut patch, schema)?;

    for (key, patch_value) in patch {
        let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
            (directive_field(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?, true)
        } else {
            (key, false)
        };
        if patch_value.is_null() {
            original.remove(&key);
            continue;
        }
        // A new key, or a value of another JSON type: the patch's value (a deletion list for a
        // list the object does not have is dropped).
        if original.get(&key).map(GoType::of) != Some(GoType::of(&patch_value)) {
            if !is_delete_list {
                insert_clean(&mut original, key, patch_value);
            }
            continue;
        }
        let Some(original_value) = original.get_mut(&key) else { continue };
        match (original_value, patch_value) {
            (Value::Object(original_map), Value::Object(patch_map)) => {
                let meta = schema.lookup(&key)?;
                *original_map = if meta.strategy == REPLACE_DIRECTIVE {
                    clean_map(patch_map)
                } else {
                    merge_map(std::mem::take(original_map), patch_map, meta.schema)?
                };
            }
            (Value::Array(original_list), Value::Array(patch_list)) => {
                let meta = schema.lookup_list(&key)?;
                *original_list = merge_list_field(std::mem::take(original_list), patch_list, &meta, is_delete_list)?;
            }
            // Scalars of the same type (upstream replaces them even for a deletion list).
            (original_value, patch_value) => *original_value = patch_value,
        }
    }
    Ok(original)
}

/// `$retainKeys`: drops the original's keys not listed; every non-null key of the patch must be
/// listed (upstream's `applyRetainKeysDirective`).
fn apply_retain_keys(original: &mut Map<String, Value>, patch: &mut Map<String, Value>) -> Result<(), PatchError> {
    let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) else { return Ok(()) };
    let Value::Array(retain) = retain else { return Err(PatchError::BadRetainKeysFormat) };
    let retained: HashSet<&str> = retain.iter().filter_map(Value::as_str).collect();
    let listed = |key: &str| retained.contains(key);
    let unlisted_patch_key = patch.iter().any(|(key, value)| {
        !value.is_null()
            && !key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            && !key.starts_with(SET_ELEMENT_ORDER_PREFIX)
            && !listed(key)
    });
    if unlisted_patch_key {
        return Err(PatchError::BadRetainKeysFormat);
    }
    original.retain(|key, _| listed(key));
    Ok(())
}

/// `$setElementOrder/<field>`: merges the field's list (when the patch has it) and orders the
/// result as the directive says, the original's other elements kept in their places (upstream's
/// `mergePatchIntoOriginal`). The field and the directive leave the patch.
fn merge_ordered_lists(original: &mut Map<String, Value>, patch: &mut Map<String, Value>, schema: Schema) -> Result<(), PatchError> {
    let directives: Vec<String> = patch.keys().filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX)).cloned().collect();
    for directive in directives {
        let Some(order) = patch.remove(&directive) else { continue };
        let Value::Array(order) = order else { return Err(bad_arg_type(GO_LIST, &order)) };
        let field = directive_field(&directive, SET_ELEMENT_ORDER_PREFIX)?;
        let original_list = list_member(original, &field)?;
        let patch_list = list_member(patch, &field)?;
        let meta = schema.lookup_list(&field)?;
        validate_patch_with_set_order_list(patch_list.as_deref().unwrap_or_default(), &order, meta.merge_key)?;

        let merged = match (&original_list, patch_list.clone()) {
            (Some(original_list), None) => original_list.clone(),
            (None, Some(patch_list)) => clean_list(patch_list),
            (Some(original_list), Some(patch_list)) => merge_list_field(original_list.clone(), patch_list, &meta, false)?,
            (None, None) => continue,
        };
        let (patch_items, server_only) = partition(merged, &order, meta.merge_key)?;
        let original_list = original_list.unwrap_or_default();
        let kind = list_element_type(&[original_list.as_slice(), patch_list.as_deref().unwrap_or_default()])?;
        let ordered = normalize_element_order(patch_items, server_only, &order, &original_list, meta.merge_key, kind)?;
        original.insert(field.clone(), Value::Array(ordered));
        patch.remove(&field);
    }
    Ok(())
}

/// The list at `key`, if present; anything else than a list there is an error.
fn list_member(map: &Map<String, Value>, key: &str) -> Result<Option<Vec<Value>>, PatchError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Array(list)) => Ok(Some(list.clone())),
        Some(other) => Err(bad_arg_type(GO_LIST, other)),
    }
}

/// The field a `<prefix>/<field>` directive key names (upstream's `extractKey`).
fn directive_field(key: &str, prefix: &str) -> Result<String, PatchError> {
    match key.split_once('/') {
        Some((head, field)) if head == prefix => Ok(field.to_owned()),
        _ if prefix == SET_ELEMENT_ORDER_PREFIX => Err(PatchError::BadSetElementOrderFormat),
        _ => Err(PatchError::BadPrimitiveListFormat),
    }
}

/// Checks that the patch list's elements (deletions and directives aside) appear in the
/// `$setElementOrder` list in the same relative order (upstream's `validatePatchWithSetOrderList`).
fn validate_patch_with_set_order_list(patch: &[Value], order: &[Value], merge_key: &str) -> Result<(), PatchError> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<Value> = if merge_key.is_empty() { patch.to_vec() } else { split_deletions(patch.to_vec())?.0 };
    let (mut patch_index, mut order_index) = (0, 0);
    while patch_index < non_delete.len() && order_index < order.len() {
        if non_delete[patch_index].as_object().is_some_and(|m| m.contains_key(DIRECTIVE_MARKER)) {
            patch_index += 1;
            continue;
        }
        if merge_key_value_equal(&non_delete[patch_index], &order[order_index], merge_key)? {
            patch_index += 1;
        }
        order_index += 1;
    }
    if patch_index < non_delete.len() && order_index >= order.len() {
        return Err(PatchError::SetElementOrderMismatch { patch: go_format_list(patch), order: go_format_list(order) });
    }
    Ok(())
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool, PatchError> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    Ok(merge_key_value(left, merge_key)? == merge_key_value(right, merge_key)?)
}

/// The merge key's value of a list element, which must be an object having it.
fn merge_key_value<'a>(element: &'a Value, merge_key: &str) -> Result<&'a Value, PatchError> {
    let Value::Object(map) = element else { return Err(bad_arg_type(GO_MAP, element)) };
    map.get(merge_key).ok_or_else(|| no_merge_key(map, merge_key))
}

/// Merges a list field by its strategy (upstream's `mergeSliceHandler`): `merge` (or a deletion
/// list) merges, anything else replaces.
fn merge_list_field(original: Vec<Value>, patch: Vec<Value>, meta: &FieldMeta, is_delete_list: bool) -> Result<Vec<Value>, PatchError> {
    if meta.strategy == MERGE_DIRECTIVE || is_delete_list {
        merge_list(original, patch, meta.schema, meta.merge_key, is_delete_list)
    } else {
        Ok(clean_list(patch))
    }
}

/// Upstream's `mergeSlice`.
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: Schema,
    merge_key: &str,
    is_delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = list_element_type(&[original.as_slice(), patch.as_slice()])?;
    let (server_order, patch, merged) = if kind != GoType::Object {
        if is_delete_list {
            let deleted: HashSet<Key<'_>> = patch.iter().map(Key).collect();
            return Ok(original.iter().filter(|v| !deleted.contains(&Key(v))).cloned().collect());
        }
        let mut seen = HashSet::with_capacity(original.len() + patch.len());
        let mut merged = Vec::with_capacity(original.len() + patch.len());
        for value in original.iter().chain(&patch) {
            if seen.insert(Key(value)) {
                merged.push(value.clone());
            }
        }
        (original, patch, merged)
    } else {
        if merge_key.is_empty() {
            return Err(PatchError::NoMergeKeyForList(schema.name()));
        }
        let (original, patch) = apply_list_directives(original, patch, merge_key)?;
        let merged = merge_elements(original.clone(), &patch, merge_key, schema)?;
        (original, patch, merged)
    };
    let (patch_items, server_only) = partition(merged, &patch, merge_key)?;
    normalize_element_order(patch_items, server_only, &patch, &server_order, merge_key, kind)
}

/// `$patch` in list elements (upstream's `mergeSliceWithSpecialElements`): `delete` removes
/// every original element with that key, `replace` makes the patch's other elements the list.
/// Returns the original and the patch elements left to merge.
fn apply_list_directives(mut original: Vec<Value>, patch: Vec<Value>, merge_key: &str) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut replace = false;
    let mut deleted = HashSet::new();
    for element in &patch {
        let Value::Object(map) = element else { return Err(bad_arg_type(GO_MAP, element)) };
        let Some(directive) = map.get(DIRECTIVE_MARKER) else { continue };
        match directive.as_str() {
            Some(DELETE_DIRECTIVE) => {
                let key = map.get(merge_key).ok_or_else(|| no_merge_key(map, merge_key))?;
                // Deletions only take objects away, so the first deletion finds any non-object.
                if deleted.is_empty()
                    && let Some(index) = original.iter().position(|v| !v.is_object())
                {
                    return Err(PatchError::NotAMap(index));
                }
                deleted.insert(Key(key));
            }
            Some(REPLACE_DIRECTIVE) => replace = true,
            Some(MERGE_DIRECTIVE) => return Err(PatchError::MergeDirectiveInList),
            _ => return Err(PatchError::UnknownDirective { directive: go_format(directive), map: go_format_map(map) }),
        }
    }
    if !deleted.is_empty() {
        original.retain(|v| !v.get(merge_key).is_some_and(|key| deleted.contains(&Key(key))));
    }
    drop(deleted);
    let plain: Vec<Value> = patch.into_iter().filter(|v| !v.as_object().is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))).collect();
    Ok(if replace { (clean_list(plain), Vec::new()) } else { (original, plain) })
}

/// Merges each patch element into the original element with the same key, or appends it
/// (upstream's `mergeSliceWithoutSpecialElements`). The first original element with the key is
/// found through an index of the keys (kept up to date as merges and appends change them); a
/// non-object before it (or anywhere, when there is none) is an error, as scanning finds it.
fn merge_elements(mut original: Vec<Value>, patch: &[Value], merge_key: &str, schema: Schema) -> Result<Vec<Value>, PatchError> {
    let first_non_object = original.iter().position(|v| !v.is_object());
    let mut by_key: HashMap<OwnedKey, BTreeSet<usize>> = HashMap::new();
    for (index, element) in original.iter().enumerate() {
        if let Some(key) = element.as_object().and_then(|m| m.get(merge_key)) {
            by_key.entry(OwnedKey(key.clone())).or_default().insert(index);
        }
    }
    for element in patch {
        let key = OwnedKey(merge_key_value(element, merge_key)?.clone());
        let found = by_key.get(&key).and_then(|indices| indices.first().copied());
        if let Some(index) = first_non_object
            && found.is_none_or(|found| index < found)
        {
            return Err(PatchError::NotAMap(index));
        }
        let Value::Object(patch_map) = element else { return Err(bad_arg_type(GO_MAP, element)) };
        match found {
            Some(index) => {
                if let Value::Object(target) = &mut original[index] {
                    *target = merge_map(std::mem::take(target), patch_map.clone(), schema)?;
                }
                // A merge can change the key (a `null` in it deletes it).
                if original[index].get(merge_key) != Some(&key.0) {
                    by_key.entry(key).or_default().remove(&index);
                    if let Some(changed) = original[index].get(merge_key) {
                        by_key.entry(OwnedKey(changed.clone())).or_default().insert(index);
                    }
                }
            }
            None => {
                if let Some(appended) = clean(element.clone()) {
                    if let Some(key) = appended.get(merge_key) {
                        by_key.entry(OwnedKey(key.clone())).or_default().insert(original.len());
                    }
                    original.push(appended);
                }
            }
        }
    }
    Ok(original)
}

/// Splits `merged` into the elements present in `by` (by merge key, or by value for scalars)
/// and the others. As scanning `by` for an element's key would, a non-object in `by` before the
/// first element with the key (or anywhere, when none has it) is an error.
fn partition(merged: Vec<Value>, by: &[Value], merge_key: &str) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    if merge_key.is_empty() {
        let present: HashSet<Key<'_>> = by.iter().map(Key).collect();
        return Ok(merged.into_iter().partition(|v| present.contains(&Key(v))));
    }
    let first_non_object = by.iter().position(|v| !v.is_object());
    let mut first_with_key: HashMap<Key<'_>, usize> = HashMap::with_capacity(by.len());
    for (index, element) in by.iter().enumerate() {
        if let Some(key) = element.as_object().and_then(|m| m.get(merge_key)) {
            first_with_key.entry(Key(key)).or_insert(index);
        }
    }
    let mut present = Vec::with_capacity(merged.len());
    let mut absent = Vec::new();
    for element in merged {
        let found = first_with_key.get(&Key(merge_key_value(&element, merge_key)?)).copied();
        if let Some(index) = first_non_object
            && found.is_none_or(|found| index < found)
        {
            return Err(PatchError::NotAMap(index));
        }
        if found.is_some() { present.push(element) } else { absent.push(element) }
    }
    Ok((present, absent))
}

/// Orders the patch's elements as `patch_order` and the others as `server_order`, then
/// interleaves them (upstream's `normalizeElementOrder`).
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>, PatchError> {
    let patch_items = normalize_list_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = normalize_list_order(server_only, server_order, merge_key, kind)?;
    let server_positions = Positions::new(server_order, merge_key, kind);
    Ok(merge_sorted(server_only, patch_items, &server_positions))
}

/// Sorts `items` by their positions in `order`, deletions last (upstream's `normalizeSliceOrder`).
fn normalize_list_order(items: Vec<Value>, order: &[Value], merge_key: &str, kind: GoType) -> Result<Vec<Value>, PatchError> {
    let (items, deletions) = if kind == GoType::Object {
        for element in items.iter().chain(order) {
            merge_key_value(element, merge_key)?;
        }
        split_deletions(items)?
    } else {
        (items, Vec::new())
    };
    let positions = Positions::new(order, merge_key, kind);
    let mut keyed: Vec<(Option<usize>, Value)> = items.into_iter().map(|v| (positions.of(&v), v)).collect();
    if keyed.iter().all(|(position, _)| position.is_some()) {
        keyed.sort_by_key(|(position, _)| *position);
    } else {
        // Go's stable insertion sort with upstream's comparator, which calls any element missing
        // from `order` smaller than anything.
        for i in 1..keyed.len() {
            let mut j = i;
            while j > 0 && go_less(keyed[j].0, keyed[j - 1].0) {
                keyed.swap(j, j - 1);
                j -= 1;
            }
        }
    }
    let mut sorted: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
    sorted.extend(deletions);
    Ok(sorted)
}

fn go_less(left: Option<usize>, right: Option<usize>) -> bool {
    match (left, right) {
        (Some(left), Some(right)) => left < right,
        _ => true,
    }
}

/// Splits list elements into those without and those with `$patch: delete` (upstream's
/// `extractToDeleteItems`); every element must be an object.
fn split_deletions(items: Vec<Value>) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    if let Some(other) = items.iter().find(|v| !v.is_object()) {
        return Err(bad_arg_type(GO_MAP, other));
    }
    Ok(items.into_iter().partition(|v| v.get(DIRECTIVE_MARKER).and_then(Value::as_str) != Some(DELETE_DIRECTIVE)))
}

/// The first position of each element of a list: by merge key for objects (an element without
/// one under `None`), by value otherwise.
struct Positions<'a> {
    first: HashMap<Option<Key<'a>>, usize>,
    merge_key: &'a str,
    kind: GoType,
}

impl<'a> Positions<'a> {
    fn new(list: &'a [Value], merge_key: &'a str, kind: GoType) -> Positions<'a> {
        let mut first = HashMap::with_capacity(list.len());
        for (index, element) in list.iter().enumerate() {
            first.entry(Self::key(element, merge_key, kind)).or_insert(index);
        }
        Positions { first, merge_key, kind }
    }

    fn key<'v>(value: &'v Value, merge_key: &str, kind: GoType) -> Option<Key<'v>> {
        if kind == GoType::Object { value.as_object().and_then(|m| m.get(merge_key)).map(Key) } else { Some(Key(value)) }
    }

    /// The position of `value` in the list.
    fn of(&self, value: &Value) -> Option<usize> {
        self.first.get(&Self::key(value, self.merge_key, self.kind)).copied()
    }
}

/// Interleaves two sorted lists: an element of `left` goes before the first element of `right`
/// that comes after it in the server's order (upstream's `mergeSortedSlice`).
fn merge_sorted(left: Vec<Value>, right: Vec<Value>, server_order: &Positions<'_>) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => match (server_order.of(l), server_order.of(r)) {
                (Some(l), Some(r)) => l < r,
                _ => false,
            },
        };
        out.extend(if take_left { left.next() } else { right.next() });
    }
    out
}

/// A JSON value as a hash key: equal when the values are equal (numbers by their kind and value,
/// `-0.0` as `0.0`, objects as maps).
#[derive(Clone, Copy, Debug)]
struct Key<'a>(&'a Value);

impl PartialEq for Key<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for Key<'_> {}

impl std::hash::Hash for Key<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        hash_value(self.0, state);
    }
}

/// [`Key`] owning its value.
#[derive(Debug)]
struct OwnedKey(Value);

impl PartialEq for OwnedKey {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for OwnedKey {}

impl std::hash::Hash for OwnedKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        hash_value(&self.0, state);
    }
}

fn hash_value<H: std::hash::Hasher>(value: &Value, state: &mut H) {
    use std::hash::Hash;
    match value {
        Value::Null => 0u8.hash(state),
        Value::Bool(b) => (1u8, b).hash(state),
        // serde_json's numbers are equal when of the same kind (a non-negative integer is always
        // unsigned) and value.
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => (2u8, u).hash(state),
            (None, Some(i), _) => (3u8, i).hash(state),
            (None, None, f) => (4u8, (f.unwrap_or_default() + 0.0).to_bits()).hash(state),
        },
        Value::String(s) => (5u8, s).hash(state),
        Value::Array(items) => {
            (6u8, items.len()).hash(state);
            items.iter().for_each(|item| hash_value(item, state));
        }
        Value::Object(map) => {
            (7u8, map.len()).hash(state);
            for (key, item) in map {
                key.hash(state);
                hash_value(item, state);
            }
        }
    }
}

/// The JSON types Go tells apart in decoded JSON (`reflect.TypeOf` of an `interface{}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoType {
    Nil,
    Bool,
    Number,
    String,
    List,
    Object,
}

impl GoType {
    fn of(value: &Value) -> GoType {
        match value {
            Value::Null => GoType::Nil,
            Value::Bool(_) => GoType::Bool,
            Value::Number(_) => GoType::Number,
            Value::String(_) => GoType::String,
            Value::Array(_) => GoType::List,
            Value::Object(_) => GoType::Object,
        }
    }
}

/// The one type of all the lists' elements (upstream's `sliceElementType`).
fn list_element_type(lists: &[&[Value]]) -> Result<GoType, PatchError> {
    let mut kind = None;
    for value in lists.iter().flat_map(|list| list.iter()) {
        let this = GoType::of(value);
        match kind {
            None if this == GoType::List => return Err(PatchError::ListOfLists),
            None => kind = Some(this),
            Some(kind) if kind != this => {
                let rendered: Vec<String> = lists.iter().map(|list| go_format_list(list)).collect();
                return Err(PatchError::MixedListElements(format!("[{}]", rendered.join(" "))));
            }
            Some(_) => {}
        }
    }
    kind.ok_or(PatchError::NoListElements)
}

/// Inserts a value taken from the patch as is, cleaned; a value that is itself a directive is
/// not kept (and removes the key, as upstream).
fn insert_clean(map: &mut Map<String, Value>, key: String, value: Value) {
    match clean(value) {
        Some(value) => map.insert(key, value),
        None => map.remove(&key),
    };
}

/// A patch value as a plain value: without `null` members, objects carrying `$patch` or
/// directive keys. `None` when the value itself carries `$patch`.
fn clean(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) if map.contains_key(DIRECTIVE_MARKER) => None,
        Value::Object(map) => Some(Value::Object(clean_map(map))),
        Value::Array(list) => Some(Value::Array(clean_list(list))),
        other => Some(other),
    }
}

fn clean_map(map: Map<String, Value>) -> Map<String, Value> {
    map.into_iter()
        .filter(|(key, value)| !value.is_null() && !is_directive_key(key))
        .filter_map(|(key, value)| clean(value).map(|value| (key, value)))
        .collect()
}

fn clean_list(list: Vec<Value>) -> Vec<Value> {
    list.into_iter().filter_map(clean).collect()
}

fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS_DIRECTIVE
        || key.starts_with(SET_ELEMENT_ORDER_PREFIX)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
}

// ---------------------------------------------------------------------------------------------
// Go's renderings, for error messages

const GO_MAP: &str = "map[string]interface {}";
const GO_LIST: &str = "[]interface {}";

fn bad_arg_type(expected: &'static str, actual: &Value) -> PatchError {
    PatchError::BadArgType { expected, actual: go_type_name(actual) }
}

fn no_merge_key(map: &Map<String, Value>, key: &str) -> PatchError {
    PatchError::NoMergeKey { map: go_format_map(map), key: key.to_owned() }
}

/// `reflect.TypeOf(v).String()` of a decoded JSON value.
fn go_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => GO_LIST,
        Value::Object(_) => GO_MAP,
    }
}

/// The JSON kind Go's `UnmarshalTypeError` names.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `%v` of a decoded JSON value: `map[a:1 b:[x y]]`, `<nil>`, floats as `%g`.
pub fn go_format(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => go_format_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(list) => go_format_list(list),
        Value::Object(map) => go_format_map(map),
    }
}

fn go_format_list(list: &[Value]) -> String {
    let items: Vec<String> = list.iter().map(go_format).collect();
    format!("[{}]", items.join(" "))
}

fn go_format_map(map: &Map<String, Value>) -> String {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by_key(|(key, _)| *key);
    let items: Vec<String> = entries.into_iter().map(|(k, v)| format!("{k}:{}", go_format(v))).collect();
    format!("map[{}]", items.join(" "))
}

/// `strconv.FormatFloat(f, 'g', -1, 64)`, as `%v` prints a float: shortest digits, exponent
/// form below 1e-4 and from 1e6 on.
fn go_format_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return f.to_string();
    }
    let exponent = f.abs().log10().floor();
    if !(-4.0..6.0).contains(&exponent) {
        let rendered = format!("{f:e}");
        return match rendered.split_once('e') {
            Some((mantissa, exp)) => {
                let (sign, digits) = exp.strip_prefix('-').map_or(("+", exp), |d| ("-", d));
                format!("{mantissa}e{sign}{digits:0>2}")
            }
            None => rendered,
        };
    }
    f.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // -----------------------------------------------------------------------------------------
    // A schema mirroring upstream's test type `MergeItem` (patch_test.go), so that upstream's
    // fixtures read the same here.

    fn merge_item() -> &'static [FieldInfo] {
        MERGE_ITEM
    }

    fn retain_keys_merge_item() -> &'static [FieldInfo] {
        RETAIN_KEYS_MERGE_ITEM
    }

    const fn field(json_name: &'static str, shape: FieldShape) -> FieldInfo {
        FieldInfo::new(json_name, shape)
    }

    const fn list(
        json_name: &'static str,
        strategy: Option<&'static str>,
        key: Option<&'static str>,
        elem: Option<fn() -> &'static [FieldInfo]>,
    ) -> FieldInfo {
        FieldInfo { patch_strategy: strategy, patch_merge_key: key, elem, ..field(json_name, FieldShape::List) }
    }

    static MERGE_ITEM: &[FieldInfo] = &[
        field("name", FieldShape::Scalar),
        field("value", FieldShape::Scalar),
        field("other", FieldShape::Scalar),
        list("mergingList", Some("merge"), Some("name"), Some(merge_item)),
        list("nonMergingList", None, None, Some(merge_item)),
        list("mergingIntList", Some("merge"), None, None),
        list("nonMergingIntList", None, None, None),
        field("simpleMap", FieldShape::Map),
        FieldInfo { patch_strategy: Some("replace"), ..field("replacingItem", FieldShape::Object) },
        FieldInfo { patch_strategy: Some("retainKeys"), elem: Some(retain_keys_merge_item), ..field("retainKeysMap", FieldShape::Object) },
        list("retainKeysMergingList", Some("merge,retainKeys"), Some("name"), Some(merge_item)),
        FieldInfo { elem: Some(merge_item), ..field("mapOfItems", FieldShape::Map) },
        FieldInfo { patch_strategy: Some("merge,replace"), ..field("badStrategy", FieldShape::Object) },
    ];

    static RETAIN_KEYS_MERGE_ITEM: &[FieldInfo] = &[
        field("name", FieldShape::Scalar),
        field("value", FieldShape::Scalar),
        field("other", FieldShape::Scalar),
        field("simpleMap", FieldShape::Map),
        list("mergingIntList", Some("merge"), None, None),
        list("mergingList", Some("merge"), Some("name"), Some(merge_item)),
        list("nonMergingList", None, None, Some(merge_item)),
    ];

    fn yaml(text: &str) -> Value {
        serde_yaml_ng::from_str(text).expect("test YAML")
    }

    fn smp(original: &Value, patch: &Value) -> Result<Value, PatchError> {
        apply_patch(original, patch.to_string().as_bytes(), PatchType::StrategicMerge, MERGE_ITEM)
    }

    /// Strategic merge cases: (description, original, patch, expected result or `error: <part
    /// of the message>`). Most are upstream's fixtures (customStrategicMergePatchTestCaseData,
    /// customStrategicMergePatchRawTestCases and strategicMergePatchRawTestCases), applied as
    /// the server applies them.
    const SMP_CASES: &[(&str, &str, &str, &str)] = &[
        ("unique scalars when merging lists", "mergingIntList: [1, 2]", "mergingIntList: [2, 3]", "mergingIntList: [1, 2, 3]"),
        ("delete map from nested map", "simpleMap: {key1: 1, key2: 1}", "simpleMap: {$patch: delete}", "simpleMap: {}"),
        (
            "delete all items from merging list",
            "mergingList: [{name: 1}, {name: 2}]",
            "mergingList: [{$patch: replace}]",
            "mergingList: []",
        ),
        ("merge empty merging lists", "mergingList: []", "mergingList: []", "mergingList: []"),
        ("delete all keys from map", "{name: 1, value: 1}", "$patch: replace", "{}"),
        ("add key and delete all keys from map", "{name: 1, value: 1}", "{other: a, $patch: replace}", "other: a"),
        ("delete the whole object", "{name: 1, value: 1}", "$patch: delete", "{}"),
        (
            "delete all duplicate entries in a merging list",
            "mergingList: [{name: 1}, {name: 1}, {name: 2, value: a}, {name: 3}, {name: 3}]",
            "mergingList: [{name: 1, $patch: delete}, {name: 3, $patch: delete}]",
            "mergingList: [{name: 2, value: a}]",
        ),
        (
            "retainKeys map can add a field when no retainKeys directive present",
            "retainKeysMap: {name: foo}",
            "retainKeysMap: {value: bar}",
            "retainKeysMap: {name: foo, value: bar}",
        ),
        (
            "retainKeys map can change a field when no retainKeys directive present",
            "retainKeysMap: {name: foo, value: a}",
            "retainKeysMap: {value: b}",
            "retainKeysMap: {name: foo, value: b}",
        ),
        (
            "retainKeys map can delete a field when no retainKeys directive present",
            "retainKeysMap: {name: foo, value: a}",
            "retainKeysMap: {value: null}",
            "retainKeysMap: {name: foo}",
        ),
        (
            "retainKeys map merge an empty map",
            "retainKeysMap: {name: foo, value: a}",
            "retainKeysMap: {}",
            "retainKeysMap: {name: foo, value: a}",
        ),
        (
            "retainKeys list can change a field when no retainKeys directive present",
            "retainKeysMergingList: [{name: bar}, {name: foo, value: a}]",
            "retainKeysMergingList: [{name: foo, value: b}]",
            "retainKeysMergingList: [{name: bar}, {name: foo, value: b}]",
        ),
        (
            "retainKeys list can delete a field when no retainKeys directive present",
            "retainKeysMergingList: [{name: bar}, {name: foo, value: a}]",
            "retainKeysMergingList: [{name: foo, value: null}]",
            "retainKeysMergingList: [{name: bar}, {name: foo}]",
        ),
        (
            "$retainKeys clears the keys it does not list",
            "retainKeysMap: {name: foo, value: a, other: b, simpleMap: {x: y}}",
            "retainKeysMap: {$retainKeys: [name, value], value: c}",
            "retainKeysMap: {name: foo, value: c}",
        ),
        (
            "$retainKeys in an element of a merging list",
            "retainKeysMergingList: [{name: foo, value: a, other: b}, {name: bar, other: c}]",
            "retainKeysMergingList: [{name: foo, $retainKeys: [name, other], other: d}]",
            "retainKeysMergingList: [{name: foo, other: d}, {name: bar, other: c}]",
        ),
        (
            "$retainKeys with a null for an unlisted key",
            "retainKeysMap: {name: foo, value: a}",
            "retainKeysMap: {$retainKeys: [name], value: null}",
            "retainKeysMap: {name: foo}",
        ),
        (
            "$retainKeys not listing a key the patch sets",
            "retainKeysMap: {name: foo}",
            "retainKeysMap: {$retainKeys: [name], value: a}",
            "error: invalid patch format of retainKeys",
        ),
        (
            "$retainKeys that is not a list",
            "retainKeysMap: {name: foo}",
            "retainKeysMap: {$retainKeys: name}",
            "error: invalid patch format of retainKeys",
        ),
        (
            "preserve the order from the patch in a merging list",
            "mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]",
            "mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, other: x}]",
            "mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, value: b, other: x}]",
        ),
        (
            "preserve the order from the patch in a merging list 2",
            "mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]",
            "mergingList: [{name: 3, value: c}, {name: 1, value: a}]",
            "mergingList: [{name: 2, value: b}, {name: 3, value: c}, {name: 1, value: a}]",
        ),
        (
            "preserve the order from the patch in a merging int list",
            "mergingIntList: [1, 2, 3]",
            "mergingIntList: [3, 1, 2]",
            "mergingIntList: [3, 1, 2]",
        ),
        (
            "preserve the order from the patch in a merging int list 2",
            "mergingIntList: [1, 2, 3]",
            "mergingIntList: [3, 1]",
            "mergingIntList: [2, 3, 1]",
        ),
        (
            "a new element of a merging list goes first when nothing orders it",
            "mergingList: [{name: a}, {name: b}]",
            "mergingList: [{name: c}]",
            "mergingList: [{name: c}, {name: a}, {name: b}]",
        ),
        (
            "$setElementOrder contains item that is not present in the list to be merged",
            "mergingList: [{name: 1}, {name: 3}]",
            "{$setElementOrder/mergingList: [{name: 3}, {name: 2}, {name: 1}], mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}",
            "mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]",
        ),
        (
            "$setElementOrder contains item that is not present in the int list to be merged",
            "mergingIntList: [1, 3]",
            "$setElementOrder/mergingIntList: [3, 2, 1]",
            "mergingIntList: [3, 1]",
        ),
        (
            "should check if order in $setElementOrder and patch list match",
            "mergingList: [{name: 1}, {name: 3}, {name: 2}]",
            "{$setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}], mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}",
            "error: doesn't match $setElementOrder list",
        ),
        (
            "should check if order in $setElementOrder and patch int list match",
            "mergingIntList: [1, 3, 2]",
            "{$setElementOrder/mergingIntList: [1, 2, 3], mergingIntList: [3, 1]}",
            "error: doesn't match $setElementOrder list",
        ),
        (
            "missing merge key should error out",
            "mergingList: [{name: 1, value: a}]",
            "mergingList: [{value: b}]",
            "error: map: map[value:b] does not contain declared merge key: name",
        ),
        (
            "$deleteFromPrimitiveList of nonexistent item in primitive list should not add the item to the list",
            "mergingIntList: [1, 2]",
            "$deleteFromPrimitiveList/mergingIntList: [3]",
            "mergingIntList: [1, 2]",
        ),
        (
            "$deleteFromPrimitiveList on empty primitive list should not add the item to the list",
            "mergingIntList: null",
            "$deleteFromPrimitiveList/mergingIntList: [3]",
            "mergingIntList: null",
        ),
        (
            "$deleteFromPrimitiveList on nonexistent primitive list should not add the primitive list",
            "foo: [bar]",
            "$deleteFromPrimitiveList/mergingIntList: [3]",
            "foo: [bar]",
        ),
        (
            "$deleteFromPrimitiveList should delete item from a list with merge patch strategy",
            "mergingIntList: [1, 2, 3]",
            "$deleteFromPrimitiveList/mergingIntList: [2]",
            "mergingIntList: [1, 3]",
        ),
        (
            "$deleteFromPrimitiveList should delete item from a list without merge patch strategy",
            "nonMergingIntList: [1, 2, 3]",
            "$deleteFromPrimitiveList/nonMergingIntList: [2]",
            "nonMergingIntList: [1, 3]",
        ),
        (
            "delete items in lists of scalars (three-way patch on a changed list)",
            "mergingIntList: [1, 2, 3, 4]",
            "{$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}",
            "mergingIntList: [1, 2, 4]",
        ),
        (
            "delete all duplicate items in lists of scalars",
            "mergingIntList: [1, 2, 3, 3, 4]",
            "{$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}",
            "mergingIntList: [1, 2, 4]",
        ),
        (
            "add and delete items in lists of scalars",
            "mergingIntList: [1, 2, 3]",
            "{$setElementOrder/mergingIntList: [1, 2, 4], $deleteFromPrimitiveList/mergingIntList: [3], mergingIntList: [4]}",
            "mergingIntList: [1, 2, 4]",
        ),
        (
            "merge lists of maps",
            "mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]",
            "{$setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}], mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]}",
            "mergingList: [{name: 4, value: 4}, {name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]",
        ),
        (
            "add field to map in merging list",
            "mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]",
            "{$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: 1}]}",
            "mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2, other: b}]",
        ),
        (
            "delete map from merging list with $setElementOrder",
            "mergingList: [{name: 1}, {name: 2}, {name: 3}]",
            "{$setElementOrder/mergingList: [{name: 3}, {name: 1}], mergingList: [{name: 2, $patch: delete}]}",
            "mergingList: [{name: 3}, {name: 1}]",
        ),
        (
            "$setElementOrder for a list the object does not have adds the patch's list",
            "name: a",
            "{$setElementOrder/mergingList: [{name: 2}, {name: 1}], mergingList: [{name: 2}, {name: 1, value: x}]}",
            "{name: a, mergingList: [{name: 2}, {name: 1, value: x}]}",
        ),
        (
            "$setElementOrder contradicting the order of a replacing list",
            "nonMergingIntList: [1, 2]",
            "{$setElementOrder/nonMergingIntList: [3, 4], nonMergingIntList: [4, 3]}",
            "error: doesn't match $setElementOrder list",
        ),
        (
            "delete field from nested map",
            "simpleMap: {key1: 1, key2: 1, other: a}",
            "simpleMap: {key2: null}",
            "simpleMap: {key1: 1, other: a}",
        ),
        ("add field and delete field from map", "{name: 1, other: a}", "{name: null, value: 1}", "{value: 1, other: a}"),
        ("a null for a missing field is ignored", "name: 1", "{value: null}", "name: 1"),
        ("replace list of scalars", "nonMergingIntList: [1, 2]", "nonMergingIntList: [2, 3]", "nonMergingIntList: [2, 3]"),
        (
            "replace list of maps",
            "nonMergingList: [{name: 1, value: a}, {name: 2}]",
            "nonMergingList: [{name: 1}]",
            "nonMergingList: [{name: 1}]",
        ),
        (
            "delete all maps from merging list",
            "mergingList: [{name: 1, other: a}, {name: 2, other: b}]",
            "mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]",
            "mergingList: []",
        ),
        (
            "delete a map from a merging list that does not have it",
            "mergingList: [{name: 1}]",
            "mergingList: [{name: 2, $patch: delete}]",
            "mergingList: [{name: 1}]",
        ),
        (
            "replace a merging list keeping the patch's elements",
            "mergingList: [{name: 1, value: a}, {name: 2}]",
            "mergingList: [{name: 3, value: c}, {$patch: replace}]",
            "mergingList: [{name: 3, value: c}]",
        ),
        (
            "merge a nested merging list",
            "mergingList: [{name: 1, mergingList: [{name: a, value: x}]}]",
            "mergingList: [{name: 1, mergingList: [{name: b}]}]",
            "mergingList: [{name: 1, mergingList: [{name: b}, {name: a, value: x}]}]",
        ),
        (
            "a field with strategy replace is replaced whole",
            "replacingItem: {a: 1, b: {c: 2}}",
            "replacingItem: {b: {d: 3}}",
            "replacingItem: {b: {d: 3}}",
        ),
        (
            "a value of another type replaces the original",
            "{simpleMap: {a: b}, mergingList: [{name: 1}]}",
            "{simpleMap: text, mergingList: {name: 2}}",
            "{simpleMap: text, mergingList: {name: 2}}",
        ),
        (
            "a new value is taken without its nulls and directives",
            "name: 1",
            "simpleMap: {a: b, c: null, d: {$patch: delete}, $retainKeys: [a]}",
            "{name: 1, simpleMap: {a: b}}",
        ),
        (
            "a new list element is taken without its nulls",
            "mergingList: [{name: 1}]",
            "mergingList: [{name: 2, value: null, other: x}]",
            "mergingList: [{name: 2, other: x}, {name: 1}]",
        ),
        ("a new key that is a directive is not added", "name: 1", "simpleMap: {$patch: replace, a: b}", "name: 1"),
        (
            "fields the schema does not know merge like fields without strategy",
            "unknown: {a: 1, b: {c: 2}, list: [1, 2]}",
            "unknown: {b: {d: 3}, list: [3]}",
            "unknown: {a: 1, b: {c: 2, d: 3}, list: [3]}",
        ),
        (
            "values of a map of objects merge with their type's facts",
            "mapOfItems: {x: {mergingList: [{name: 1, value: a}]}}",
            "mapOfItems: {x: {mergingList: [{name: 2}]}}",
            "mapOfItems: {x: {mergingList: [{name: 2}, {name: 1, value: a}]}}",
        ),
        ("scalars of the same type are replaced", "{name: a, value: 1}", "{name: b, value: 2.5}", "{name: b, value: 2.5}"),
        ("an empty patch changes nothing", "{name: a, mergingIntList: [1]}", "{}", "{name: a, mergingIntList: [1]}"),
        (
            "$patch: merge in an object is an unknown patch type",
            "simpleMap: {a: b}",
            "simpleMap: {$patch: merge, c: d}",
            "error: unknown patch type: merge in map: map[$patch:merge c:d]",
        ),
        (
            "$patch: merge in a list element",
            "mergingList: [{name: 1}]",
            "mergingList: [{name: 1, $patch: merge}]",
            "error: merging lists cannot yet be specified in the patch",
        ),
        (
            "an unknown directive in a list element",
            "mergingList: [{name: 1}]",
            "mergingList: [{name: 1, $patch: frobnicate}]",
            "error: unknown patch type: frobnicate in map: map[$patch:frobnicate name:1]",
        ),
        (
            "a deletion without the merge key",
            "mergingList: [{name: 1}]",
            "mergingList: [{value: 1, $patch: delete}]",
            "error: does not contain declared merge key: name",
        ),
        ("lists of lists", "mergingIntList: [1]", "mergingIntList: [[2]]", "error: list element types are not identical"),
        ("lists of lists in an empty list", "mergingIntList: []", "mergingIntList: [[2]]", "error: lists of lists are not supported"),
        (
            "mixed element types",
            "mergingIntList: [1, 2]",
            "mergingIntList: [a]",
            "error: list element types are not identical: [[1 2] [a]]",
        ),
        (
            "objects in a merging list without merge key",
            "mergingIntList: []",
            "mergingIntList: [{a: 1}]",
            "error: cannot merge lists without merge key for interface",
        ),
        (
            "a malformed $setElementOrder key",
            "mergingIntList: [1]",
            "$setElementOrderX: [1]",
            "error: invalid patch format of setElementOrder list",
        ),
        (
            "a malformed $deleteFromPrimitiveList key",
            "mergingIntList: [1]",
            "$deleteFromPrimitiveListX: [1]",
            "error: invalid patch format of primitive list",
        ),
        (
            "a $setElementOrder that is not a list",
            "mergingIntList: [1]",
            "$setElementOrder/mergingIntList: 1",
            "error: expected a []interface {}, but received a int64",
        ),
        (
            "a field whose patch strategy upstream does not know",
            "badStrategy: {a: 1}",
            "badStrategy: {a: 2}",
            "error: unexpected patch strategy: merge,replace",
        ),
    ];

    #[test]
    fn strategic_merge_patch_cases() {
        let mut failures = Vec::new();
        for (description, original, patch, expected) in SMP_CASES {
            let got = smp(&yaml(original), &yaml(patch));
            match (expected.strip_prefix("error: "), got) {
                (Some(part), Err(err)) if err.to_string().contains(part) => {}
                (None, Ok(got)) if got == yaml(expected) => {}
                (_, got) => failures.push(format!("{description}:\n  expected {expected}\n  got      {got:?}")),
            }
        }
        assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
    }

    #[test]
    fn strategic_merge_patches_of_long_lists_take_linear_time() {
        // Lookups by merge key and by value are hashed: lists as long as a 3 MiB body can hold
        // merge in one pass (upstream scans the list for each element).
        let n = 20_000;
        let named = |prefix: &str, range: std::ops::Range<usize>| -> Vec<Value> {
            range.map(|i| json!({"name": format!("{prefix}{i}")})).collect()
        };
        let original = json!({"mergingList": named("x", 0..n), "mergingIntList": (0..n).collect::<Vec<_>>()});
        let mut patch_list = named("x", n / 2..n);
        patch_list.extend(named("y", 0..n));
        patch_list.push(json!({"name": "x0", "$patch": "delete"}));
        let patch = json!({
            "mergingList": patch_list,
            "mergingIntList": (n / 2..2 * n).collect::<Vec<_>>(),
            "$deleteFromPrimitiveList/mergingIntList": (0..n / 4).collect::<Vec<_>>(),
        });
        let got = smp(&original, &patch).unwrap();
        let list = got["mergingList"].as_array().unwrap();
        assert_eq!(list.len(), 2 * n - 1);
        assert_eq!(
            (list[0]["name"].as_str(), list[n - 2]["name"].as_str(), list[n - 1]["name"].as_str()),
            (Some("x1"), Some("x19999"), Some("y0"))
        );
        let ints = got["mergingIntList"].as_array().unwrap();
        assert_eq!(
            (ints.len(), ints[0].as_u64(), ints.last().and_then(Value::as_u64)),
            (2 * n - n / 4, Some(n as u64 / 4), Some(2 * n as u64 - 1))
        );
        // $setElementOrder over the whole list, and $retainKeys over many keys.
        let order: Vec<Value> = named("x", 0..n).into_iter().rev().collect();
        let patch = json!({"$setElementOrder/mergingList": order, "mergingList": [{"name": "x5", "value": 1}]});
        let got = smp(&original, &patch).unwrap();
        assert_eq!((got["mergingList"][0]["name"].as_str(), got["mergingList"][n - 6]["value"].as_i64()), (Some("x19999"), Some(1)));
        let keys: Map<String, Value> = (0..n).map(|i| (format!("k{i}"), json!(i))).collect();
        let original = json!({"retainKeysMap": {"name": "a", "value": "b"}});
        let mut patch = keys.clone();
        patch.insert("$retainKeys".into(), Value::Array(keys.keys().map(|k| json!(k)).collect()));
        let got = smp(&original, &json!({"retainKeysMap": patch})).unwrap();
        assert_eq!(got["retainKeysMap"].as_object().unwrap().len(), n);
    }

    #[test]
    fn strategic_merge_patch_of_null_changes_nothing() {
        let original = json!({"name": "a"});
        let got = apply_patch(&original, b"null", PatchType::StrategicMerge, MERGE_ITEM).unwrap();
        assert_eq!(got, original);
    }

    #[test]
    fn strategic_merge_patch_bodies_that_are_not_objects() {
        let original = json!({"name": "a"});
        let err = apply_patch(&original, b"[1]", PatchType::StrategicMerge, MERGE_ITEM).unwrap_err();
        assert_eq!(err.to_string(), "json: cannot unmarshal array into Go value of type map[string]interface {}");
        assert_eq!(err.status_code(), 400);
        let err = apply_patch(&original, b"{not json", PatchType::StrategicMerge, MERGE_ITEM).unwrap_err();
        assert!(matches!(err, PatchError::Syntax(_)), "{err:?}");
        assert_eq!(err.status_code(), 400);
    }

    // -----------------------------------------------------------------------------------------
    // JSON patch

    fn json_patch_result(original: Value, patch: Value) -> Result<Value, PatchError> {
        apply_patch(&original, patch.to_string().as_bytes(), PatchType::Json, &[])
    }

    #[test]
    fn json_patch_operations() {
        let doc = json!({"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": 1, "list": [1, 2]}});
        let cases: &[(&str, Value, Value)] = &[
            ("add", json!([{"op": "add", "path": "/metadata/labels/tier", "value": "fe"}]), json!({"app": "web", "tier": "fe"})),
            (
                "add with an escaped key",
                json!([{"op": "add", "path": "/metadata/labels/example.com~1team", "value": "a"}]),
                json!({"app": "web", "example.com/team": "a"}),
            ),
            ("replace", json!([{"op": "replace", "path": "/metadata/labels/app", "value": "api"}]), json!({"app": "api"})),
            ("remove", json!([{"op": "remove", "path": "/metadata/labels/app"}]), json!({})),
            (
                "test then replace",
                json!([
                    {"op": "test", "path": "/metadata/labels/app", "value": "web"},
                    {"op": "replace", "path": "/metadata/labels/app", "value": "x"}
                ]),
                json!({"app": "x"}),
            ),
            (
                "a test of null holds for a missing key",
                json!([{"op": "test", "path": "/metadata/labels/nope", "value": null}]),
                json!({"app": "web"}),
            ),
            (
                "copy and move",
                json!([
                    {"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/labels/copy"},
                    {"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/moved"}
                ]),
                json!({"copy": "web", "moved": "web"}),
            ),
        ];
        for (description, patch, labels) in cases {
            let got = json_patch_result(doc.clone(), patch.clone()).unwrap_or_else(|e| panic!("{description}: {e}"));
            assert_eq!(got["metadata"]["labels"], *labels, "{description}");
        }
        let got = json_patch_result(doc.clone(), json!([{"op": "add", "path": "/spec/list/-", "value": 3}])).unwrap();
        assert_eq!(got["spec"]["list"], json!([1, 2, 3]));
        let got = json_patch_result(doc.clone(), json!([{"op": "replace", "path": "/spec/replicas", "value": 3}])).unwrap();
        assert_eq!(got["spec"]["replicas"], json!(3));
        assert_eq!(json_patch_result(doc.clone(), json!(null)).unwrap(), doc);
    }

    #[test]
    fn json_patch_failures() {
        let doc = json!({"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"list": [1]}});
        let cases: &[(Value, &str)] = &[
            (json!([{"op": "test", "path": "/metadata/name", "value": "api"}]), "testing value /metadata/name failed: test failed"),
            (
                json!([{"op": "test", "path": "/metadata/labels/nope", "value": "x"}]),
                "testing value /metadata/labels/nope failed: test failed",
            ),
            (
                json!([{"op": "test", "path": "/nope/deeper", "value": "x"}]),
                "test operation does not apply: is missing path: /nope/deeper: missing value",
            ),
            (
                json!([{"op": "remove", "path": "/metadata/labels/nope"}]),
                "error in remove for path: '/metadata/labels/nope': Unable to remove nonexistent key: nope: missing value",
            ),
            (
                json!([{"op": "remove", "path": "/nope/deeper"}]),
                "remove operation does not apply: doc is missing path: \"/nope/deeper\": missing value",
            ),
            (
                json!([{"op": "remove", "path": "/spec/list/5"}]),
                "error in remove for path: '/spec/list/5': Unable to access invalid index: 5: invalid index referenced",
            ),
            (
                json!([{"op": "replace", "path": "/metadata/nope", "value": 1}]),
                "replace operation does not apply: doc is missing key: /metadata/nope: missing value",
            ),
            (
                json!([{"op": "add", "path": "/nope/deeper", "value": 1}]),
                "add operation does not apply: doc is missing path: \"/nope/deeper\": missing value",
            ),
            (
                json!([{"op": "add", "path": "/spec/list/7", "value": 1}]),
                "error in add for path: '/spec/list/7': Unable to access invalid index: 7: invalid index referenced",
            ),
            (
                json!([{"op": "move", "from": "/nope", "path": "/x"}]),
                "move operation does not apply: doc is missing from path: /nope: missing value",
            ),
            (json!([{"op": "add", "path": "", "value": {}}]), "add operation does not apply: doc is missing path: \"\": missing value"),
            (
                json!([{"op": "add", "path": "metadata", "value": {}}]),
                "add operation does not apply: doc is missing path: \"metadata\": missing value",
            ),
            (json!([{"op": "copy", "from": "", "path": "/x"}]), "copy operation does not apply: doc is missing from path: : missing value"),
            (json!([{"op": "move", "from": "", "path": "/x"}]), "move operation does not apply: doc is missing from path: : missing value"),
            (
                json!([{"op": "copy", "from": "metadata", "path": "/x"}]),
                "copy operation does not apply: doc is missing from path: metadata: missing value",
            ),
            (json!([{"op": "frobnicate", "path": "/x"}]), "Unexpected kind: frobnicate"),
            (json!([{"path": "/x"}]), "Unexpected kind: unknown"),
            (json!([{"op": "add", "value": 1}]), "add operation failed to decode path: missing value"),
        ];
        for (patch, message) in cases {
            let err = json_patch_result(doc.clone(), patch.clone()).unwrap_err();
            assert_eq!(err.to_string(), *message, "{patch}");
            assert_eq!(err.status_code(), 422, "{patch}");
        }
        // A failed operation leaves no trace: the result of an error is the error.
        let err = json_patch_result(
            doc.clone(),
            json!([
                {"op": "replace", "path": "/metadata/name", "value": "x"},
                {"op": "test", "path": "/metadata/name", "value": "web"}
            ]),
        )
        .unwrap_err();
        assert!(matches!(err, PatchError::JsonPatchFailed { operation: 1, .. }), "{err:?}");
    }

    #[test]
    fn json_patch_bodies_that_are_not_patches() {
        let doc = json!({});
        let err = json_patch_result(doc.clone(), json!({"op": "add"})).unwrap_err();
        assert_eq!(err.to_string(), "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
        assert_eq!(err.status_code(), 400);
        let err = json_patch_result(doc.clone(), json!(["add"])).unwrap_err();
        assert_eq!(err.to_string(), "json: cannot unmarshal string into Go value of type jsonpatch.Operation");
        let err = apply_patch(&doc, b"[{", PatchType::Json, &[]).unwrap_err();
        assert_eq!(err.status_code(), 400);
        let too_many: Vec<Value> = (0..=MAX_JSON_PATCH_OPERATIONS).map(|_| json!({"op": "test", "path": "", "value": {}})).collect();
        let err = json_patch_result(doc, Value::Array(too_many)).unwrap_err();
        assert_eq!(err.to_string(), "The allowed maximum operations in a JSON patch is 10000, got 10001");
        assert_eq!(err.status_code(), 413);
    }

    /// A document of `levels` nested objects `{"a": {"a": ... {}}}`.
    fn nested_objects(levels: usize) -> Value {
        (1..levels).fold(json!({}), |inner, _| json!({ "a": inner }))
    }

    /// A path through `levels` `a` keys, then `last`.
    fn nested_path(levels: usize, last: &str) -> String {
        format!("{}/{last}", "/a".repeat(levels))
    }

    #[test]
    fn json_patch_copies_are_bounded_as_upstream_bounds_them() {
        // Each copy doubles the document: 200 bytes would be 800 MB after 22 copies.
        let doc = json!({"d": {"v": "x".repeat(200)}});
        let operations: Vec<Value> = (0..22).map(|i| json!({"op": "copy", "from": "/d", "path": format!("/d/c{i}")})).collect();
        // What evanphx counts: each copied value as Go writes it (here as serde_json does too).
        let (mut simulated, mut accumulated) = (doc.clone(), 0u64);
        while accumulated <= MAX_JSON_PATCH_COPY_BYTES {
            let copied = simulated["d"].clone();
            accumulated += serde_json::to_string(&copied).unwrap().len() as u64;
            let key = format!("c{}", simulated["d"].as_object().unwrap().len() - 1);
            simulated["d"][key] = copied;
        }
        let err = json_patch_result(doc.clone(), Value::Array(operations)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("Unable to complete the copy, the accumulated size increase of copy is {accumulated}, exceeding the limit 3145728")
        );
        assert_eq!(err.status_code(), 422);
        assert!(matches!(err, PatchError::JsonPatchFailed { operation: 13, .. }), "{err:?}");
        // Copies within the limit are fine, and count across the whole patch.
        let operations: Vec<Value> = (0..13).map(|i| json!({"op": "copy", "from": "/d", "path": format!("/d/c{i}")})).collect();
        let got = json_patch_result(doc.clone(), Value::Array(operations)).unwrap();
        assert!(serde_json::to_string(&got).unwrap().len() < 2 * MAX_JSON_PATCH_COPY_BYTES as usize);
        // A copy that cannot apply fails as it would have, before anything is counted.
        let err = json_patch_result(doc, json!([{"op": "copy", "from": "/nope", "path": "/x"}])).unwrap_err();
        assert_eq!(err.to_string(), "copy operation does not apply: doc is missing from path: /nope: missing value");
    }

    #[test]
    fn copied_sizes_are_measured_as_go_writes_json() {
        let cases = [
            (json!(null), 4),
            (json!(false), 5),
            (json!(-12), 3),
            (json!(1.5), 3),
            (json!(-2.5), 4),
            (json!(123456789.0), 9),
            (json!(1e20), 21),
            (json!(1e21), 5),  // 1e+21
            (json!(1e100), 6), // 1e+100
            (json!(0.000001), 8),
            (json!(1.5e-7), 6), // 1.5e-7
            (json!(1e-10), 5),  // 1e-10
            (json!("<a&b>"), 22),
            (json!("é\n\"\u{1}\u{2028}"), 2 + 2 + 2 + 2 + 6 + 6),
            (json!([]), 2),
            (json!([1, [2], {}]), 10),
            (json!({"a": 1, "b<": [true]}), 24),
        ];
        for (value, bytes) in cases {
            assert_eq!(measure(&value).go_json_bytes, bytes, "{value}");
        }
        assert_eq!(measure(&json!(1)).depth, 0);
        assert_eq!(measure(&json!({"a": [1, {"b": []}], "c": {}})).depth, 4);
        assert_eq!(measure(&nested_objects(300)).depth, 300);
    }

    #[test]
    fn json_patches_cannot_nest_deeper_than_a_body_can() {
        let too_deep = |kind: &str| format!("{kind} operation does not apply: the patched object would be nested deeper than 127 levels");
        let doc = nested_objects(100);
        // A value 27 levels deep at the bottom of 100 makes 127: the result reads back.
        let fits =
            json_patch_result(doc.clone(), json!([{"op": "add", "path": nested_path(99, "x"), "value": nested_objects(27)}])).unwrap();
        assert_eq!(measure(&fits).depth, 127);
        serde_json::from_str::<Value>(&fits.to_string()).unwrap();
        for (operation, kind) in [
            (json!({"op": "add", "path": nested_path(99, "x"), "value": nested_objects(28)}), "add"),
            (json!({"op": "replace", "path": nested_path(98, "a"), "value": nested_objects(29)}), "replace"),
            (json!({"op": "copy", "from": "/a", "path": nested_path(99, "x")}), "copy"),
        ] {
            let err = json_patch_result(doc.clone(), json!([operation])).unwrap_err();
            assert_eq!(err.to_string(), too_deep(kind), "{operation}");
            assert_eq!(err.status_code(), 422);
        }
        // Moving a value down: judged by the document's depth and how far down it goes, then
        // (when that is too deep) by the moved value's own depth.
        let doc = json!({"deep": nested_objects(120), "b": nested_objects(10)});
        let got = json_patch_result(doc.clone(), json!([{"op": "move", "from": "/b", "path": format!("/deep{}", nested_path(115, "b"))}]))
            .unwrap();
        assert_eq!(measure(&got).depth, 127);
        let err = json_patch_result(doc.clone(), json!([{"op": "move", "from": "/b", "path": format!("/deep{}", nested_path(116, "b"))}]))
            .unwrap_err();
        assert_eq!(err.to_string(), too_deep("move"));
        let err = json_patch_result(doc.clone(), json!([{"op": "move", "from": "/deep", "path": "/b/a/a/a/a/a/a/x"}])).unwrap_err();
        assert_eq!(err.to_string(), too_deep("move"));
        json_patch_result(doc.clone(), json!([{"op": "move", "from": "/deep", "path": "/b/a/a/a/a/a/x"}])).unwrap();
        json_patch_result(doc, json!([{"op": "move", "from": "/deep/a/a", "path": "/up"}])).unwrap();
        let mut budget = 5;
        assert_eq!(depth_within(&json!([[1], {"a": 2}]), &mut budget), Some(2));
        assert_eq!(budget, 0);
        assert_eq!(depth_within(&json!([1]), &mut budget), None);
        // Copies of a value into itself, path after path: each doubles its depth, the third is
        // refused (no stack is blown on the way).
        let doc = json!({"a": nested_objects(30)});
        let operations = json!([
            {"op": "copy", "from": "/a", "path": nested_path(30, "a")},
            {"op": "copy", "from": "/a", "path": nested_path(60, "a")},
        ]);
        let got = json_patch_result(doc.clone(), operations.clone()).unwrap();
        assert_eq!(measure(&got).depth, 121);
        let mut operations = operations.as_array().unwrap().clone();
        operations.push(json!({"op": "copy", "from": "/a", "path": nested_path(120, "a")}));
        let err = json_patch_result(doc, Value::Array(operations)).unwrap_err();
        assert_eq!(err.to_string(), too_deep("copy"));
    }

    #[test]
    fn patch_bodies_nested_too_deep_are_syntax_errors() {
        let deep = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels)).into_bytes();
        let object = |levels: usize| format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels)).into_bytes();
        let original = json!({"a": 1});
        for patch_type in [PatchType::Json, PatchType::Merge, PatchType::StrategicMerge] {
            for body in [deep(100_000), object(100_000), object(128)] {
                let err = apply_patch(&original, &body, patch_type, MERGE_ITEM).unwrap_err();
                assert_eq!(err.status_code(), 400, "{patch_type:?}: {err}");
            }
        }
        // As deep as a body may be: merged without trouble.
        let patch = object(127);
        let deep_original: Value = serde_json::from_slice(&object(126)).unwrap();
        for patch_type in [PatchType::Merge, PatchType::StrategicMerge] {
            let got = apply_patch(&deep_original, &patch, patch_type, MERGE_ITEM).unwrap();
            assert_eq!(measure(&got).depth, 127, "{patch_type:?}");
        }
    }

    // -----------------------------------------------------------------------------------------
    // Merge patch

    #[test]
    fn merge_patch_cases() {
        let cases: &[(&str, Value, Value, Value)] = &[
            ("merges objects", json!({"a": {"b": 1, "c": 2}}), json!({"a": {"c": 3}}), json!({"a": {"b": 1, "c": 3}})),
            ("null deletes", json!({"a": 1, "b": 2}), json!({"a": null}), json!({"b": 2})),
            ("null for a missing key", json!({"a": 1}), json!({"z": null}), json!({"a": 1})),
            ("lists are replaced", json!({"l": [1, 2, 3]}), json!({"l": [4]}), json!({"l": [4]})),
            (
                "lists of objects are replaced, not merged",
                json!({"l": [{"name": "a", "x": 1}]}),
                json!({"l": [{"name": "a", "y": 2}]}),
                json!({"l": [{"name": "a", "y": 2}]}),
            ),
            (
                "new values lose their nulls, also in lists",
                json!({}),
                json!({"a": {"b": null, "c": [{"d": null, "e": 1}]}}),
                json!({"a": {"c": [{"e": 1}]}}),
            ),
            ("an object replacing a scalar loses its nulls", json!({"a": 1}), json!({"a": {"b": null, "c": 2}}), json!({"a": {"c": 2}})),
            ("a scalar replaces an object", json!({"a": {"b": 1}}), json!({"a": 2}), json!({"a": 2})),
            ("directives are plain keys", json!({"a": 1}), json!({"$patch": "delete"}), json!({"a": 1, "$patch": "delete"})),
            ("a list patch becomes the document", json!({"a": 1}), json!([{"b": null}]), json!([{}])),
        ];
        for (description, original, patch, expected) in cases {
            let got =
                apply_patch(original, patch.to_string().as_bytes(), PatchType::Merge, &[]).unwrap_or_else(|e| panic!("{description}: {e}"));
            assert_eq!(got, *expected, "{description}");
        }
    }

    #[test]
    fn merge_patch_bodies_that_are_not_patches() {
        for body in [&b"null"[..], b"3", b"\"x\"", b"{not json"] {
            let err = apply_patch(&json!({}), body, PatchType::Merge, &[]).unwrap_err();
            assert_eq!(err.to_string(), "Invalid JSON Patch");
            assert_eq!(err.status_code(), 400);
        }
        let err = apply_patch(&Value::Null, b"{}", PatchType::Merge, &[]).unwrap_err();
        assert_eq!(err.to_string(), "Invalid JSON Document");
    }

    // -----------------------------------------------------------------------------------------
    // Patch types, errors, Go renderings

    #[test]
    fn patch_types_from_content_types() {
        let cases = [
            ("application/json-patch+json", Some(PatchType::Json)),
            ("application/merge-patch+json", Some(PatchType::Merge)),
            ("application/strategic-merge-patch+json", Some(PatchType::StrategicMerge)),
            ("application/apply-patch+yaml", Some(PatchType::Apply)),
            ("application/merge-patch+json; charset=utf-8", Some(PatchType::Merge)),
            ("Application/JSON-Patch+JSON", Some(PatchType::Json)),
            ("application/json", None),
            ("application/apply-patch+cbor", None),
            ("", None),
        ];
        for (content_type, expected) in cases {
            assert_eq!(PatchType::from_content_type(content_type), expected, "{content_type}");
        }
        for patch_type in PatchType::ALL {
            assert_eq!(PatchType::from_content_type(patch_type.content_type()), Some(patch_type));
        }
    }

    #[test]
    fn apply_patches_are_recognised_but_not_served() {
        let err = apply_patch(&json!({}), b"kind: Pod", PatchType::Apply, &[]).unwrap_err();
        assert!(matches!(err, PatchError::ApplyNotSupported));
        assert_eq!(err.to_string(), "server-side apply (application/apply-patch+yaml) is not supported yet");
        assert_eq!(err.status_code(), 415);
    }

    #[test]
    fn status_codes_follow_upstream() {
        let cases = [
            (PatchError::BadPrimitiveListFormat, 400),
            (PatchError::BadRetainKeysFormat, 400),
            (PatchError::BadSetElementOrderFormat, 400),
            (PatchError::InvalidMergePatch, 400),
            (PatchError::ListOfLists, 422),
            (PatchError::NoMergeKey { map: "map[]".into(), key: "name".into() }, 500),
            (PatchError::MergeDirectiveInList, 500),
            (PatchError::InvalidDocument, 500),
        ];
        for (err, code) in cases {
            assert_eq!(err.status_code(), code, "{err}");
        }
    }

    #[test]
    fn go_renderings() {
        let cases = [
            (json!(null), "<nil>"),
            (json!(true), "true"),
            (json!(80), "80"),
            (json!(-3), "-3"),
            (json!(1.5), "1.5"),
            (json!(1.0), "1"),
            (json!(1e21), "1e+21"),
            (json!(1e6), "1e+06"),
            (json!(123456.0), "123456"),
            (json!(0.00001), "1e-05"),
            (json!("x y"), "x y"),
            (json!([1, "a", [2]]), "[1 a [2]]"),
            (json!({"b": {"d": 1}, "a": [1, 2], "$patch": "x"}), "map[$patch:x a:[1 2] b:map[d:1]]"),
        ];
        for (value, rendered) in cases {
            assert_eq!(go_format(&value), rendered, "{value}");
        }
        assert_eq!(go_type_name(&json!(1)), "int64");
        assert_eq!(go_type_name(&json!(1.5)), "float64");
        assert_eq!(go_type_name(&json!({})), "map[string]interface {}");
    }
}
