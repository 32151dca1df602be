//! kapi's generator: Kubernetes specs in, Rust API types, scheme and route table out.
//!
//! The pipeline (ARCHITECTURE.md has the picture):
//! 1. [`openapi::load`] reads `swagger.json` into the `openapiv3` model (v2 normalised to v3);
//! 2. [`proto::load`] compiles every `generated.proto` with `protox` (no `protoc`);
//! 3. [`model::build`] joins them per definition into one typed model, applying the named quirks
//!    in [`fixups`] and the facts in `data/scheme.toml` ([`data`]);
//! 4. [`emit::render`] renders the model through the askama templates in `templates/`;
//! 5. [`write_if_changed`] writes only files whose content differs, and [`check`] compares
//!    in memory (the staleness test).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

pub mod convert;
pub mod data;
pub mod diff;
pub mod emit;
pub mod fixups;
pub mod gosrc;
pub mod model;
pub mod naming;
pub mod openapi;
pub mod proto;
pub mod routes;

/// Where one version's spec files live: `api-specs/v<version>/`.
#[derive(Debug, Clone)]
pub struct SpecDir {
    pub version: String,
    pub root: PathBuf,
}

impl SpecDir {
    /// `api-specs/v<version>` under the repository root.
    pub fn in_repo(repo: &Path, version: &str) -> Self {
        Self { version: version.to_owned(), root: repo.join("api-specs").join(format!("v{version}")) }
    }

    pub fn swagger(&self) -> PathBuf {
        self.root.join("openapi/swagger.json")
    }

    pub fn proto_root(&self) -> PathBuf {
        self.root.join("proto")
    }

    /// Upstream's Go sources of the same packages (pointer or value, `omitempty`, `omitzero`).
    pub fn go_root(&self) -> PathBuf {
        self.root.join("go")
    }

    /// Whether the spec files are there (they are git-ignored; `api-specs/fill` fetches them).
    pub fn is_filled(&self) -> bool {
        self.swagger().is_file() && self.proto_root().is_dir() && self.go_root().is_dir()
    }

    /// Every input file, for `cargo:rerun-if-changed`.
    pub fn inputs(&self) -> Result<Vec<PathBuf>> {
        let mut out = vec![self.swagger()];
        for p in proto::find_files(&self.proto_root(), "proto")? {
            out.push(self.proto_root().join(p));
        }
        for p in proto::find_files(&self.go_root(), "go")? {
            out.push(self.go_root().join(p));
        }
        Ok(out)
    }
}

/// The version `api-specs/VERSION` pins (the one the build generates from).
pub fn pinned_version(repo: &Path) -> Result<String> {
    let path = repo.join("api-specs/VERSION");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text.trim().to_owned())
}

/// Loads and joins the specs of the pinned version; `data/scheme.toml` must match them.
pub fn load_model(spec: &SpecDir) -> Result<model::Model> {
    load(spec, true)
}

/// Loads and joins the specs of any version (for comparisons): `data/scheme.toml` describes the
/// pinned version, so facts that do not fit another version are skipped rather than errors.
pub fn load_other_model(spec: &SpecDir) -> Result<model::Model> {
    load(spec, false)
}

fn load(spec: &SpecDir, strict_data: bool) -> Result<model::Model> {
    if !spec.is_filled() {
        bail!("the specs for {} are not in {}: run `api-specs/fill {}` first", spec.version, spec.root.display(), spec.version);
    }
    let openapi = openapi::load(&spec.swagger())?;
    let protos = proto::load(&spec.proto_root())?;
    let go = gosrc::load(&spec.go_root())?;
    let data = data::load()?;
    model::build(&model::Inputs { spec_version: &spec.version, strict_data, openapi: &openapi, protos: &protos, go: &go, data: &data })
}

/// Generates every file of the `generated/` crate's `src/`, in memory.
pub fn generate(spec: &SpecDir) -> Result<BTreeMap<String, String>> {
    let model = load_model(spec)?;
    // A missing hand-written conversion fails here with the kind and field it converts (the
    // compiler would fail too, naming only the function).
    let manual = Path::new(env!("CARGO_MANIFEST_DIR")).join("../generated/manual");
    if manual.is_dir() {
        convert::check_manual(&convert::plan(&model)?, &manual)?;
    }
    emit::render(&model)
}

/// Writes `files` under `out_dir`, touching only files whose content changed, and removes
/// generated files that are no longer produced. Returns the paths written.
pub fn write_if_changed(out_dir: &Path, files: &BTreeMap<String, String>) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (rel, content) in files {
        let path = out_dir.join(rel);
        if std::fs::read_to_string(&path).is_ok_and(|old| old == *content) {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    for stale in existing_generated(out_dir)? {
        let rel = stale.strip_prefix(out_dir)?.to_string_lossy().replace('\\', "/");
        if !files.contains_key(&rel) {
            std::fs::remove_file(&stale).with_context(|| format!("removing {}", stale.display()))?;
            written.push(stale);
        }
    }
    Ok(written)
}

/// Compares `files` with what is under `out_dir`; an error lists every difference with a diff.
pub fn check(out_dir: &Path, files: &BTreeMap<String, String>) -> Result<()> {
    let mut problems = Vec::new();
    for (rel, content) in files {
        let path = out_dir.join(rel);
        match std::fs::read_to_string(&path) {
            Ok(old) if old == *content => {}
            Ok(old) => {
                let diff = similar::TextDiff::from_lines(&old, content);
                let text = diff.unified_diff().context_radius(2).header(rel, rel).to_string();
                let short: String = text.lines().take(40).collect::<Vec<_>>().join("\n");
                problems.push(format!("{rel} is stale:\n{short}"));
            }
            Err(_) => problems.push(format!("{rel} is missing")),
        }
    }
    for stale in existing_generated(out_dir)? {
        let rel = stale.strip_prefix(out_dir)?.to_string_lossy().replace('\\', "/");
        if !files.contains_key(&rel) {
            problems.push(format!("{rel} is no longer generated"));
        }
    }
    if !problems.is_empty() {
        bail!(
            "generated/ is not what the generator produces ({} files differ); run `cargo build` with \
             api-specs filled (`api-specs/fill`) and commit the result:\n{}",
            problems.len(),
            problems.join("\n")
        );
    }
    Ok(())
}

/// Files under `out_dir` that carry the generated header.
fn existing_generated(out_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![out_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && std::fs::read_to_string(&path).is_ok_and(|t| t.starts_with("// @generated by kapi-codegen"))
            {
                out.push(path);
            } else if path.extension().is_some_and(|e| e == "json") && path.parent().is_some_and(|p| p.ends_with("openapi")) {
                // The OpenAPI documents (JSON has no comments to carry the header).
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}
