//! `cargo run -p kapi-codegen -- [--check] [--version V --out DIR]`: regenerate
//! `generated/src` from the pinned specs (what `cargo build` also does when the specs changed),
//! check it is current, or generate another filled version elsewhere to review an upgrade
//! (`--version 1.35.0 --out /tmp/v135`, then diff against `generated/src`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let check = args.iter().any(|a| a == "--check");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("codegen/ is inside the repository");
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
