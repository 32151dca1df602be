//! `cargo run -p kapi-codegen -- [--check] [--version V --out DIR]`: regenerate
//! `generated/src` from the pinned specs (what `cargo build` also does when the specs changed),
//! check it is current, or generate another filled version elsewhere to review an upgrade
//! (`--version 1.35.0 --out /tmp/v135`, then diff against `generated/src`).
//!
//! `cargo run -p kapi-codegen -- diff OLD NEW [--specs DIR]`: what changed in the API between
//! two versions filled in `api-specs/` (see `api-specs/fill`), as a Markdown changelog.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let check = args.iter().any(|a| a == "--check");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("codegen/ is inside the repository");
    if args.first().map(String::as_str) == Some("diff") {
        let (Some(old), Some(new)) = (args.get(1).filter(|a| !a.starts_with("--")), args.get(2).filter(|a| !a.starts_with("--"))) else {
            bail!("usage: kapi-codegen diff OLD NEW [--specs DIR] (e.g. diff 1.35.0 1.36.0)");
        };
        let specs = value("--specs").map_or_else(|| repo.join("api-specs"), PathBuf::from);
        let load = |version: &str| {
            let dir = kapi_codegen::SpecDir { version: version.to_owned(), root: specs.join(format!("v{version}")) };
            kapi_codegen::load_other_model(&dir).with_context(|| format!("loading the v{version} specs from {}", dir.root.display()))
        };
        let (old, new) = (load(old)?, load(new)?);
        print!("{}", kapi_codegen::diff::diff(&old, &new).render());
        return Ok(());
    }
    let pinned = kapi_codegen::pinned_version(repo)?;
    let version = value("--version").unwrap_or_else(|| pinned.clone());
    let out = match value("--out") {
        Some(dir) => PathBuf::from(dir),
        None if version != pinned => bail!("--version {version} is not the pinned {pinned}: give --out DIR"),
        None => repo.join("generated/src"),
    };
    let spec = kapi_codegen::SpecDir::in_repo(repo, &version);
    let start = Instant::now();
    let model = if version == pinned { kapi_codegen::load_model(&spec)? } else { kapi_codegen::load_other_model(&spec)? };
    if version == pinned {
        kapi_codegen::convert::check_manual(&kapi_codegen::convert::plan(&model)?, &repo.join("generated/manual"))?;
    }
    let files = kapi_codegen::emit::render(&model).context("rendering")?;
    let generated_in = start.elapsed();
    if check {
        kapi_codegen::check(&out, &files)?;
        println!("{} is current ({} files, v{version}, generated in {generated_in:.2?})", out.display(), files.len());
    } else {
        let written = kapi_codegen::write_if_changed(&out, &files)?;
        println!("generated {} files from v{version} in {generated_in:.2?}; {} written", files.len(), written.len());
    }
    Ok(())
}
