//! How the `sluice` binary is linked (`build.rs`): on Linux a position-dependent
//! executable, so that no relocation of its own is applied at each start of a command,
//! unless built with `SLUICE_PIE=1`.

/// The ELF file type of `path`: 2 a position-dependent executable (`ET_EXEC`), 3 a
/// position-independent one or a shared object (`ET_DYN`).
fn elf_type(path: &str) -> u16 {
    let bytes = std::fs::read(path).expect("the sluice binary is built");
    assert_eq!(&bytes[..4], b"\x7fELF", "{path} is an ELF file");
    u16::from_le_bytes([bytes[16], bytes[17]])
}

#[test]
#[cfg(target_os = "linux")]
fn the_binary_is_position_dependent_unless_asked_otherwise() {
    let expected = if option_env!("SLUICE_PIE") == Some("1") {
        3
    } else {
        2
    };
    assert_eq!(elf_type(env!("CARGO_BIN_EXE_sluice")), expected);
}
