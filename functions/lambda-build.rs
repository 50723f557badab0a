//! Build script of every Lambda function crate (each one's `Cargo.toml` names it with
//! `build = "../lambda-build.rs"`): the function binaries are linked as position-dependent
//! executables (`-no-pie`) on Linux with glibc, the targets Lambda runs (`provided.al2023`, arm64
//! and x86_64, built natively or with cargo-lambda's zig linker, which honours the flag too).
//!
//! Why (measured in docs/performance.md, "Position-dependent function
//! binaries"): a position-independent executable of this size carries about 65,000 relative
//! relocations (1.5 MB of `.rela.dyn`) that the dynamic loader applies at every cold start,
//! writing 1.6 MB of `.data.rel.ro` and faulting its pages in; linked at a fixed address, the
//! binary has none of them. In three side-by-side runs the dispatch function's init CPU was 0.98
//! to 1.13x the DynamoDB floor's, against 1.12 to 1.32x linked as a PIE, and its resident memory
//! 3 MiB lower. The trade-off (the executable's own image is not address-space
//! randomised; the stack, heap, shared libraries and mappings still are) is recorded in
//! docs/decisions.md. Only the crate's binaries get the flag (`rustc-link-arg-bins`): its tests,
//! its library and every dependency build exactly as before.

fn main() {
    println!("cargo:rerun-if-changed=../lambda-build.rs");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if target_os == "linux" && target_env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
