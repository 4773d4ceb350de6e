//! Build script: packs the binary's relative relocations (`-z pack-relative-relocs`, the
//! `DT_RELR` format) where both the linker and the C library support it. In a position-
//! independent executable every pointer in static data needs a relocation; `.rela.dyn` spends
//! 24 bytes on each, `DT_RELR` a bit per word (about 220 kB less for this binary, as
//! `bench/size.sh` measures).
//!
//! `DT_RELR` needs glibc 2.36 or newer at run time (the binary then depends on the
//! `GLIBC_ABI_DT_RELR` symbol version) and a linker that knows the option (GNU ld 2.38, LLVM
//! lld 15, mold). So it is turned on only for a native Linux glibc build whose C compiler (`$CC`,
//! else `cc`) links a small program with the option, warnings fatal, and the program then runs
//! here. Anywhere else (another OS, musl, a cross build, an older glibc or linker) the binary
//! is linked as before and `cargo install` works the same.

// Cargo reads a build script's instructions from its standard output: `println!` is the
// protocol here, not text for a user (which src/term.rs cleans).
#![allow(clippy::disallowed_macros)]

use std::path::Path;
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    if relr_supported() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether a program linked with `-z pack-relative-relocs` links without a warning and runs.
fn relr_supported() -> bool {
    let var = |key: &str| std::env::var(key).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("TARGET") != var("HOST")
    {
        return false;
    }
    let out = Path::new(&std::env::var_os("OUT_DIR").unwrap_or_default()).to_path_buf();
    let source = out.join("relr_probe.c");
    let program = out.join("relr_probe");
    // `p` holds an address, so the program has a relative relocation to pack.
    let code = "static int x;\nint *p = &x;\nint main(void) { return *p; }\n";
    if std::fs::write(&source, code).is_err() {
        return false;
    }
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let linked = Command::new(cc)
        .args([
            "-fPIE",
            "-pie",
            "-Wl,-z,pack-relative-relocs",
            "-Wl,--fatal-warnings",
        ])
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    linked
        && Command::new(&program)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}
