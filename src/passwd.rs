//! The user database (`/etc/passwd`) for the binary built with glibc linked in
//! (`cargo build-static`, see `.cargo/config.toml` and docs/performance.md "Start-up").
//!
//! A statically linked glibc answers `getpwuid`, `getpwuid_r` and `getpwnam` by loading the NSS
//! modules that `/etc/nsswitch.conf` names after `files` (`systemd`, `sss`, `ldap`) with its own
//! `dlopen`, and that crashes the process: on Debian 12 (glibc 2.36, `passwd: files systemd`) a
//! static binary asking for a uid that `/etc/passwd` does not hold dies of SIGSEGV. Three callers
//! reach these functions: std (the home directory when `HOME` is unset), gix (`~user` in a git
//! config path) and portable-pty (the default shell and home when `SHELL`/`HOME` are unset).
//! In the static build this module defines the three functions over `/etc/passwd` alone, and
//! the linker takes them instead of glibc's (a second definition would fail the link, never
//! pass silently). A user that only a network directory knows is then "not found", which every
//! caller handles (no home directory, `/bin/sh`). In the ordinary, dynamic build nothing here
//! is exported and glibc's NSS answers as usual.

/// One line of `/etc/passwd`: `name:passwd:uid:gid:gecos:dir:shell`, fields as bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Login name.
    pub name: Vec<u8>,
    /// Password field (`x` on shadowed systems).
    pub passwd: Vec<u8>,
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Comment (full name).
    pub gecos: Vec<u8>,
    /// Home directory.
    pub dir: Vec<u8>,
    /// Login shell.
    pub shell: Vec<u8>,
}

/// What to look an entry up by.
#[derive(Debug, Clone, Copy)]
pub enum Key<'a> {
    /// A user id (`getpwuid`).
    Uid(u32),
    /// A login name (`getpwnam`).
    Name(&'a [u8]),
}

/// The first entry of `text` (the contents of a passwd file) that matches `key`. Lines that
/// do not have seven fields with numeric ids, comments and NIS `+`/`-` lines are skipped.
pub fn find(text: &[u8], key: Key<'_>) -> Option<Entry> {
    text.split(|&b| b == b'\n').find_map(|line| {
        let fields: Vec<&[u8]> = line.split(|&b| b == b':').collect();
        let [name, passwd, uid, gid, gecos, dir, shell] = fields.as_slice() else {
            return None;
        };
        if matches!(name.first(), None | Some(b'#' | b'+' | b'-')) {
            return None;
        }
        let number = |f: &[u8]| std::str::from_utf8(f).ok()?.parse::<u32>().ok();
        let (uid, gid) = (number(uid)?, number(gid)?);
        let hit = match key {
            Key::Uid(want) => want == uid,
            Key::Name(want) => want == *name,
        };
        hit.then(|| Entry {
            name: name.to_vec(),
            passwd: passwd.to_vec(),
            uid,
            gid,
            gecos: gecos.to_vec(),
            dir: dir.to_vec(),
            shell: shell.to_vec(),
        })
    })
}

impl Entry {
    /// The five strings, in the order [`Entry::pack`] lays them out.
    fn strings(&self) -> [&[u8]; 5] {
        [
            &self.name,
            &self.passwd,
            &self.gecos,
            &self.dir,
            &self.shell,
        ]
    }

    /// Bytes [`Entry::pack`] needs: the five strings, each with its NUL.
    pub fn packed_len(&self) -> usize {
        self.strings().iter().map(|s| s.len() + 1).sum()
    }

