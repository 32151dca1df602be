//! Regenerates `src/` from the pinned specs when they are filled (`api-specs/fill`).
//!
//! The generation step belongs to this crate because it writes this crate's sources: Cargo runs
//! a crate's build script before compiling it, but compiles a dependency before its dependent's
//! build script. Files are written only when their content changes, so an unchanged generator
//! and unchanged specs cost nothing. Without filled specs (a fresh clone) the committed `src/`
//! is used as is. ARCHITECTURE.md discusses writing into the source tree from a build script.

use std::path::Path;

fn main() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = crate_dir.parent().expect("generated/ is inside the repository");
    println!("cargo:rerun-if-changed={}", repo.join("api-specs/VERSION").display());
    println!("cargo:rerun-if-env-changed=KAPI_SKIP_CODEGEN");
    if std::env::var_os("KAPI_SKIP_CODEGEN").is_some() {
        return;
    }
    let version = match kapi_codegen::pinned_version(repo) {
        Ok(v) => v,
        Err(e) => panic!("{e:#}"),
    };
    let spec = kapi_codegen::SpecDir::in_repo(repo, &version);
    if !spec.is_filled() {
        // Watch the existing api-specs/ so that filling it later triggers a run. (A path that
        // does not exist would rerun this script, and so recompile the crate, on every build.)
        println!("cargo:rerun-if-changed={}", repo.join("api-specs").display());
        return;
    }
    for input in spec.inputs().unwrap_or_else(|e| panic!("{e:#}")) {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    let files = kapi_codegen::generate(&spec).unwrap_or_else(|e| panic!("generating from {}: {e:#}", spec.root.display()));
    kapi_codegen::write_if_changed(&crate_dir.join("src"), &files).unwrap_or_else(|e| panic!("{e:#}"));
}
