//! kapi's own build needs nothing generated (that is `generated/build.rs`). This script exists
//! for its build-dependency: `protoc-bin-vendored` makes cargo download a pinned `protoc` before
//! any build script runs, which `tools/protoc` hands to etcd-client's build script on machines
//! without one (see ARCHITECTURE.md, "Building").

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // Fails the build early, with a clear message, where the pinned binary is missing.
    if let Err(e) = protoc_bin_vendored::protoc_bin_path() {
        println!("cargo:warning=no vendored protoc for this platform ({e}); install protoc");
    }
}
