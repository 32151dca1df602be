//! Upstream's round-trip fixtures (k8s.io/api testdata at the pinned tag): every kind in all three
//! encodings. Protobuf must re-encode byte-identical; JSON and YAML to the same JSON value; and
//! JSON decoded then encoded as protobuf must equal the protobuf fixture.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kapi_apimachinery::codec::{CodecError, Format, TypeMeta};

/// The kind a fixture's file name names (`apps.v1.Deployment`, core written `core`), which
/// stands in where the body carries none (WatchEvent), as upstream's round-trip test knows it.
fn kind_of(name: &str) -> TypeMeta {
    let (gv, kind) = name.rsplit_once('.').unwrap();
    let (group, version) = gv.rsplit_once('.').unwrap();
    let api_version = if group == "core" { version.to_owned() } else { format!("{group}/{version}") };
    TypeMeta { api_version, kind: kind.to_owned() }
}

/// The kind a fixture is of, as the registry names kinds.
fn registry_kind_of(name: &str) -> kapi::registry::objects::Kind {
    let tm = kind_of(name);
    let (group, version) = tm.group_version();
    kapi::registry::objects::Kind { group: group.to_owned(), version: version.to_owned(), kind: tm.kind }
}

fn fixtures_dir() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let version = std::fs::read_to_string(repo.join("api-specs/VERSION")).unwrap();
    let dir = repo.join(format!("api-specs/v{}/fixtures", version.trim()));
    assert!(dir.is_dir(), "fixtures missing: run `api-specs/fill` first ({})", dir.display());
    dir
}

/// Fixture base names (`apps.v1.Deployment`) with their three files.
fn fixtures() -> BTreeMap<String, [Vec<u8>; 3]> {
    let dir = fixtures_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let read = |ext: &str| std::fs::read(dir.join(format!("{n}.{ext}"))).unwrap();
            let files = [read("json"), read("yaml"), read("pb")];
            (n, files)
        })
        .collect()
}

fn json_value(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

fn yaml_value(bytes: &[u8]) -> serde_json::Value {
    serde_yaml_ng::from_slice(bytes).unwrap()
}

#[test]
fn upstream_fixtures_round_trip() {
    let all = fixtures();
    let total = all.len();
    let mut failures: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut passed: BTreeMap<&str, usize> = BTreeMap::new();
    let mut record = |form: &'static str, name: &str, result: Result<(), String>| match result {
        Ok(()) => *passed.entry(form).or_default() += 1,
        Err(e) => failures.entry(form).or_default().push(format!("{name}: {e}")),
    };
    for (name, [json, yaml, pb]) in &all {
        let kind = kind_of(name);
        let convert = |bytes: &[u8], from: Format, to: Format| -> Result<Vec<u8>, CodecError> {
            let out = kapi::convert::convert(bytes, Some(from), to, Some(&kind))?;
            // The fixture's kind is the kind decoded, not just a kind that happens to parse.
            let tm = kapi_apimachinery::codec::peek_type_meta(to, &out, Some(&kind))?;
            assert_eq!(tm, kind, "{name}: decoded as another kind");
            Ok(out)
        };
        record(
            "protobuf",
            name,
            convert(pb, Format::Protobuf, Format::Protobuf)
                .map_err(|e| e.to_string())
                .and_then(|out| if out == *pb { Ok(()) } else { Err(first_difference(pb, &out)) }),
        );
        record(
            "json",
            name,
            convert(json, Format::Json, Format::Json)
                .map_err(|e| e.to_string())
                .and_then(|out| if json_value(&out) == json_value(json) { Ok(()) } else { Err("JSON value differs".into()) }),
        );
        record(
            "yaml",
            name,
            convert(yaml, Format::Yaml, Format::Yaml)
                .map_err(|e| e.to_string())
                .and_then(|out| if yaml_value(&out) == yaml_value(yaml) { Ok(()) } else { Err("YAML value differs".into()) }),
        );
        record(
            "json→protobuf",
            name,
            convert(json, Format::Json, Format::Protobuf)
                .map_err(|e| e.to_string())
                .and_then(|out| if out == *pb { Ok(()) } else { Err(first_difference(pb, &out)) }),
        );
    }
    for form in ["protobuf", "json", "yaml", "json→protobuf"] {
        println!("{form}: {}/{total}", passed.get(form).copied().unwrap_or(0));
    }
    assert_eq!(total, 185, "expected upstream's 185 fixture kinds");
    if !failures.is_empty() {
        let report: Vec<String> = failures.iter().map(|(form, f)| format!("{form}: {} failed\n  {}", f.len(), f.join("\n  "))).collect();
        panic!("{}", report.join("\n"));
    }
}

