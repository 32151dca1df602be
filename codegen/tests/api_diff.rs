//! `kapi-codegen diff`: the API changelog between two filled spec versions, checked against
//! what the two swagger.json files say, read here without the generator.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn specs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("codegen/ is inside the repository").join("api-specs")
}

fn swagger(version: &str) -> serde_json::Value {
    let path = specs().join(format!("v{version}/openapi/swagger.json"));
    assert!(path.is_file(), "{} missing: run `api-specs/fill {version}` first", path.display());
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// Kinds with a list operation in one swagger.json (`apps/v1 Deployment`), computed
/// independently of the generator.
fn listed_kinds(version: &str) -> BTreeSet<String> {
    let doc = swagger(version);
    let mut out = BTreeSet::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            if op["x-kubernetes-action"] != "list" {
                continue;
            }
            let gvk = &op["x-kubernetes-group-version-kind"];
            let (g, v, k) = (gvk["group"].as_str().unwrap(), gvk["version"].as_str().unwrap(), gvk["kind"].as_str().unwrap());
            out.insert(if g.is_empty() { format!("{v} {k}") } else { format!("{g}/{v} {k}") });
        }
    }
    out
}

/// Group-versions with paths in one swagger.json, computed independently of the generator.
fn served_group_versions(version: &str) -> BTreeSet<String> {
    let doc = swagger(version);
    doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .filter_map(|p| {
            let segs: Vec<&str> = p.trim_matches('/').split('/').collect();
            match segs.as_slice() {
                ["api", v, ..] => Some((*v).to_owned()),
                ["apis", g, v, ..] => Some(format!("{g}/{v}")),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn api_diff_lists_what_changed() {
    let out = Command::new(env!("CARGO_BIN_EXE_kapi-codegen")).args(["diff", "1.35.0", "1.36.0"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let (old, new) = (served_group_versions("1.35.0"), served_group_versions("1.36.0"));
    let added: Vec<&String> = new.difference(&old).collect();
    let removed: Vec<&String> = old.difference(&new).collect();
    assert!(!added.is_empty() || !removed.is_empty(), "expected the specs to differ in group versions");
    let section = |title: &str| -> String {
        let start = text.find(title).unwrap_or_else(|| panic!("no section {title}:\n{text}"));
        let rest = &text[start..];
        rest[..rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3)].to_owned()
    };
    for gv in added {
        assert!(section("## Group versions added").contains(&format!("- {gv}\n")), "{gv} not listed as added");
    }
    for gv in removed {
        assert!(section("## Group versions removed").contains(&format!("- {gv}\n")), "{gv} not listed as removed");
    }
    let (old_kinds, new_kinds) = (listed_kinds("1.35.0"), listed_kinds("1.36.0"));
    let kinds_added: Vec<&String> = new_kinds.difference(&old_kinds).collect();
    assert!(!kinds_added.is_empty(), "expected kinds added between the versions");
    for k in kinds_added {
        assert!(section("## Kinds added").contains(&format!("- {k}\n")), "{k} not listed as added");
    }
    for k in old_kinds.difference(&new_kinds) {
        assert!(section("## Kinds removed").contains(&format!("- {k}\n")), "{k} not listed as removed");
    }
    assert!(text.contains("## Field changes in kinds served by both"));
}
