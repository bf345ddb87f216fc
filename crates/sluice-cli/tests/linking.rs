//! How the binaries are linked (`build.rs`): position-independent (its code at a
//! random address), unless a site builds it with `SLUICE_NO_PIE=1`.

/// The ELF file type of `path`: 2 a position-dependent executable (`ET_EXEC`), 3 a
/// position-independent one or a shared object (`ET_DYN`).
fn elf_type(path: &str) -> u16 {
    let bytes = std::fs::read(path).expect("the sluice binary is built");
    assert_eq!(&bytes[..4], b"\x7fELF", "{path} is an ELF file");
    u16::from_le_bytes([bytes[16], bytes[17]])
}

#[test]
#[cfg(target_os = "linux")]
fn the_binary_is_position_independent_unless_asked_otherwise() {
    let expected = if option_env!("SLUICE_NO_PIE") == Some("1") {
        2
    } else {
        3
    };
    assert_eq!(elf_type(env!("CARGO_BIN_EXE_sluice")), expected);
    assert_eq!(elf_type(env!("CARGO_BIN_EXE_sluice-commands")), expected);
    assert_eq!(elf_type(env!("CARGO_BIN_EXE_sluice-stepd")), expected);
}