/// Upstream's fixtures fill every field of their kind, so strict decoding finds no unknown
/// field in any of them (zero values included), and finds a key planted at the top and one
/// planted in the object's metadata.
#[test]
fn upstream_fixtures_have_no_unknown_fields() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, [json, _, _]) in &fixtures() {
        let kind = registry_kind_of(name);
        if kapi::registry::objects::fields(&kind).is_none() {
            continue;
        }
        checked += 1;
        let unknown = kapi::registry::objects::strict_errors(&kind, json).unwrap();
        if !unknown.is_empty() {
            failures.push(format!("{name}: {unknown:?}"));
        }
        let mut planted = json_value(json);
        planted["plantedTop"] = serde_json::json!(false);
        let with_metadata = planted["metadata"].is_object();
        if with_metadata {
            planted["metadata"]["plantedMeta"] = serde_json::Value::Null;
        }
        let unknown: Vec<String> = kapi::registry::objects::strict_errors(&kind, &serde_json::to_vec(&planted).unwrap())
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        let want: &[&str] = if with_metadata {
            &[r#"unknown field "metadata.plantedMeta""#, r#"unknown field "plantedTop""#]
        } else {
            &[r#"unknown field "plantedTop""#]
        };
        let mut got: Vec<&str> = unknown.iter().map(String::as_str).collect();
        got.sort_unstable();
        if got != want {
            failures.push(format!("{name} with planted keys: {unknown:?}"));
        }
    }
    assert!(checked > 150, "only {checked} fixtures have generated fields");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn first_difference(want: &[u8], got: &[u8]) -> String {
    let at = want.iter().zip(got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
    let window = |b: &[u8]| b[at.saturating_sub(8)..(at + 16).min(b.len())].to_vec();
    format!(
        "bytes differ at offset {at} (want {} bytes, got {}): want …{:02x?}… got …{:02x?}…",
        want.len(),
        got.len(),
        window(want),
        window(got)
    )
}

/// Truncated or corrupted protobuf and JSON never panic the decoder: each is an error or, where
/// the cut happens to leave a valid prefix, some object.
#[test]
fn damaged_fixtures_are_errors_not_panics() {
    let all = fixtures();
    let mut errors = 0usize;
    for (name, [json, _, pb]) in all.iter().step_by(3) {
        let kind = kind_of(name);
        for cut in [5, pb.len() / 3, pb.len() / 2, pb.len() - 1] {
            errors += usize::from(kapi::convert::convert(&pb[..cut], Some(Format::Protobuf), Format::Json, Some(&kind)).is_err());
        }
        let mut flipped = pb.clone();
        for i in (6..flipped.len()).step_by(7) {
            flipped[i] ^= 0x5a;
        }
        let _ = kapi::convert::convert(&flipped, Some(Format::Protobuf), Format::Json, Some(&kind));
        errors += usize::from(kapi::convert::convert(&json[..json.len() / 2], Some(Format::Json), Format::Protobuf, Some(&kind)).is_err());
    }
    // A cut at 5 bytes always leaves an incomplete envelope.
    assert!(errors >= all.len().div_ceil(3), "only {errors} damaged inputs were rejected");
}

/// The typed write path (a request's generated object, its metadata set in place, encoded
/// as it is) stores the bytes the JSON path (the same object as JSON, its metadata set there,
/// read into the generated type to be encoded) stores, for upstream's fixture of every kind
/// that is stored as it is decoded: their fields are all set, with arbitrary values.
#[test]
fn typed_and_json_write_paths_store_the_same_bytes() {
    use kapi::registry::object::{Form, MetaChange, Object};
    use kapi::registry::objects;
    let stored_kinds: std::collections::BTreeSet<(&str, &str, &str)> =
        kapi_api::scheme::STORAGE_VERSIONS.iter().map(|(_, _, gvk)| (gvk.group, gvk.version, gvk.kind)).collect();
    let mut compared = 0;
    let mut failures = Vec::new();
    for (name, [json, _, _]) in &fixtures() {
        let kind = registry_kind_of(name);
        if !stored_kinds.contains(&(kind.group.as_str(), kind.version.as_str(), kind.kind.as_str())) || !objects::stores_as_decoded(&kind) {
            continue;
        }
        for keep_managed_fields in [true, false] {
            let mut typed = Object::decode(&kind, Format::Json, json).unwrap();
            let mut value = Object::from_value(objects::decode_defaulted(&kind, Format::Json, json).unwrap());
            let mut changes = vec![
                MetaChange::Name("renamed"),
                MetaChange::Namespace(Some("ns")),
                MetaChange::Uid("6a1c5b3e-0000-4000-8000-000000000001"),
                MetaChange::CreationTimestamp("2026-11-28T12:00:00.75Z".parse().unwrap()),
                MetaChange::Generation(Some(3)),
                MetaChange::NoResourceVersion,
            ];
            if !keep_managed_fields {
                changes.push(MetaChange::NoManagedFields);
            }
            typed.set_meta(&changes);
            value.set_meta(&changes);
            assert!(typed.is_typed(), "{name}");
            let view = typed.value().unwrap().clone();
            let Form::Typed(typed) = typed.into_form() else { panic!("{name}: no longer typed") };
            let (typed_bytes, _) = objects::encode_typed_with(&kind, typed, None).unwrap();
            let value = value.into_value().unwrap();
            if view != value {
                failures.push(format!("{name}: the typed object's JSON differs from the JSON path's"));
            }
            let (json_bytes, _) = objects::encode_internal_with(&kind, value, None).unwrap();
            if typed_bytes != json_bytes {
                failures
                    .push(format!("{name} (managed fields kept: {keep_managed_fields}): {}", first_difference(&json_bytes, &typed_bytes)));
            }
            compared += 1;
        }
    }
    println!("compared {compared} encodings");
    // Two per kind: 41 kinds at v1.36 (the others are stored in another version, or
    // converted through a hub, and go the JSON way).
    assert!(compared >= 80, "only {compared} encodings compared");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A kind served in several versions is carried as its hub value, converted from the typed
/// object a request decoded to (or the storage version's, read from protobuf) after putting it
/// in its Go form (`Walk::canonicalize`). That hub must be the one converting the object's JSON
/// gives, which is what the internal object was before: checked on upstream's fixture of every
/// such kind and on variants of it with each field removed, set to its zero value, or (a time)
/// given a fraction of a second, the forms a request or a stored object may take.
#[test]
fn hub_values_from_typed_objects_are_those_their_json_converts_to() {
    use kapi::registry::object::Object;
    use kapi::registry::objects;
    let (mut compared, mut failures) = (0, Vec::new());
    for (name, [json, _, _]) in &fixtures() {
        let kind = registry_kind_of(name);
        let Some(dyn_kind) = objects::dyn_kind(&kind).filter(|typed| !typed.internal_is_external()) else { continue };
        for variant in field_variants(&json_value(json)) {
            let Ok(external) = Object::decode(&kind, Format::Json, &serde_json::to_vec(&variant).unwrap()) else { continue };
            let through_json = objects::to_internal(&kind, external.value().unwrap().clone()).unwrap();
            let direct = external.into_hub(dyn_kind).unwrap().to_value().unwrap();
            compared += 1;
            if direct != through_json {
                failures.push(format!(
                    "{name}, request: {}",
                    first_difference(&serde_json::to_vec(&through_json).unwrap(), &serde_json::to_vec(&direct).unwrap())
                ));
            }
            // As an update reads it back: the storage version's object, decoded from protobuf.
            let (stored, _) = objects::encode_internal_with(&kind, through_json, None).unwrap();
            let decoded = objects::decode_stored_typed(&stored).unwrap();
            let through_json = objects::to_internal(&decoded.kind, decoded.value).unwrap();
            let Some(typed) = decoded.typed else { continue };
            let direct = typed.into_hub().to_value().unwrap();
            compared += 1;
            if direct != through_json {
                failures.push(format!(
                    "{name}, stored: {}",
                    first_difference(&serde_json::to_vec(&through_json).unwrap(), &serde_json::to_vec(&direct).unwrap())
                ));
            }
        }
    }
    assert!(compared > 10_000, "only {compared} objects compared");
    assert!(failures.is_empty(), "{} of {compared} differ:\n{}", failures.len(), failures.join("\n"));
}

/// What the store compares an update with the stored object by: specs (the generation) and
/// statuses, as the generated or hub types hold them (`Object::spec_equals`,
/// `status_equals`). Each must answer as comparing the JSON forms does, for every kind's
/// fixture read back from protobuf (as an update reads the stored object) against each variant
/// of its spec or status a request may send (`field_variants`, a sample of each kind's).
#[test]
fn typed_parts_compare_as_their_json_forms() {
    use kapi::registry::object::{Form, Object};
    use kapi::registry::objects;
    let (mut compared, mut failures) = (0, Vec::new());
    for (name, [json, _, _]) in &fixtures() {
        let kind = registry_kind_of(name);
        let Some(dyn_kind) = objects::dyn_kind(&kind) else { continue };
        let original = json_value(json);
        let Ok(decoded) = Object::decode(&kind, Format::Json, json) else { continue };
        // Both sides in the form the store carries them in: the hub value of a kind served in
        // several versions, else the generated object.
        let carried = |object: Object, protobuf: bool| -> Option<Object> {
            let Form::Typed(mut typed) = object.into_form() else { panic!("{name}: not decoded as its type") };
            if protobuf {
                typed = dyn_kind.decode(Format::Protobuf, &typed.encode(Format::Protobuf).ok()?).ok()?;
            }
            Some(match dyn_kind.internal_is_external() {
                true => {
                    let json = typed.to_value().unwrap();
                    Object::typed(dyn_kind, typed, json)
                }
                false => Object::hub(typed.into_hub()),
            })
        };
        let Some(old) = carried(decoded, true) else { continue };
        let old_json = old.value().unwrap().clone();
        // Of the variants of the spec and status, 25 spread over each kind's (all of them take
        // ten minutes in a debug build).
        let variants: Vec<_> = field_variants(&original)
            .into_iter()
            .filter(|variant| variant.get("spec") != original.get("spec") || variant.get("status") != original.get("status"))
            .collect();
        for variant in variants.iter().step_by(variants.len().div_ceil(25).max(1)) {
            let Ok(new) = Object::decode(&kind, Format::Json, &serde_json::to_vec(&variant).unwrap()) else { continue };
            let new = carried(new, false).unwrap();
            let new_json = new.value().unwrap();
            for (part, typed) in [("spec", new.spec_equals(&old).unwrap()), ("status", new.status_equals(&old).unwrap())] {
                compared += 1;
                if typed != (new_json.get(part) == old_json.get(part)) {
                    failures.push(format!("{name}: {part} typed {typed}, JSON {}: {variant}", !typed));
                }
            }
        }
    }
    assert!(compared > 3_000, "only {compared} parts compared");
    assert!(failures.is_empty(), "{} of {compared} differ:\n{}", failures.len(), failures.join("\n"));
}

/// The object itself, and for each field below the top (not `apiVersion` or `kind`) the
/// object without it, with it set to its type's zero JSON value, and, for an RFC 3339 time at
/// second precision, with a fraction added.
fn field_variants(object: &serde_json::Value) -> Vec<serde_json::Value> {
    use serde_json::{Map, Value, json};
    fn paths(value: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match value {
            Value::Object(fields) => {
                for (key, child) in fields {
                    path.push(key.clone());
                    out.push(path.clone());
                    paths(child, path, out);
                    path.pop();
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    path.push(i.to_string());
                    paths(child, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    fn parent<'v>(value: &'v mut Value, path: &[String]) -> Option<&'v mut Map<String, Value>> {
        let mut at = value;
        for key in &path[..path.len() - 1] {
            at = match key.parse::<usize>() {
                Ok(i) => at.get_mut(i)?,
                Err(_) => at.get_mut(key.as_str())?,
            };
        }
        at.as_object_mut()
    }
    let mut all = Vec::new();
    paths(object, &mut Vec::new(), &mut all);
    let mut out = vec![object.clone()];
    let mut with = |path: &[String], change: &dyn Fn(&mut Map<String, Value>, &str)| {
        let mut variant = object.clone();
        if let Some(fields) = parent(&mut variant, path) {
            change(fields, path.last().unwrap());
            out.push(variant);
        }
    };
    for path in all.iter().filter(|path| path[0] != "apiVersion" && path[0] != "kind") {
        let Some(value) = parent(&mut object.clone(), path).and_then(|fields| fields.get(path.last().unwrap()).cloned()) else { continue };
        with(path, &|fields, key| {
            fields.remove(key);
        });
        let zero = match &value {
            Value::Object(_) => json!({}),
            Value::Array(_) => json!([]),
            Value::String(_) => json!(""),
            Value::Number(_) => json!(0),
            Value::Bool(_) => json!(false),
            Value::Null => continue,
        };
        with(path, &|fields, key| {
            fields.insert(key.to_owned(), zero.clone());
        });
        if let Value::String(time) = &value
            && time.len() == 20
            && time.ends_with('Z')
            && time.as_bytes()[10] == b'T'
        {
            let fraction = format!("{}.5Z", &time[..19]);
            with(path, &|fields, key| {
                fields.insert(key.to_owned(), Value::String(fraction.clone()));
            });
        }
    }
    out
}
