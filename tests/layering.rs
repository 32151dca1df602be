//! The crate's layers import downward only (ARCHITECTURE.md, "Layers"): I/O-free building
//! blocks, then storage, then the registry, then the in-process controllers, then the server
//! (endpoints, filters and what wires them). This test reads every source file and fails on a
//! `crate::` path that reaches a higher layer, naming the file and the path.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layer of a top-level module of `src/`; `None` for the crate root and the binary.
fn layer(module: &str) -> Option<u8> {
    Some(match module {
        "status" | "selectors" | "patch" | "list_options" | "negotiation" | "request_info" | "tables" | "convert" | "discovery"
        | "openapi_v2" => 0,
        "storage" => 1,
        "registry" => 2,
        "controllers" => 3,
        "server" | "pki" | "private_files" => 4,
        _ => return None,
    })
}

const LAYER_NAMES: [&str; 5] = ["building blocks", "storage", "registry", "controllers", "server"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a line's code (comments left out) names with `crate::`.
fn crate_paths(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or_default();
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                found.push(name);
            }
        } else {
            found.push(rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
        }
    }
    found
}

#[test]
fn layers_import_downward_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = BTreeSet::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let module = relative.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned();
        let Some(own) = layer(&module) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for used in crate_paths(line) {
                let theirs = layer(&used)
                    .unwrap_or_else(|| panic!("{}:{}: crate::{used} is in no layer: add it to `layer`", relative.display(), n + 1));
                if theirs > own {
                    violations.insert(format!(
                        "{}:{}: the {} layer uses crate::{used} from the {} layer",
                        relative.display(),
                        n + 1,
                        LAYER_NAMES[own as usize],
                        LAYER_NAMES[theirs as usize]
                    ));
                }
            }
        }
    }
    assert!(violations.is_empty(), "layering violations:\n{}", violations.into_iter().collect::<Vec<_>>().join("\n"));
}

#[test]
fn the_scanner_sees_grouped_and_nested_paths() {
    assert_eq!(crate_paths("use crate::{status::ApiError, storage};"), ["status", "storage"]);
    assert_eq!(crate_paths("let x = crate::registry::strategy(g, r); // crate::server"), ["registry"]);
}
