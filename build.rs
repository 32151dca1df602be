//! kapi's own build needs nothing generated (that is `generated/build.rs`). This script exists
//! for its build-dependency: `protoc-bin-vendored` makes cargo download a pinned `protoc` before
//! any build script runs, which `tools/protoc` hands to etcd-client's build script on machines
//! without one (see ARCHITECTURE.md, "Building").

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // The server binary is linked at a fixed address, as Go links kube-apiserver: a
    // position-independent kapi carries ~128k relocations (3 MB) that the dynamic loader
    // applied at every exec, writing every page of the 3 MB of vtables and constant tables they
    // point into, so that start-up paid for reading and copying ~6 MB before `main` (see
    // ARCHITECTURE.md, "Performance"). Only where the linker is GNU-style (Linux).
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    // The functions start-up runs, laid out together (`tools/startup-order` writes the list):
    // text pages are mapped 64 KiB around each fault, and scattered over the ~50 MB of code
    // they made most of the idle RSS. rust-lld is the default linker on x86_64 Linux. Not a
    // rerun-if-changed input, so that a new list relinks the binary only (`touch src/main.rs`)
    // instead of rebuilding the crate.
    let order = std::path::Path::new(&target("CARGO_MANIFEST_DIR")).join("tools/startup.order");
    if target("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && target("CARGO_CFG_TARGET_OS") == "linux"
        && target("CARGO_CFG_TARGET_ENV") == "gnu"
        && order.is_file()
    {
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", order.display());
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    // Fails the build early, with a clear message, where the pinned binary is missing.
    if let Err(e) = protoc_bin_vendored::protoc_bin_path() {
        println!("cargo:warning=no vendored protoc for this platform ({e}); install protoc");
    }
}
