//! Modes of the files kapi keeps secrets in.
//!
//! The data directory holds the store (every Secret), the PKI's private keys and the admin
//! kubeconfig, so kapi creates it `0700` and every file with secrets in it `0600`, as the
//! Kubernetes tools write secrets (client-go's `keyutil.WriteKey` and `clientcmd.WriteToFile`:
//! `0600`; kubeadm's PKI goes through them) and as the CIS benchmark asks of a control plane
//! (etcd's data directory `700`, PKI keys and `admin.conf` `600`). Certificates stay `0644`, as
//! `cert.WriteCert` writes them: they are public.
//!
//! On start, a path that lets group or others in is logged as a warning naming it. kapi's own
//! paths (the data directory, the store, the generated keys and the kubeconfig) are then
//! restricted ([`restrict`]); files given by flags (`--tls-private-key-file`) are only reported
//! ([`report_loose`]): they are the operator's. A data directory that holds files kapi did not
//! write (a home directory, `/tmp`) is not kapi's either and is only reported.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Mode of a directory holding secrets.
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// Mode of a file holding secrets.
pub const PRIVATE_FILE_MODE: u32 = 0o600;
/// The embedded store's file in the data directory.
pub const STORE_FILE: &str = "store.redb";

/// Permission bits for group and others.
const GROUP_OTHER: u32 = 0o077;

/// A path whose mode lets group or others in, as found on start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loose {
    pub path: PathBuf,
    /// Its permission bits as found.
    pub mode: u32,
    /// The mode kapi set, or `None` when it left the path as it was.
    pub restricted_to: Option<u32>,
}

/// Creates the data directory (`0700`, with any missing parents) and checks it and the files in
/// it that hold secrets: `store.redb` (created empty, `0600`, when `embedded_store`, so the store
/// never exists with a looser mode; the embedded store initialises an empty file) and
/// `admin.kubeconfig`. Returns what it found too open.
pub fn prepare_data_dir(data_dir: &Path, embedded_store: bool) -> io::Result<Vec<Loose>> {
    let mut found = Vec::new();
    create_private_dir(data_dir).map_err(|e| with_path("creating the data directory", data_dir, e))?;
    let own = only_kapi_entries(data_dir).map_err(|e| with_path("reading the data directory", data_dir, e))?;
    let data_dir_found = match own {
        true => restrict(data_dir, PRIVATE_DIR_MODE, "the data directory"),
        false => report_loose(
            data_dir,
            PRIVATE_DIR_MODE,
            "the data directory (it holds files kapi did not write, so kapi leaves its mode alone; give kapi a directory of its own)",
        ),
    };
    found.extend(data_dir_found);
    if embedded_store {
        let store = data_dir.join(STORE_FILE);
        create_private_file(&store).map_err(|e| with_path("creating", &store, e))?;
        found.extend(restrict(&store, PRIVATE_FILE_MODE, "the store"));
    }
    found.extend(restrict(&data_dir.join(crate::pki::KUBECONFIG_FILE), PRIVATE_FILE_MODE, "the admin kubeconfig"));
    Ok(found)
}

/// Checks one of kapi's own paths: when it exists with group or other bits set, logs a warning
/// naming it and removes those bits (a symbolic link is only reported: its target may not be
/// kapi's). `None` when the path is missing or tight enough.
pub fn restrict(path: &Path, wanted: u32, what: &str) -> Option<Loose> {
    let (mode, is_link) = mode_of(path)?;
    if mode & GROUP_OTHER == 0 {
        return None;
    }
    if is_link {
        return report_loose(path, wanted, &format!("{what} (a symbolic link, so kapi leaves its target alone)"));
    }
    let restricted = mode & !GROUP_OTHER;
    match set_mode(path, restricted) {
        Ok(()) => {
            tracing::warn!(
                path = %path.display(),
                "{what} {} had mode {mode:04o}, open to group or others; kapi keeps secrets there and restricted it to {restricted:04o} (wanted {wanted:04o})",
                path.display()
            );
            Some(Loose { path: path.to_path_buf(), mode, restricted_to: Some(restricted) })
        }
        Err(e) => {
            tracing::warn!(
                path = %path.display(),
                error = %e,
                "{what} {} has mode {mode:04o}, open to group or others, and kapi could not restrict it: chmod {wanted:o} it",
                path.display()
            );
            Some(Loose { path: path.to_path_buf(), mode, restricted_to: None })
        }
    }
}

/// Checks a path kapi does not own (a key file given by a flag): when it exists with group or
/// other bits set, logs a warning naming it, and leaves it as it is.
pub fn report_loose(path: &Path, wanted: u32, what: &str) -> Option<Loose> {
    let (mode, _) = mode_of(path)?;
    if mode & GROUP_OTHER == 0 {
        return None;
    }
    tracing::warn!(
        path = %path.display(),
        "{what} {} has mode {mode:04o}, open to group or others; kapi leaves it as it is: chmod {wanted:o} it",
        path.display()
    );
    Some(Loose { path: path.to_path_buf(), mode, restricted_to: None })
}

/// The permission bits of `path` (of the target for a symbolic link) and whether it is a link;
/// `None` when it does not exist or cannot be read.
pub fn mode_of(path: &Path) -> Option<(u32, bool)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let is_link = fs::symlink_metadata(path).ok()?.file_type().is_symlink();
        let meta = fs::metadata(path).ok()?;
        Some((meta.permissions().mode() & 0o7777, is_link))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}

