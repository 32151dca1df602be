//! etcd members for tests: Debian's `etcd` (installed by `tests/run`) on free loopback ports,
//! each member's data in a temporary directory; one member or a cluster.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Member {
    pub name: String,
    pub client_url: String,
    pub peer_url: String,
    pub data_dir: PathBuf,
    pub child: Option<Child>,
}

/// An etcd cluster of one or more members, stopped when dropped.
pub struct Etcd {
    pub members: Vec<Member>,
    initial_cluster: String,
}

/// A free loopback port below the ephemeral range, distinct for every call in this process
/// (tests run in parallel threads; asking the OS for port 0 and releasing it can hand the same
/// port to two members).
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20000 + (std::process::id() % 400) as u16 * 25;
    loop {
        let port = base + NEXT.fetch_add(1, Ordering::Relaxed) % 10000;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

impl Etcd {
    /// One member.
    pub fn start(dir: &Path) -> Etcd {
        Etcd::cluster(dir, 1)
    }

    /// `size` members forming one cluster; returns once every member answers.
    pub fn cluster(dir: &Path, size: usize) -> Etcd {
        let members: Vec<Member> = (0..size)
            .map(|i| Member {
                name: format!("m{i}"),
                client_url: format!("http://127.0.0.1:{}", free_port()),
                peer_url: format!("http://127.0.0.1:{}", free_port()),
                data_dir: dir.join(format!("etcd-m{i}")),
                child: None,
            })
            .collect();
        let initial_cluster = members.iter().map(|m| format!("{}={}", m.name, m.peer_url)).collect::<Vec<_>>().join(",");
        let mut etcd = Etcd { members, initial_cluster };
        for i in 0..size {
            etcd.spawn(i);
        }
        etcd.wait_healthy();
        etcd
    }

    fn spawn(&mut self, i: usize) {
        let initial_cluster = self.initial_cluster.clone();
        let m = &mut self.members[i];
        std::fs::create_dir_all(m.data_dir.parent().unwrap()).unwrap();
        let log = std::fs::File::create(m.data_dir.with_extension("log")).unwrap();
        let child = Command::new("etcd")
            .args(["--name", &m.name, "--data-dir"])
            .arg(&m.data_dir)
            .args(["--listen-client-urls", &m.client_url, "--advertise-client-urls", &m.client_url])
            .args(["--listen-peer-urls", &m.peer_url, "--initial-advertise-peer-urls", &m.peer_url])
            .args(["--initial-cluster", &initial_cluster, "--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", "kapi-test", "--heartbeat-interval", "50", "--election-timeout", "500"])
            // Idle watches hear of progress every second instead of every ten minutes.
            .args(["--experimental-watch-progress-notify-interval", "1s"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting etcd (tests/run installs Debian's etcd-server)");
        m.child = Some(child);
    }

    /// Client URLs of all members, comma-separated (`--etcd-servers`).
    pub fn endpoints(&self) -> String {
        self.members.iter().map(|m| m.client_url.as_str()).collect::<Vec<_>>().join(",")
    }

    /// Stops member `i` (SIGKILL); its data stays for [`Etcd::restart`].
    pub fn stop(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a stopped member again on its data.
    pub fn restart(&mut self, i: usize) {
        self.spawn(i);
    }

    /// Waits until every running member reports healthy.
    pub fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for m in self.members.iter().filter(|m| m.child.is_some()) {
            loop {
                let ok = Command::new("etcdctl")
                    .args(["--endpoints", &m.client_url, "--command-timeout=1s", "endpoint", "health"])
                    .env("ETCDCTL_API", "3")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if ok {
                    break;
                }
                if Instant::now() >= deadline {
                    let log = std::fs::read_to_string(m.data_dir.with_extension("log")).unwrap_or_default();
                    let tail: Vec<&str> = log.lines().rev().take(20).collect();
                    panic!(
                        "etcd member {} did not become healthy; its log ends:\n{}",
                        m.name,
                        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                    );
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// `etcdctl` against the cluster; its standard output (raw bytes).
    pub fn etcdctl(&self, args: &[&str]) -> Vec<u8> {
        let out = Command::new("etcdctl")
            .arg("--endpoints")
            .arg(self.endpoints())
            .args(args)
            .env("ETCDCTL_API", "3")
            .output()
            .expect("running etcdctl");
        assert!(out.status.success(), "etcdctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.stop(i);
        }
    }
}
