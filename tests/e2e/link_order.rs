//! scripts/link-ordered, the linker `cargo build-static` uses: it must hand lld the full
//! symbol names of the functions scripts/link-order.txt lists (demangled, without hashes or
//! crate disambiguators), in the list's order, for both of rustc's manglings, and link as plain
//! `cc` when it cannot. Real objects from rustc, real `nm`; `CC` is a stand-in that records
//! what it was given.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::make_executable;

/// The repository's scripts directory.
fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts")
}

/// Compiles `source` as a library object named `<name>.o` in `dir`, with rustc's default
/// mangling (legacy, as our crates get) or `v0` (as std has).
fn object(dir: &Path, name: &str, mangling: &str, source: &str) -> PathBuf {
    let src = dir.join(format!("{name}.rs"));
    std::fs::write(&src, source).expect("write source");
    let out = dir.join(format!("{name}.o"));
    let status = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--crate-type=lib", "--emit=obj", "-C", "opt-level=0"])
        .args((mangling == "v0").then_some("-Csymbol-mangling-version=v0"))
        .args(["--crate-name", name, "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("run rustc");
    assert!(status.success(), "rustc failed for {name}");
    out
}

/// A copy of the wrapper beside `list` as its link-order.txt, and a stand-in `cc` that writes
/// its arguments, one per line, to `args.txt` and the ordering file it was given to
/// `order.txt`. Returns the wrapper's path.
fn wrapper(dir: &Path, list: &str) -> PathBuf {
    let bin = dir.join("scripts");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let wrapper = bin.join("link-ordered");
    std::fs::copy(scripts().join("link-ordered"), &wrapper).expect("copy wrapper");
    std::fs::write(bin.join("link-order.txt"), list).expect("write list");
    let cc = dir.join("cc");
    std::fs::write(
        &cc,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{dir}/args.txt'\n\
             for a in \"$@\"; do case \"$a\" in -Wl,--symbol-ordering-file=*) cp \"${{a#*=}}\" '{dir}/order.txt';; esac; done\n",
            dir = dir.display()
        ),
    )
    .expect("write cc");
    make_executable(&cc);
    wrapper
}

const SOURCE: &str = "
#[inline(never)] pub fn hot_one(x: u32) -> u32 { x.wrapping_mul(3) }
#[inline(never)] pub fn cold(x: u32) -> u32 { x.wrapping_add(1) }
pub struct Shape;
impl Shape { #[inline(never)] pub fn area(&self) -> u32 { 7 } }
";

#[test]
fn listed_functions_reach_lld_by_their_full_names_in_the_lists_order() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let legacy = object(dir, "hotlegacy", "legacy", SOURCE);
    let v0 = object(dir, "hotvzero", "v0", SOURCE);
    // The list's order, not the objects': v0's method first, a C name (passed as it is), then
    // legacy's function; `cold` is not listed.
    let wrapper = wrapper(
        dir,
        "# comment\n<hotvzero::Shape>::area\n__libc_start_main\nhotlegacy::hot_one\nnot::there\n",
    );
    let status = Command::new(&wrapper)
        .env("CC", dir.join("cc"))
        .arg(&legacy)
        .arg(&v0)
        .args(["-o", "out"])
        .status()
        .expect("run wrapper");
    assert!(status.success());
    let args = std::fs::read_to_string(dir.join("args.txt")).expect("args");
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[0], legacy.to_str().unwrap(), "{args:?}");
    assert!(args.contains(&"-Wl,--no-warn-symbol-ordering"), "{args:?}");
    let order = std::fs::read_to_string(dir.join("order.txt")).expect("order file");
    let order: Vec<&str> = order.lines().collect();
    assert_eq!(order.len(), 3, "{order:?}");
    // The full names, hashes and disambiguators included: what nm says the objects define.
    let defined = |obj: &Path| {
        let out = Command::new("nm")
            .arg("--defined-only")
            .arg(obj)
            .output()
            .expect("nm");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(order[0].starts_with("_R"), "{order:?}");
    assert!(defined(&v0).contains(order[0]) && order[0].contains("area"));
    assert_eq!(order[1], "__libc_start_main");
    assert!(order[2].starts_with("_ZN9hotlegacy7hot_one17h") && order[2].ends_with('E'));
    assert!(defined(&legacy).contains(order[2]));
}

#[test]
fn without_nm_it_links_as_cc_would() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let legacy = object(dir, "hotlegacy", "legacy", SOURCE);
    let wrapper = wrapper(dir, "hotlegacy::hot_one\n");
    // A PATH with the one tool the wrapper needs before it looks for nm (dirname), and no nm.
    let path = dir.join("path");
    std::fs::create_dir_all(&path).expect("mkdir");
    let dirname = Command::new("sh")
        .args(["-c", "command -v dirname"])
        .output()
        .expect("sh");
    let dirname = String::from_utf8_lossy(&dirname.stdout).trim().to_string();
    std::os::unix::fs::symlink(dirname, path.join("dirname")).expect("link dirname");
    let status = Command::new("/bin/sh")
        .arg(&wrapper)
        .env("PATH", &path)
        .env("CC", dir.join("cc"))
        .arg(&legacy)
        .args(["-o", "out"])
        .status()
        .expect("run wrapper");
    assert!(status.success());
    let args = std::fs::read_to_string(dir.join("args.txt")).expect("args");
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [legacy.to_str().unwrap(), "-o", "out"],
        "the arguments as given, nothing added"
    );
    assert!(!dir.join("order.txt").exists());
}