/// `mkdir -p -m 0700`: the directory and any missing parents, each `0700` (the umask can only
/// narrow it). An existing directory is left to [`restrict`].
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(PRIVATE_DIR_MODE);
    }
    builder.create(path)
}

/// Creates an empty `0600` file unless `path` exists.
fn create_private_file(path: &Path) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(PRIVATE_FILE_MODE);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether every entry of the data directory is one kapi writes there.
fn only_kapi_entries(dir: &Path) -> io::Result<bool> {
    for entry in fs::read_dir(dir)? {
        if !is_kapi_entry(&entry?.file_name()) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The entries kapi writes in its data directory (with the temporary names its atomic writes
/// use).
fn is_kapi_entry(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else { return false };
    let name = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")).unwrap_or(name);
    [STORE_FILE, crate::pki::PKI_DIR, crate::pki::KUBECONFIG_FILE, "port"].contains(&name)
}

fn with_path(action: &str, path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{action} {}: {e}", path.display()))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    fn chmod(path: &Path, mode: u32) {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_new_data_dir_is_private_and_the_store_file_too() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("a/b/kapi-data");
        let found = prepare_data_dir(&data, true).unwrap();
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&tmp.path().join("a")), 0o700);
        let store = data.join(STORE_FILE);
        assert_eq!((mode(&store), fs::metadata(&store).unwrap().len()), (0o600, 0));
        // The embedded store takes the empty file as a new store, and keeps its mode.
        drop(crate::storage::embedded::EmbeddedStore::open(&store).unwrap());
        assert_eq!(mode(&store), 0o600);
        assert!(fs::metadata(&store).unwrap().len() > 0);
        // Again: nothing to report, nothing changed.
        assert!(prepare_data_dir(&data, true).unwrap().is_empty());
    }

    #[test]
    fn no_store_file_with_etcd() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        prepare_data_dir(&data, false).unwrap();
        assert!(!data.join(STORE_FILE).exists());
        assert_eq!(mode(&data), 0o700);
    }

    #[test]
    fn loose_paths_of_an_older_data_dir_are_reported_and_restricted() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        fs::create_dir(&data).unwrap();
        chmod(&data, 0o755);
        let store = data.join(STORE_FILE);
        let kubeconfig = data.join("admin.kubeconfig");
        let port = data.join("port");
        for (path, m) in [(&store, 0o644), (&kubeconfig, 0o664), (&port, 0o644)] {
            fs::write(path, b"x").unwrap();
            chmod(path, m);
        }
        fs::create_dir(data.join("pki")).unwrap();
        let found = prepare_data_dir(&data, true).unwrap();
        let want = vec![
            Loose { path: data.clone(), mode: 0o755, restricted_to: Some(0o700) },
            Loose { path: store.clone(), mode: 0o644, restricted_to: Some(0o600) },
            Loose { path: kubeconfig.clone(), mode: 0o664, restricted_to: Some(0o600) },
        ];
        assert_eq!(found, want);
        assert_eq!((mode(&data), mode(&store), mode(&kubeconfig)), (0o700, 0o600, 0o600));
        // The port is no secret.
        assert_eq!(mode(&port), 0o644);
        assert_eq!(fs::read(&store).unwrap(), b"x", "contents untouched");
    }

    #[test]
    fn a_shared_directory_is_only_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("home");
        fs::create_dir(&data).unwrap();
        fs::write(data.join("notes.txt"), b"mine").unwrap();
        chmod(&data, 0o755);
        let found = prepare_data_dir(&data, true).unwrap();
        assert_eq!(found, vec![Loose { path: data.clone(), mode: 0o755, restricted_to: None }]);
        assert_eq!(mode(&data), 0o755);
        // kapi's own file in it is still private.
        assert_eq!(mode(&data.join(STORE_FILE)), 0o600);
    }

    #[test]
    fn files_given_by_flags_and_links_are_only_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let key = tmp.path().join("server.key");
        fs::write(&key, b"k").unwrap();
        chmod(&key, 0o640);
        assert_eq!(
            report_loose(&key, 0o600, "--tls-private-key-file"),
            Some(Loose { path: key.clone(), mode: 0o640, restricted_to: None })
        );
        assert_eq!(mode(&key), 0o640);
        let link = tmp.path().join("link.key");
        std::os::unix::fs::symlink(&key, &link).unwrap();
        assert_eq!(restrict(&link, 0o600, "a key").unwrap().restricted_to, None);
        assert_eq!(mode(&key), 0o640);
        // Tight or missing: nothing to say.
        chmod(&key, 0o400);
        assert_eq!(report_loose(&key, 0o600, "key"), None);
        assert_eq!(restrict(&key, 0o600, "key"), None);
        assert_eq!(restrict(&tmp.path().join("missing"), 0o600, "key"), None);
    }

    #[test]
    fn kapi_entries() {
        for name in ["store.redb", "pki", ".pki.tmp", "admin.kubeconfig", ".admin.kubeconfig.tmp", "port"] {
            assert!(is_kapi_entry(OsStr::new(name)), "{name}");
        }
        for name in ["notes.txt", ".bashrc", "pki.tmp", ".store.redb", "kapi-data"] {
            assert!(!is_kapi_entry(OsStr::new(name)), "{name}");
        }
    }
}
