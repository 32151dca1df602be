//! `cargo run -p kapi-codegen -- [--check]`: regenerate `generated/src` from the pinned specs
//! (what `cargo build` also does when the specs changed), or check it is current.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

fn main() -> Result<()> {
    let check = std::env::args().any(|a| a == "--check");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("codegen/ is inside the repository");
    let version = kapi_codegen::pinned_version(repo)?;
    let spec = kapi_codegen::SpecDir::in_repo(repo, &version);
    let start = Instant::now();
    let files = kapi_codegen::generate(&spec)?;
    let generated_in = start.elapsed();
    let out = repo.join("generated/src");
    if check {
        kapi_codegen::check(&out, &files)?;
        println!("generated/src is current ({} files, v{version}, generated in {generated_in:.2?})", files.len());
    } else {
        let written = kapi_codegen::write_if_changed(&out, &files)?;
        println!("generated {} files from v{version} in {generated_in:.2?}; {} written", files.len(), written.len());
    }
    Ok(())
}
