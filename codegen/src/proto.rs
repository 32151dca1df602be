//! Reading the protobuf definitions (`generated.proto`) without `protoc`.
//!
//! `protox` compiles the `.proto` files to descriptors in-process. We keep only what the join
//! needs: per message its fields (name, number, type) and the comments upstream writes above
//! each message and field (the docs of types the OpenAPI document does not describe).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use prost_types::field_descriptor_proto::{Label, Type};

/// A protobuf message, keyed in [`ProtoSet::messages`] by its full name without the leading dot
/// (`k8s.io.api.core.v1.Pod`).
#[derive(Debug, Clone)]
pub struct Message {
    pub package: String,
    pub name: String,
    pub doc: String,
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub number: u32,
    pub doc: String,
    pub kind: FieldKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Single(Scalar),
    Repeated(Scalar),
    /// `map<string, V>`; upstream only has string keys.
    Map(Scalar),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    String,
    Bytes,
    Int32,
    Int64,
    Bool,
    Double,
    /// A message type by full name without the leading dot.
    Message(String),
}

#[derive(Debug, Default)]
pub struct ProtoSet {
    pub messages: BTreeMap<String, Message>,
}

/// Every file below `root` whose name ends in `.<extension>` (`generated.proto` files, the Go
/// sources), relative to `root`, sorted.
pub fn find_files(root: &Path, extension: &str) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == extension) {
                out.push(path.strip_prefix(root)?.to_path_buf());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Compiles every `.proto` file under `root` (which is also the import root).
pub fn load(root: &Path) -> Result<ProtoSet> {
    let files = find_files(root, "proto")?;
    if files.is_empty() {
        bail!("no .proto files under {}", root.display());
    }
    let mut compiler = protox::Compiler::new([root]).with_context(|| format!("setting up the proto compiler for {}", root.display()))?;
    compiler.include_source_info(true).include_imports(true);
    compiler.open_files(&files).map_err(|e| anyhow::anyhow!("compiling protos under {}: {e}", root.display()))?;
    let set = compiler.file_descriptor_set();

    let mut out = ProtoSet::default();
    for file in set.file {
        let package = file.package().to_owned();
        let comments = comments_by_path(&file);
        for (mi, msg) in file.message_type.iter().enumerate() {
            let map_entries: BTreeMap<String, Scalar> = msg
                .nested_type
                .iter()
                .filter(|n| n.options.as_ref().is_some_and(|o| o.map_entry()))
                .map(|n| {
                    let value = n.field.iter().find(|f| f.number() == 2).expect("map entry value");
                    (format!(".{package}.{}.{}", msg.name(), n.name()), scalar_of(value))
                })
                .collect();
            if msg.nested_type.iter().any(|n| !n.options.as_ref().is_some_and(|o| o.map_entry())) {
                bail!("{package}.{}: nested messages other than map entries are not supported", msg.name());
            }
            let mut fields = Vec::new();
            for (fi, f) in msg.field.iter().enumerate() {
                if f.oneof_index.is_some() {
                    bail!("{package}.{}.{}: oneof fields are not supported", msg.name(), f.name());
                }
                let scalar = scalar_of(f);
                let kind = match (f.label(), &scalar) {
                    (Label::Repeated, Scalar::Message(m)) if map_entries.contains_key(&format!(".{m}")) => {
                        FieldKind::Map(map_entries[&format!(".{m}")].clone())
                    }
                    (Label::Repeated, _) => FieldKind::Repeated(scalar),
                    _ => FieldKind::Single(scalar),
                };
                fields.push(Field {
                    name: f.name().to_owned(),
                    number: u32::try_from(f.number()).context("negative field number")?,
                    doc: comments.get(&vec![4, mi as i32, 2, fi as i32]).cloned().unwrap_or_default(),
                    kind,
                });
            }
            let full = format!("{package}.{}", msg.name());
            out.messages.insert(
                full,
                Message {
                    package: package.clone(),
                    name: msg.name().to_owned(),
                    doc: comments.get(&vec![4, mi as i32]).cloned().unwrap_or_default(),
                    fields,
                },
            );
        }
    }
    Ok(out)
}

fn scalar_of(f: &prost_types::FieldDescriptorProto) -> Scalar {
    match f.r#type() {
        Type::String => Scalar::String,
        Type::Bytes => Scalar::Bytes,
        Type::Int32 => Scalar::Int32,
        Type::Int64 => Scalar::Int64,
        Type::Bool => Scalar::Bool,
        Type::Double => Scalar::Double,
        Type::Message => Scalar::Message(f.type_name().trim_start_matches('.').to_owned()),
        other => panic!("field {}: proto type {other:?} does not occur in Kubernetes' protos", f.name()),
    }
}

/// Leading comments by source path, with the `//` markers and the common indent removed.
fn comments_by_path(file: &prost_types::FileDescriptorProto) -> BTreeMap<Vec<i32>, String> {
    let mut out = BTreeMap::new();
    let Some(info) = &file.source_code_info else { return out };
    for loc in &info.location {
        if let Some(c) = &loc.leading_comments {
            let text: Vec<&str> = c.lines().map(|l| l.strip_prefix(' ').unwrap_or(l)).collect();
            out.insert(loc.path.clone(), text.join("\n").trim().to_owned());
        }
    }
    out
}
