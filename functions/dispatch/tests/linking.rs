//! How the dispatch function's binary is linked: position-dependent on Linux
//! with glibc, through the build script every function crate shares (`functions/lambda-build.rs`),
//! so that no relative relocations are applied at a cold start.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_function_binary_is_a_position_dependent_executable() {
    use std::io::Read;

    let mut header = [0_u8; 18];
    std::fs::File::open(env!("CARGO_BIN_EXE_dispatch"))
        .and_then(|mut binary| binary.read_exact(&mut header))
        .expect("the dispatch binary is readable");
    assert_eq!(&header[..4], b"\x7fELF", "an ELF file");
    // e_type (ELF header bytes 16-17, little-endian on x86_64 and aarch64): 2 is ET_EXEC, a
    // position-dependent executable; 3 is ET_DYN, what a position-independent executable is.
    let elf_type = u16::from_le_bytes([header[16], header[17]]);
    assert_eq!(
        elf_type, 2,
        "ET_EXEC expected; ET_DYN (3) means the binary was linked as a PIE"
    );
}