    /// Copies the five strings into `buf`, each NUL-terminated, and returns their offsets
    /// (name, passwd, gecos, dir, shell); `None` when `buf` is too small. A NUL inside a field
    /// ends that string early.
    pub fn pack(&self, buf: &mut [u8]) -> Option<[usize; 5]> {
        if buf.len() < self.packed_len() {
            return None;
        }
        let mut offsets = [0; 5];
        let mut at = 0;
        for (slot, s) in offsets.iter_mut().zip(self.strings()) {
            *slot = at;
            buf.get_mut(at..at + s.len())?.copy_from_slice(s);
            *buf.get_mut(at + s.len())? = 0;
            at += s.len() + 1;
        }
        Some(offsets)
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static"))]
mod exports {
    //! The C functions glibc would otherwise provide, with glibc's signatures.
    use super::{Entry, Key, find};
    use std::ffi::{CStr, c_char, c_int};
    use std::ptr::null_mut;

    fn lookup(key: Key<'_>) -> Option<Entry> {
        std::panic::catch_unwind(|| find(&std::fs::read("/etc/passwd").ok()?, key))
            .ok()
            .flatten()
    }

    /// Fills `pwd` with pointers into `buf` (of `len` bytes); false when `buf` is too small.
    ///
    /// SAFETY: `pwd` is valid for writes and `buf` for `len` bytes of writes.
    unsafe fn fill(e: &Entry, pwd: *mut libc::passwd, buf: *mut c_char, len: usize) -> bool {
        // SAFETY: as the caller promises.
        let bytes = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
        let Some([name, passwd, gecos, dir, shell]) = e.pack(bytes) else {
            return false;
        };
        // SAFETY: every offset is inside `buf` (pack checked the length); `pwd` is writable.
        unsafe {
            *pwd = libc::passwd {
                pw_name: buf.add(name),
                pw_passwd: buf.add(passwd),
                pw_uid: e.uid,
                pw_gid: e.gid,
                pw_gecos: buf.add(gecos),
                pw_dir: buf.add(dir),
                pw_shell: buf.add(shell),
            };
        }
        true
    }

    /// An entry in memory that stays valid for the rest of the process, as `getpwuid`'s
    /// result must until the next call (a few dozen bytes per call; callers ask once).
    fn leaked(e: Option<Entry>) -> *mut libc::passwd {
        let Some(e) = e else { return null_mut() };
        let buf: &'static mut [u8] = Box::leak(vec![0u8; e.packed_len()].into_boxed_slice());
        // SAFETY: libc::passwd is plain pointers and integers; all zero is a valid value.
        let pwd: *mut libc::passwd = Box::leak(Box::new(unsafe { std::mem::zeroed() }));
        // SAFETY: `pwd` and `buf` were just allocated with the sizes given.
        if unsafe { fill(&e, pwd, buf.as_mut_ptr().cast(), buf.len()) } {
            pwd
        } else {
            null_mut()
        }
    }

    /// `getpwuid_r(3)` over `/etc/passwd`: 0 with `*result` set (or null when not found),
    /// `ERANGE` when `buf` is too small.
    ///
    /// # Safety
    /// As getpwuid_r(3): `pwd`, `result` valid for writes, `buf` for `buflen` bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn getpwuid_r(
        uid: libc::uid_t,
        pwd: *mut libc::passwd,
        buf: *mut c_char,
        buflen: libc::size_t,
        result: *mut *mut libc::passwd,
    ) -> c_int {
        // SAFETY: the caller passes a writable `result`.
        unsafe { *result = null_mut() };
        let Some(e) = lookup(Key::Uid(uid)) else {
            return 0;
        };
        // SAFETY: as the caller promises.
        if !unsafe { fill(&e, pwd, buf, buflen) } {
            return libc::ERANGE;
        }
        // SAFETY: as above.
        unsafe { *result = pwd };
        0
    }

    /// `getpwuid(3)` over `/etc/passwd`: the entry, or null when not found.
    #[unsafe(no_mangle)]
    pub extern "C" fn getpwuid(uid: libc::uid_t) -> *mut libc::passwd {
        leaked(lookup(Key::Uid(uid)))
    }

    /// `getpwnam(3)` over `/etc/passwd`: the entry, or null when not found.
    ///
    /// # Safety
    /// `name` is a NUL-terminated string.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn getpwnam(name: *const c_char) -> *mut libc::passwd {
        if name.is_null() {
            return null_mut();
        }
        // SAFETY: as the caller promises.
        let name = unsafe { CStr::from_ptr(name) };
        leaked(lookup(Key::Name(name.to_bytes())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &[u8] = b"# comment\nroot:x:0:0:root:/root:/bin/bash\n+nis::0:0:::\nbroken:x:1\nalice:x:1000:1000:Alice A,,,:/home/alice:/usr/bin/zsh\nbob:x:abc:1:::\n";

    #[test]
    fn finds_by_uid_and_name_and_skips_odd_lines() {
        let alice = find(PASSWD, Key::Uid(1000)).unwrap();
        assert_eq!(alice.name, b"alice");
        assert_eq!(alice.dir, b"/home/alice");
        assert_eq!(alice.shell, b"/usr/bin/zsh");
        assert_eq!(alice.gid, 1000);
        assert_eq!(find(PASSWD, Key::Name(b"root")).unwrap().uid, 0);
        assert_eq!(find(PASSWD, Key::Name(b"+nis")), None);
        assert_eq!(find(PASSWD, Key::Name(b"broken")), None);
        assert_eq!(find(PASSWD, Key::Name(b"bob")), None, "non-numeric uid");
        assert_eq!(find(PASSWD, Key::Uid(54321)), None);
        assert_eq!(find(b"", Key::Uid(0)), None);
    }

    #[test]
    fn packs_nul_terminated_strings_or_refuses_a_small_buffer() {
        let root = find(PASSWD, Key::Uid(0)).unwrap();
        let mut buf = vec![0xffu8; root.packed_len()];
        let [name, passwd, gecos, dir, shell] = root.pack(&mut buf).unwrap();
        let at = |i: usize| {
            let end = i + buf[i..].iter().position(|&b| b == 0).unwrap();
            &buf[i..end]
        };
        assert_eq!(
            [at(name), at(passwd), at(gecos), at(dir), at(shell)],
            [&b"root"[..], b"x", b"root", b"/root", b"/bin/bash"]
        );
        let mut small = vec![0u8; root.packed_len() - 1];
        assert_eq!(root.pack(&mut small), None);
    }
}
