//! The `kapi` binary as an operator uses it: decode and encode fixtures, and bad input to both.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    let version = std::fs::read_to_string(repo().join("api-specs/VERSION")).unwrap();
    let p = repo().join(format!("api-specs/v{}/fixtures/{name}", version.trim()));
    assert!(p.is_file(), "fixture missing: run `api-specs/fill` first ({})", p.display());
    p
}

fn kapi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kapi")).args(args).current_dir(repo()).output().unwrap()
}

#[test]
fn decode_protobuf_prints_the_yaml_fixture() {
    for kind in ["apps.v1.Deployment", "core.v1.Pod", "batch.v1.CronJob", "admission.k8s.io.v1.AdmissionReview"] {
        let out = kapi(&["decode", fixture(&format!("{kind}.pb")).to_str().unwrap()]);
        assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        let got: serde_json::Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
        let want: serde_json::Value = serde_yaml_ng::from_slice(&std::fs::read(fixture(&format!("{kind}.yaml"))).unwrap()).unwrap();
        assert_eq!(got, want, "{kind}");
    }
}

/// As piped from `etcdctl get --print-value-only`, which adds a newline after the value.
#[test]
fn decode_reads_a_value_etcdctl_printed() {
    let mut value = std::fs::read(fixture("apps.v1.Deployment.pb")).unwrap();
    value.push(b'\n');
    let path = std::env::temp_dir().join(format!("kapi-cli-etcdctl-{}.pb", std::process::id()));
    std::fs::write(&path, &value).unwrap();
    let out = kapi(&["decode", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: serde_json::Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    let want: serde_json::Value = serde_yaml_ng::from_slice(&std::fs::read(fixture("apps.v1.Deployment.yaml")).unwrap()).unwrap();
    assert_eq!(got, want);
}

#[test]
fn encode_json_to_protobuf_equals_the_pb_fixture() {
    for kind in ["apps.v1.Deployment", "core.v1.Service", "rbac.authorization.k8s.io.v1.ClusterRole"] {
        let out = kapi(&["encode", "--to", "protobuf", fixture(&format!("{kind}.json")).to_str().unwrap()]);
        assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout == std::fs::read(fixture(&format!("{kind}.pb"))).unwrap(), "{kind}");
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("kapi-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases: &[(&str, &[u8], &str)] = &[
        ("truncated.pb", b"k8s\0\x0a\x15\x0a\x07apps/v1", "invalid protobuf"),
        ("nomagic.pb", b"\x00\x01\x02", "invalid YAML"),
        ("bad.json", b"{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"spec\": [}", "invalid JSON"),
        ("unknown.yaml", b"apiVersion: example.com/v1\nkind: Widget\n", "no kind Widget is registered"),
        ("nokind.json", b"{\"apiVersion\": \"v1\"}", "no kind"),
        ("wrongtype.json", b"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":\"x\"}}", "invalid JSON"),
        ("empty.yaml", b"   \n", "empty"),
    ];
    for (name, body, want) in cases {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        let out = kapi(&["decode", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name} should fail");
        assert!(stderr.contains(want), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
    let out = kapi(&["decode", "--from", "xml", fixture("core.v1.Pod.json").to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown input format"));
    std::fs::remove_dir_all(&dir).unwrap();
}
