//! The real kubectl against a started `kapi serve` on a loopback port: what works so far of the
//! serving issue (discovery, namespaces and objects created, read, listed and deleted, errors,
//! authentication, restart).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;

struct Server {
    child: Child,
    data_dir: PathBuf,
}

impl Server {
    /// `kapi serve` on `data_dir`, with `store_flags` choosing the store (none: embedded).
    fn start(data_dir: &Path, store_flags: &[&str]) -> Self {
        let _ = std::fs::remove_file(data_dir.join("port"));
        let child = Command::new(env!("CARGO_BIN_EXE_kapi"))
            .args(["serve", "--secure-port", "0", "--data-dir"])
            .arg(data_dir)
            .args(store_flags)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting kapi");
        let server = Self { child, data_dir: data_dir.to_path_buf() };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if server.data_dir.join("port").exists() && server.kubectl(&["get", "--raw", "/readyz"]).status.success() {
                return server;
            }
            assert!(Instant::now() < deadline, "kapi did not become ready");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn kubeconfig(&self) -> PathBuf {
        self.data_dir.join("admin.kubeconfig")
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl").args(args).env("KUBECONFIG", self.kubeconfig()).output().expect("running kubectl")
    }

    /// Runs kubectl, asserting success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs kubectl, asserting failure; returns stderr.
    fn fails(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(!out.status.success(), "kubectl {args:?} should fail: {}", String::from_utf8_lossy(&out.stdout));
        String::from_utf8(out.stderr).unwrap()
    }

    fn stop(mut self) {
        // SIGTERM, as an orchestrator would; then reap.
        let _ = Command::new("kill").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn kubectl_drives_kapi() {
    drive(&[]);
}

/// The same session with kapi on etcd (`--etcd-servers`): nothing a client sees may differ.
#[test]
fn kubectl_drives_kapi_on_etcd() {
    let etcd_dir = tempfile::tempdir().unwrap();
    let etcd = common::etcd::Etcd::start(etcd_dir.path());
    drive(&["--etcd-servers", &etcd.endpoints()]);
}

fn drive(store_flags: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), store_flags);

    let version = server.ok(&["version", "-o", "json"]);
    let version: serde_json::Value = serde_json::from_str(&version).unwrap();
    assert_eq!(version["serverVersion"]["minor"], "36");

    let resources = server.ok(&["api-resources"]);
    let deploy = resources.lines().find(|l| l.starts_with("deployments ")).expect("deployments listed");
    assert!(deploy.split_whitespace().collect::<Vec<_>>() == ["deployments", "deploy", "apps/v1", "true", "Deployment"]);
    assert!(server.ok(&["api-versions"]).lines().any(|l| l == "autoscaling/v2"));

    let namespaces = server.ok(&["get", "ns", "-o", "name"]);
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(namespaces.contains(&format!("namespace/{ns}\n")), "{ns} missing: {namespaces}");
    }

    // componentstatuses are probed at each request: nothing serves the scheduler or the
    // controller manager here, so they are Unhealthy with the prober's message; etcd (when
    // kapi runs on one) is Healthy.
    let statuses = server.ok(&["get", "componentstatuses"]);
    assert!(statuses.starts_with("NAME"), "{statuses}");
    for component in ["scheduler", "controller-manager"] {
        let line = statuses.lines().find(|l| l.starts_with(&format!("{component} "))).unwrap_or_else(|| panic!("{component}: {statuses}"));
        assert!(line.contains("Unhealthy") && line.contains("connect: connection refused"), "{line}");
    }
    match store_flags.is_empty() {
        true => assert!(!statuses.contains("etcd-0"), "{statuses}"),
        false => assert!(statuses.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["etcd-0", "Healthy", "ok"]), "{statuses}"),
    }
    assert_eq!(server.ok(&["get", "cs", "scheduler", "-o", "jsonpath={.conditions[0].status}"]), "False");
    let missing = server.fails(&["get", "cs", "nothing"]);
    assert!(missing.contains(r#"componentstatuses "nothing" not found"#), "{missing}");

    assert_eq!(server.ok(&["create", "ns", "demo"]).trim(), "namespace/demo created");
    // Objects read back as upstream's Go types write them: value structs always (`status: {}`,
    // a Service's `loadBalancer: {}`), zero values of `omitempty` fields never.
    server.ok(&["create", "deployment", "gosem", "-n", "default", "--image=nginx"]);
    let deploy = server.ok(&["get", "deploy", "gosem", "-n", "default", "-o", "yaml"]);
    assert!(deploy.contains("\nstatus: {}\n"), "{deploy}");
    for absent in ["generation: 0", "stdin:", "stdinOnce:", "tty:", "hostIPC:", "hostNetwork:", "hostPID:"] {
        assert!(!deploy.contains(absent), "{absent} in {deploy}");
    }
    server.ok(&["create", "service", "clusterip", "gosem", "-n", "default", "--tcp=80:80"]);
    assert_eq!(server.ok(&["get", "svc", "gosem", "-n", "default", "-o", "jsonpath={.status}"]), r#"{"loadBalancer":{}}"#);
    // Out of the way of the address and table checks below.
    server.ok(&["delete", "svc,deploy", "gosem", "-n", "default"]);
    // Server-side tables with upstream's columns.
    let table = server.ok(&["get", "ns", "demo"]);
    assert!(table.starts_with("NAME   STATUS   AGE\ndemo   Active   "), "{table}");
    assert_eq!(server.ok(&["get", "ns", "demo", "-o", "jsonpath={.status.phase}"]), "Active");
    let yaml = server.ok(&["get", "ns", "demo", "-o", "yaml"]);
    assert!(!yaml.contains("generateName") && !yaml.contains("selfLink"), "{yaml}");
    server.ok(&["create", "configmap", "cm1", "-n", "demo", "--from-literal=a=b"]);
    assert_eq!(server.ok(&["get", "cm", "cm1", "-n", "demo", "-o", "jsonpath={.data.a}"]), "b");
    let cm: serde_json::Value = serde_json::from_str(&server.ok(&["get", "configmap", "cm1", "-n", "demo", "-o", "json"])).unwrap();
    assert_eq!(cm["metadata"]["namespace"], "demo");
    assert!(cm["metadata"]["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert!(cm["metadata"]["creationTimestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert!(cm["metadata"].get("generation").is_none(), "configmaps have no generation upstream");
    let rv = cm["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    assert!(server.ok(&["get", "cm", "-A"]).contains("demo"));

    let err = server.fails(&["create", "configmap", "x", "-n", "missing", "--from-literal=a=b"]);
    assert!(err.contains(r#"namespaces "missing" not found"#), "{err}");
    let err = server.fails(&["create", "configmap", "cm1", "-n", "demo"]);
    assert!(err.contains(r#"configmaps "cm1" already exists"#), "{err}");

    // Restart: the object is still there with the same resourceVersion.
    server.stop();
    let server = Server::start(dir.path(), store_flags);
    let rv_after = server.ok(&["get", "cm", "cm1", "-n", "demo", "-o", "jsonpath={.metadata.resourceVersion}"]);
    assert_eq!(rv_after, rv);

    // `get -w` sees a later change.
    let watcher = Command::new("kubectl")
        .args(["get", "configmaps", "-n", "demo", "-w", "-o", "name"])
        .env("KUBECONFIG", server.kubeconfig())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    server.ok(&["create", "configmap", "cm2", "-n", "demo", "--from-literal=x=y"]);
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill").arg(watcher.id().to_string()).status();
    let watched = String::from_utf8(watcher.wait_with_output().unwrap().stdout).unwrap();
    assert!(watched.contains("configmap/cm1") && watched.contains("configmap/cm2"), "{watched}");

    // `get -w` in table form: the watch answers a Table per event; the columns print once and
    // every event a row (deployments have their own columns).
    server.ok(&["create", "deployment", "watched", "-n", "demo", "--image=nginx"]);
    let watch = |args: &[&str], change: &[&str]| {
        let watcher = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", server.kubeconfig())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        server.ok(change);
        std::thread::sleep(Duration::from_millis(500));
        let _ = Command::new("kill").arg(watcher.id().to_string()).status();
        String::from_utf8(watcher.wait_with_output().unwrap().stdout).unwrap()
    };
    let watched = watch(
        &["get", "configmaps", "-n", "demo", "-w"],
        &["create", "configmap", "cm3", "-n", "demo", "--from-literal=a=b", "--from-literal=c=d"],
    );
    let lines: Vec<Vec<&str>> = watched.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines.iter().filter(|l| l.first() == Some(&"NAME")).count(), 1, "{watched}");
    assert_eq!(lines[0][..3], ["NAME", "DATA", "AGE"], "{watched}");
    assert!(lines.iter().any(|l| l[..2] == ["cm3", "2"]), "{watched}");
    let watched = watch(
        &["get", "deploy", "-n", "demo", "-w", "--output-watch-events"],
        &["scale", "deployment", "watched", "-n", "demo", "--replicas=3"],
    );
    let lines: Vec<Vec<&str>> = watched.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0][..5], ["EVENT", "NAME", "READY", "UP-TO-DATE", "AVAILABLE"], "{watched}");
    assert!(lines.iter().any(|l| l[..3] == ["MODIFIED", "watched", "0/3"]), "{watched}");
    server.ok(&["delete", "deployment", "watched", "-n", "demo"]);

    // explain from the OpenAPI v2 document (its protobuf form).
    let explained = server.ok(&["explain", "--output=plaintext-openapiv2", "deployment.spec.replicas"]);
    assert!(explained.contains("KIND:     Deployment") && explained.contains("FIELD:    replicas <integer>"), "{explained}");

    assert!(server.ok(&["delete", "configmap", "cm1", "-n", "demo"]).contains(r#"configmap "cm1" deleted"#));
    let err = server.fails(&["get", "cm", "cm1", "-n", "demo"]);
    assert!(err.contains(r#"configmaps "cm1" not found"#), "{err}");

    // apply -f of a multi-document manifest, then again with changes (client-side apply sends a
    // strategic merge patch).
    let manifest = dir.path().join("app.yaml");
    let app = |replicas: u32, image: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: demo\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: {image}\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: demo\nspec:\n  selector: {{app: web}}\n  ports:\n  - port: 80\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: demo\ndata:\n  mode: fast\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: demo\nstringData:\n  token: s3cr3t\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: once\n  namespace: demo\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: once\n        image: busybox\n"
        )
    };
    std::fs::write(&manifest, app(2, "nginx:1.25")).unwrap();
    let applied = server.ok(&["apply", "-f", manifest.to_str().unwrap()]);
    for line in [
        "deployment.apps/web created",
        "service/web created",
        "configmap/settings created",
        "secret/token created",
        "job.batch/once created",
    ] {
        assert!(applied.contains(line), "{line} missing from {applied}");
    }
    std::fs::write(&manifest, app(3, "nginx:1.26")).unwrap();
    assert!(server.ok(&["apply", "-f", manifest.to_str().unwrap()]).contains("deployment.apps/web configured"));
    let deploy = server.ok(&[
        "get",
        "deploy",
        "web",
        "-n",
        "demo",
        "-o",
        "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} {.metadata.generation}",
    ]);
    assert_eq!(deploy, "3 nginx:1.26 2");
    let wide = server.ok(&["get", "deploy", "-n", "demo", "-o", "wide"]);
    assert!(wide.starts_with("NAME   READY   UP-TO-DATE   AVAILABLE   AGE   CONTAINERS   IMAGES       SELECTOR"), "{wide}");
    assert_eq!(server.ok(&["get", "secret", "token", "-n", "demo", "-o", "jsonpath={.data.token}"]), "czNjcjN0");

    // Services: the `kubernetes` Service holds the first address; others get the next free ones
    // and node ports; a taken address is upstream's 422.
    assert_eq!(server.ok(&["get", "svc", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP}"]), "10.0.0.1");
    let web_ip = server.ok(&["get", "svc", "web", "-n", "demo", "-o", "jsonpath={.spec.clusterIP}"]);
    assert!(web_ip.starts_with("10.0.0.") && web_ip != "10.0.0.1", "{web_ip}");
    server.ok(&["create", "service", "nodeport", "np", "-n", "demo", "--tcp=80:8080"]);
    let node_port = server.ok(&["get", "svc", "np", "-n", "demo", "-o", "jsonpath={.spec.ports[0].nodePort}"]);
    assert!((30000..=32767).contains(&node_port.parse::<u32>().unwrap()), "{node_port}");
    let err = server.fails(&["create", "service", "clusterip", "dup", "-n", "demo", "--tcp=80", &format!("--clusterip={web_ip}")]);
    assert!(err.contains("provided IP is already allocated"), "{err}");
    // A deleted Service's address is free again at once (it was still held for its create).
    server.ok(&["create", "service", "clusterip", "again", "-n", "demo", "--tcp=80", "--clusterip=10.0.0.200"]);
    server.ok(&["delete", "service", "again", "-n", "demo"]);
    server.ok(&["create", "service", "clusterip", "again", "-n", "demo", "--tcp=80", "--clusterip=10.0.0.200"]);

    // Server-side field validation: kubectl asks for Strict by default; Warn lets it through.
    let typo = dir.path().join("typo.yaml");
    std::fs::write(&typo, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: typo\n  namespace: demo\n  lables: {a: b}\n").unwrap();
    let err = server.fails(&["apply", "-f", typo.to_str().unwrap()]);
    assert!(
        err.contains(
            r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "metadata.lables""#
        ),
        "{err}"
    );
    let out = server.kubectl(&["apply", "-f", typo.to_str().unwrap(), "--validate=warn"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(r#"unknown field "metadata.lables""#));
    server.ok(&["delete", "cm", "typo", "-n", "demo"]);
    // Known fields that hold their zero values (which the typed object leaves out) are known.
    let zeros = dir.path().join("zeros.yaml");
    std::fs::write(
        &zeros,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: zeros, namespace: demo}\nspec:\n  hostNetwork: false\n  enableServiceLinks: false\n  \
         containers: [{name: a, image: x, tty: false, ports: [{containerPort: 80, hostPort: 0}]}]\n",
    )
    .unwrap();
    server.ok(&["apply", "-f", zeros.to_str().unwrap(), "--dry-run=server"]);

    // Selectors and paging.
    for i in 1..=5 {
        server.ok(&["create", "configmap", &format!("c{i}"), "-n", "demo", &format!("--from-literal=i={i}")]);
        server.ok(&["label", "configmap", &format!("c{i}"), "-n", "demo", &format!("idx={i}")]);
    }
    assert_eq!(server.ok(&["get", "cm", "-n", "demo", "-l", "idx in (2,4)", "-o", "name"]), "configmap/c2\nconfigmap/c4\n");
    assert_eq!(server.ok(&["get", "cm", "-n", "demo", "-l", "idx,idx!=5", "-o", "name"]).lines().count(), 4);
    assert_eq!(server.ok(&["get", "cm", "-n", "demo", "--field-selector", "metadata.name=c3", "-o", "name"]), "configmap/c3\n");
    let chunked = server.ok(&["get", "cm", "-n", "demo", "--chunk-size=2", "-o", "name"]);
    let all = server.ok(&["get", "cm", "-n", "demo", "-o", "name"]);
    assert_eq!(chunked, all);
    assert!(all.lines().count() >= 7, "{all}");
    let err = server.fails(&["get", "pods", "-n", "demo", "--field-selector", "spec.bogus=x"]);
    assert!(err.contains("field label not supported: spec.bogus"), "{err}");

    // Server-side dry run writes nothing; diff (a dry-run patch) shows the change and leaves the
    // object alone.
    let dry = server.ok(&["create", "configmap", "dry", "-n", "demo", "--from-literal=a=b", "--dry-run=server", "-o", "name"]);
    assert_eq!(dry.trim(), "configmap/dry");
    assert!(server.fails(&["get", "cm", "dry", "-n", "demo"]).contains("not found"));
    server.ok(&["delete", "configmap", "c1", "-n", "demo", "--dry-run=server"]);
    server.ok(&["get", "cm", "c1", "-n", "demo"]);
    std::fs::write(&manifest, app(4, "nginx:1.26")).unwrap();
    let diff = server.kubectl(&["diff", "-f", manifest.to_str().unwrap()]);
    assert_eq!(diff.status.code(), Some(1), "diff finds changes: {}", String::from_utf8_lossy(&diff.stderr));
    let diff = String::from_utf8(diff.stdout).unwrap();
    assert!(diff.contains("-  replicas: 3") && diff.contains("+  replicas: 4"), "{diff}");
    assert_eq!(server.ok(&["get", "deploy", "web", "-n", "demo", "-o", "jsonpath={.spec.replicas}"]), "3");

    // label, annotate, the three patch types, scale, edit.
    server.ok(&["label", "cm", "settings", "-n", "demo", "tier=web"]);
    server.ok(&["annotate", "cm", "settings", "-n", "demo", "note=hi"]);
    server.ok(&["patch", "cm", "settings", "-n", "demo", "--type=merge", "-p", r#"{"data":{"extra":"1"}}"#]);
    server.ok(&["patch", "cm", "settings", "-n", "demo", "--type=json", "-p", r#"[{"op":"remove","path":"/data/mode"}]"#]);
    server.ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        "demo",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"A","value":"b"}]}]}}}}"#,
    ]);
    let cm =
        server.ok(&["get", "cm", "settings", "-n", "demo", "-o", "jsonpath={.metadata.labels.tier} {.metadata.annotations.note} {.data}"]);
    assert_eq!(cm, r#"web hi {"extra":"1"}"#);
    let container = server.ok(&[
        "get",
        "deploy",
        "web",
        "-n",
        "demo",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].env[0].value}",
    ]);
    assert_eq!(container, "nginx:1.26 b", "strategic merge kept the image and added env");
    server.ok(&["scale", "deploy", "web", "-n", "demo", "--replicas=5"]);
    assert_eq!(server.ok(&["get", "deploy", "web", "-n", "demo", "-o", "jsonpath={.spec.replicas}"]), "5");
    let edited = Command::new("kubectl")
        .args(["edit", "cm", "settings", "-n", "demo"])
        .env("KUBECONFIG", server.kubeconfig())
        .env("KUBE_EDITOR", "sed -i s/tier:\\ web/tier:\\ edited/")
        .output()
        .unwrap();
    assert!(edited.status.success(), "{}", String::from_utf8_lossy(&edited.stderr));
    assert_eq!(server.ok(&["get", "cm", "settings", "-n", "demo", "-o", "jsonpath={.metadata.labels.tier}"]), "edited");
    let explain = server.ok(&["explain", "deployment.spec.strategy"]);
    assert!(explain.contains("FIELD: strategy <DeploymentStrategy>") && explain.contains("rollingUpdate"), "{explain}");

    // Finalizers: delete only marks the object; removing the last finalizer completes it.
    server.ok(&["create", "configmap", "held", "-n", "demo", "--from-literal=a=b"]);
    server.ok(&["patch", "cm", "held", "-n", "demo", "--type=merge", "-p", r#"{"metadata":{"finalizers":["example.com/hold"]}}"#]);
    server.ok(&["delete", "cm", "held", "-n", "demo", "--wait=false"]);
    let marked = server.ok(&["get", "cm", "held", "-n", "demo", "-o", "jsonpath={.metadata.deletionTimestamp}"]);
    assert!(marked.ends_with('Z'), "deletionTimestamp set: {marked}");
    server.ok(&["patch", "cm", "held", "-n", "demo", "--type=json", "-p", r#"[{"op":"remove","path":"/metadata/finalizers"}]"#]);
    assert!(server.fails(&["get", "cm", "held", "-n", "demo"]).contains("not found"));

    // Pods: no node runs them, so logs and exec get upstream's answer for an unscheduled pod.
    server.ok(&["run", "p1", "-n", "demo", "--image=nginx"]);
    assert!(server.ok(&["get", "pods", "-n", "demo"]).contains("Pending"));
    // Every namespace has its default ServiceAccount and CA bundle; pods run as it, with the
    // token volume mounted (upstream's ServiceAccount admission).
    assert_eq!(server.ok(&["get", "sa", "default", "-n", "demo", "-o", "name"]).trim(), "serviceaccount/default");
    let ca = server.ok(&["get", "cm", "kube-root-ca.crt", "-n", "demo", "-o", "jsonpath={.data.ca\\.crt}"]);
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    let p1: serde_json::Value = serde_json::from_str(&server.ok(&["get", "pod", "p1", "-n", "demo", "-o", "json"])).unwrap();
    assert_eq!(p1["spec"]["serviceAccountName"], "default");
    assert_eq!(p1["spec"]["containers"][0]["volumeMounts"][0]["mountPath"], "/var/run/secrets/kubernetes.io/serviceaccount");
    assert!(p1["spec"]["volumes"][0]["name"].as_str().unwrap().starts_with("kube-api-access-"), "{p1}");
    assert!(server.fails(&["logs", "p1", "-n", "demo"]).contains("pod p1 does not have a host assigned"));
    assert!(server.fails(&["exec", "p1", "-n", "demo", "--", "ls"]).contains("pod p1 does not have a host assigned"));
    let describe = server.ok(&["describe", "deployment", "web", "-n", "demo"]);
    // Upstream's layout, which the defaulted strategy widens (`RollingUpdateStrategy:`).
    assert!(describe.contains("Name:") && describe.contains("Selector:               app=web"), "{describe}");
    assert!(describe.contains("RollingUpdateStrategy:  25% max unavailable, 25% max surge"), "{describe}");
    let all = server.ok(&["get", "all", "-n", "demo"]);
    for line in ["pod/p1", "service/web", "deployment.apps/web", "job.batch/once"] {
        assert!(all.contains(line), "{line} missing from get all: {all}");
    }

    // Metrics with upstream's names and labels.
    let metrics = server.ok(&["get", "--raw", "/metrics"]);
    assert!(
        metrics.lines().any(|l| l.starts_with("apiserver_request_total{")
            && l.contains(r#"verb="LIST""#)
            && l.contains(r#"resource="configmaps""#)
            && l.contains(r#"code="200""#)),
        "{metrics}"
    );
    assert!(metrics.contains("apiserver_request_duration_seconds_bucket{"));
    // The server-side dry runs above are counted as such.
    assert!(
        metrics.lines().any(|l| l.starts_with("apiserver_request_total{")
            && l.contains(r#"dry_run="All""#)
            && l.contains(r#"verb="POST""#)
            && l.contains(r#"resource="configmaps""#)),
        "{metrics}"
    );

    // The reviews: answered, never stored (everything is allowed until RBAC exists).
    assert_eq!(server.ok(&["auth", "can-i", "create", "pods", "-n", "demo"]).trim(), "yes");
    let whoami = server.ok(&["auth", "whoami"]);
    assert!(whoami.contains("kubernetes-admin") && whoami.contains("system:authenticated"), "{whoami}");
    let rules = server.ok(&["auth", "can-i", "--list", "-n", "demo"]);
    assert!(rules.lines().any(|l| l.starts_with("*.*")), "{rules}");
    // Approving a certificate request goes through its approval subresource.
    let csr = dir.path().join("csr.yaml");
    std::fs::write(
        &csr,
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: alice}\nspec:\n  request: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K\n  signerName: example.com/signer\n  usages: [client auth]\n",
    )
    .unwrap();
    server.ok(&["create", "-f", csr.to_str().unwrap()]);
    server.ok(&["certificate", "approve", "alice"]);
    let csrs = server.ok(&["get", "csr", "alice"]);
    assert!(csrs.contains("kubernetes-admin") && csrs.contains("Approved"), "{csrs}");

    // Deleting a namespace deletes what is in it.
    server.ok(&["delete", "ns", "demo"]);
    assert!(server.fails(&["get", "ns", "demo"]).contains(r#"namespaces "demo" not found"#));
    // What is left are the CA bundles every namespace has.
    let config_maps = server.ok(&["get", "cm", "-A", "-o", "name"]);
    assert!(config_maps.lines().all(|l| l == "configmap/kube-root-ca.crt"), "{config_maps}");
    assert!(!server.ok(&["get", "cm", "-A"]).contains("demo"));
    assert!(server.ok(&["get", "deploy", "-A", "-o", "name"]).trim().is_empty());

    // Without a client certificate (a bearer token kapi does not know): 401 Unauthorized.
    let anonymous = dir.path().join("anonymous.kubeconfig");
    let port = std::fs::read_to_string(dir.path().join("port")).unwrap();
    std::fs::write(
        &anonymous,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: k\n  context:\n    cluster: k\n    user: u\nusers:\n- name: u\n  user:\n    token: not-a-known-token\ncurrent-context: k\n"
        ),
    )
    .unwrap();
    let out = Command::new("kubectl").args(["get", "ns", "--kubeconfig"]).arg(&anonymous).stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unauthorized"));
    server.stop();
}

/// A CustomResourceDefinition with two served versions, a status subresource, short names and
/// a category, written for the custom resource tests.
const WIDGETS_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    kind: Widget
    shortNames: [wd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Ready, type: string, jsonPath: .status.ready}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

/// kubectl creates a CustomResourceDefinition, which becomes Established and is discovered;
/// its objects are created, read in both served versions, patched (the status through its
/// subresource, which leaves `generation` alone), listed by category, kept across a restart,
/// and deleted with the definition.
#[test]
fn kubectl_serves_custom_resources() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let crd = dir.path().join("crd.yaml");
    std::fs::write(&crd, WIDGETS_CRD).unwrap();
    server.ok(&["apply", "-f", crd.to_str().unwrap()]);
    server.ok(&["wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=20s"]);
    let conditions = server.ok(&["get", "crd", "widgets.example.com", "-o", "jsonpath={.status.conditions[*].reason}"]);
    assert_eq!(conditions, "NoConflicts InitialNamesAccepted");
    assert_eq!(server.ok(&["get", "crd", "widgets.example.com", "-o", "jsonpath={.status.storedVersions}"]), r#"["v1"]"#);
    let resources = server.ok(&["api-resources", "--api-group", "example.com"]);
    let line = resources.lines().find(|l| l.starts_with("widgets ")).unwrap_or_else(|| panic!("{resources}"));
    assert_eq!(line.split_whitespace().collect::<Vec<_>>(), ["widgets", "wd", "example.com/v1", "true", "Widget"]);

    let widget = dir.path().join("widget.yaml");
    std::fs::write(&widget, "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: first\nspec:\n  size: 3\n").unwrap();
    assert_eq!(server.ok(&["apply", "-f", widget.to_str().unwrap()]).trim(), "widget.example.com/first created");
    assert_eq!(server.ok(&["get", "wd", "first", "-o", "jsonpath={.spec.size} {.metadata.generation}"]), "3 1");
    let beta: serde_json::Value =
        serde_json::from_str(&server.ok(&["get", "--raw", "/apis/example.com/v1beta1/namespaces/default/widgets/first"])).unwrap();
    assert_eq!((beta["apiVersion"].as_str(), beta["spec"]["size"].as_i64()), (Some("example.com/v1beta1"), Some(3)));

    server.ok(&["patch", "wd", "first", "--type", "merge", "-p", r#"{"spec":{"size":4},"status":{"ready":"ignored"}}"#]);
    assert_eq!(server.ok(&["get", "wd", "first", "-o", "jsonpath={.spec.size} {.metadata.generation} {.status}"]), "4 2 ");
    server.ok(&["patch", "wd", "first", "--subresource", "status", "--type", "merge", "-p", r#"{"status":{"ready":"yes"}}"#]);
    assert_eq!(server.ok(&["get", "wd", "first", "-o", "jsonpath={.metadata.generation} {.status.ready}"]), "2 yes");
    // The definition's printer columns, then the default Age alone for a version without any.
    let table = server.ok(&["get", "wd"]);
    assert_eq!(table.lines().next().unwrap().split_whitespace().collect::<Vec<_>>(), ["NAME", "SIZE", "READY", "AGE"], "{table}");
    assert_eq!(table.lines().nth(1).unwrap().split_whitespace().take(3).collect::<Vec<_>>(), ["first", "4", "yes"], "{table}");
    let beta = server.ok(&["get", "widgets.v1beta1.example.com"]);
    assert_eq!(beta.lines().next().unwrap().split_whitespace().collect::<Vec<_>>(), ["NAME", "AGE"], "{beta}");
    assert!(server.ok(&["explain", "wd"]).contains("KIND:       Widget"));
    let all = server.ok(&["get", "all", "-n", "default", "-o", "name"]);
    assert!(all.lines().any(|l| l == "widget.example.com/first"), "{all}");
    // The scale subresource writes the definition's replicas path.
    assert_eq!(server.ok(&["scale", "wd", "first", "--replicas=7"]).trim(), "widget.example.com/first scaled");
    assert_eq!(server.ok(&["get", "wd", "first", "-o", "jsonpath={.spec.size} {.metadata.generation}"]), "7 3");
    let scale: serde_json::Value =
        serde_json::from_str(&server.ok(&["get", "--raw", "/apis/example.com/v1/namespaces/default/widgets/first/scale"])).unwrap();
    assert_eq!((scale["kind"].as_str(), scale["spec"]["replicas"].as_i64()), (Some("Scale"), Some(7)));

    // Restarted, the server serves the stored definition and its objects at once.
    let dir_path = dir.path().to_path_buf();
    server.stop();
    let server = Server::start(&dir_path, &[]);
    assert_eq!(server.ok(&["get", "widgets", "-o", "name"]).trim(), "widget.example.com/first");

    // Deleting a namespace deletes the custom resources in it too.
    server.ok(&["create", "ns", "team"]);
    server.ok(&["apply", "-n", "team", "-f", widget.to_str().unwrap()]);
    server.ok(&["delete", "ns", "team", "--timeout=30s"]);
    let left: serde_json::Value =
        serde_json::from_str(&server.ok(&["get", "--raw", "/apis/example.com/v1/namespaces/team/widgets"])).unwrap();
    assert_eq!(left["items"], serde_json::json!([]), "{left}");

    // Deleting the definition deletes its objects first, then the definition.
    server.ok(&["delete", "crd", "widgets.example.com", "--timeout=30s"]);
    server.fails(&["get", "crd", "widgets.example.com"]);
    server.ok(&["apply", "-f", crd.to_str().unwrap()]);
    server.ok(&["wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=20s"]);
    let left = server.ok(&["get", "widgets", "-A", "-o", "name"]);
    assert!(left.trim().is_empty(), "objects outlived their definition: {left}");
}

/// A definition with two versions and a conversion webhook the test serves: kubectl writes
/// in one version and reads in the other (its short name, its printer columns from the newer
/// version), and deleting the definition deletes its objects.
#[test]
fn kubectl_converts_through_a_conversion_webhook() {
    let webhook = common::webhook::ConversionWebhook::start(|object, desired| {
        let mut converted = object.clone();
        let spec = converted["spec"].as_object_mut().ok_or("no spec")?;
        let (from, to) = if desired == "example.com/v2" { ("cronSpec", "schedule") } else { ("schedule", "cronSpec") };
        if let Some(value) = spec.remove(from) {
            spec.insert(to.into(), value);
        }
        converted["apiVersion"] = serde_json::json!(desired);
        Ok(converted)
    });
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let version = |name: &str, storage: bool, field: &str| {
        format!(
            "  - name: {name}\n    served: true\n    storage: {storage}\n    additionalPrinterColumns:\n    - name: When\n      type: string\n      jsonPath: .spec.{field}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              {field}:\n                type: string\n"
        )
    };
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: crontabs.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names:\n    plural: crontabs\n    singular: crontab\n    kind: CronTab\n    shortNames: [ct]\n  conversion:\n    strategy: Webhook\n    webhook:\n      conversionReviewVersions: [v1]\n      clientConfig:\n        url: {}\n        caBundle: {}\n  versions:\n{}{}",
        webhook.url,
        webhook.ca_bundle,
        version("v1", true, "cronSpec"),
        version("v2", false, "schedule"),
    );
    let crd_file = dir.path().join("crd.yaml");
    std::fs::write(&crd_file, crd).unwrap();
    server.ok(&["apply", "-f", crd_file.to_str().unwrap()]);
    server.ok(&["wait", "--for", "condition=established", "crd/crontabs.example.com", "--timeout=20s"]);
    let tab = dir.path().join("tab.yaml");
    std::fs::write(&tab, "apiVersion: example.com/v2\nkind: CronTab\nmetadata:\n  name: nightly\nspec:\n  schedule: 0 3 * * *\n").unwrap();
    assert_eq!(server.ok(&["apply", "-f", tab.to_str().unwrap()]).trim(), "crontab.example.com/nightly created");
    // The preferred version (v2) through the short name, its printer column included.
    let table = server.ok(&["get", "ct"]);
    assert_eq!(
        table.lines().nth(1).unwrap().split_whitespace().take(6).collect::<Vec<_>>(),
        ["nightly", "0", "3", "*", "*", "*"],
        "{table}"
    );
    // The stored version, as the webhook made it.
    assert_eq!(server.ok(&["get", "crontabs.v1.example.com", "nightly", "-o", "jsonpath={.spec.cronSpec}"]), "0 3 * * *");
    server.ok(&["patch", "crontabs.v1.example.com", "nightly", "--type", "merge", "-p", r#"{"spec":{"cronSpec":"0 4 * * *"}}"#]);
    assert_eq!(server.ok(&["get", "ct", "nightly", "-o", "jsonpath={.apiVersion} {.spec.schedule}"]), "example.com/v2 0 4 * * *");
    assert!(server.ok(&["explain", "ct.spec"]).contains("schedule"));
    server.ok(&["delete", "crd", "crontabs.example.com", "--timeout=30s"]);
    server.fails(&["get", "crd", "crontabs.example.com"]);
}

/// Every CustomResourceDefinition of `../shared/crds` (cert-manager, prometheus-operator, read
/// in place) is accepted and Established; objects written for them are served with their
/// printer columns, and `kubectl explain` reads their schemas.
#[test]
fn kubectl_serves_real_world_definitions() {
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/crds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&crds)
        .expect("../shared/crds beside the project")
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).into_iter().flatten())
        .map(|f| f.unwrap().path())
        .filter(|f| f.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 16, "{files:?}");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    for file in &files {
        // `create`: the largest carry more than the 256 KiB a client-side apply annotation holds.
        server.ok(&["create", "-f", file.to_str().unwrap()]);
    }
    server.ok(&["wait", "--for", "condition=established", "crd", "--all", "--timeout=30s"]);
    assert_eq!(server.ok(&["get", "crd", "-o", "name"]).lines().count(), files.len());

    let objects = dir.path().join("objects.yaml");
    std::fs::write(
        &objects,
        "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: selfsigned}\nspec: {selfSigned: {}}\n---\n\
         apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: demo}\n\
         spec: {secretName: demo-tls, dnsNames: [demo.example.com], issuerRef: {name: selfsigned, kind: Issuer}}\n---\n\
         apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: web}\n\
         spec: {selector: {matchLabels: {app: web}}, endpoints: [{port: http}]}\n",
    )
    .unwrap();
    server.ok(&["apply", "-f", objects.to_str().unwrap()]);
    let certificates = server.ok(&["get", "certificates", "-o", "wide"]);
    let header: Vec<&str> = certificates.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "SECRET", "ISSUER", "STATUS", "EXPIRATION", "AGE"], "{certificates}");
    assert!(certificates.lines().nth(1).unwrap().contains("demo-tls   selfsigned"), "{certificates}");
    assert_eq!(server.ok(&["get", "cert", "demo", "-o", "jsonpath={.spec.issuerRef.name}"]), "selfsigned");
    assert_eq!(server.ok(&["get", "servicemonitors", "-o", "name"]).trim(), "servicemonitor.monitoring.coreos.com/web");
    let explained = server.ok(&["explain", "certificate.spec.issuerRef"]);
    assert!(explained.contains("KIND:       Certificate") && explained.contains("FIELD: issuerRef <Object>"), "{explained}");
    let explained = server.ok(&["explain", "prometheus.spec.replicas"]);
    assert!(explained.contains("FIELD: replicas <integer>"), "{explained}");
}

/// The object's `managedFields` without their times (RFC 3339 in UTC where present: an apply
/// that changed nothing leaves none, as upstream).
fn managed_fields_of(object: &serde_json::Value) -> serde_json::Value {
    let mut entries = object["metadata"]["managedFields"].clone();
    for entry in entries.as_array_mut().into_iter().flatten() {
        if let Some(time) = entry.as_object_mut().unwrap().remove("time") {
            assert!(time.as_str().is_some_and(|t| t.ends_with('Z')), "{entry}");
        }
    }
    entries
}

/// Server-side apply through the real kubectl: create and update (`--server-side`), a
/// conflict with another `--field-manager` and `--force-conflicts`, `diff --server-side`,
/// `get --show-managed-fields`, and a client-side apply followed by a server-side one
/// (upstream lets kubectl take what its client-side apply set, keeps the annotation in step,
/// and kubectl then folds its client-side manager into its applier).
#[test]
fn kubectl_applies_server_side() {
    use serde_json::{Value, json};
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let get = |name: &str| -> Value {
        serde_json::from_str(&server.ok(&["get", "cm", name, "-n", "default", "-o", "json", "--show-managed-fields"])).unwrap()
    };
    let write = |file: &str, name: &str, data: &str| {
        let path = dir.path().join(file);
        std::fs::write(&path, format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n{data}"))
            .unwrap();
        path.to_str().unwrap().to_owned()
    };

    let mine = write("mine.yaml", "ssa", "  a: \"1\"\n");
    assert_eq!(server.ok(&["apply", "--server-side", "-f", &mine]).trim(), "configmap/ssa serverside-applied");
    // The applied set: the configuration's fields, identity excluded (upstream's strip set).
    let entry = |manager: &str, operation: &str, fields: Value| json!({"manager": manager, "operation": operation, "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields});
    assert_eq!(managed_fields_of(&get("ssa")), json!([entry("kubectl", "Apply", json!({"f:data": {"f:a": {}}}))]));
    let plain: Value = serde_json::from_str(&server.ok(&["get", "cm", "ssa", "-o", "json"])).unwrap();
    assert!(plain["metadata"].get("managedFields").is_none(), "kubectl hides them without --show-managed-fields");

    let mine = write("mine.yaml", "ssa", "  a: \"1\"\n  b: \"2\"\n");
    assert_eq!(server.ok(&["apply", "--server-side", "-f", &mine]).trim(), "configmap/ssa serverside-applied");
    let theirs = write("theirs.yaml", "ssa", "  a: \"9\"\n");
    let err = server.fails(&["apply", "--server-side", "--field-manager", "other", "-f", &theirs]);
    assert!(err.contains(r#"Apply failed with 1 conflict: conflict with "kubectl": .data.a"#), "{err}");
    server.ok(&["apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", &theirs]);
    let now = get("ssa");
    assert_eq!(now["data"], json!({"a": "9", "b": "2"}));
    let fields = managed_fields_of(&now);
    let owned = |manager: &str| fields.as_array().unwrap().iter().find(|e| e["manager"] == manager).map(|e| e["fieldsV1"].clone());
    assert_eq!(owned("kubectl"), Some(json!({"f:data": {"f:b": {}}})));
    assert_eq!(owned("other"), Some(json!({"f:data": {"f:a": {}}})));

    // diff --server-side: a dry-run apply; exit code 1 with the difference, nothing written.
    let next = write("next.yaml", "ssa", "  a: \"10\"\n");
    let diff = server.kubectl(&["diff", "--server-side", "--field-manager", "other", "-f", &next]);
    let out = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(diff.status.code(), Some(1), "{out}{}", String::from_utf8_lossy(&diff.stderr));
    assert!(out.contains("-  a: \"9\"") && out.contains("+  a: \"10\""), "{out}");
    assert_eq!(get("ssa")["data"]["a"], "9");

    // Client-side apply, then server-side: no conflict over what the client-side apply set.
    let csa = write("csa.yaml", "csa", "  x: \"1\"\n");
    server.ok(&["apply", "-f", &csa]);
    assert_eq!(
        managed_fields_of(&get("csa")),
        json!([entry(
            "kubectl-client-side-apply",
            "Update",
            json!({
                "f:data": {".": {}, "f:x": {}},
                "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}},
            })
        )])
    );
    let csa = write("csa.yaml", "csa", "  x: \"2\"\n");
    assert_eq!(server.ok(&["apply", "--server-side", "-f", &csa]).trim(), "configmap/csa serverside-applied");
    let migrated = get("csa");
    assert_eq!(migrated["data"], json!({"x": "2"}));
    let annotation = migrated["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].as_str().unwrap_or_default();
    assert!(annotation.contains(r#""x":"2""#), "the annotation follows the applied configuration: {annotation}");
    // After its apply, kubectl applies the annotation alone as `kubectl-last-applied` (which
    // changes nothing: no time), folds the client-side manager's fields into its applier's with
    // a JSON patch of managedFields, and applies again, which prunes nothing (the annotation is
    // owned) and leaves its applier the configuration's fields.
    assert_eq!(
        managed_fields_of(&migrated),
        json!([
            entry(
                "kubectl-last-applied",
                "Apply",
                json!({"f:metadata": {"f:annotations": {"f:kubectl.kubernetes.io/last-applied-configuration": {}}}})
            ),
            entry("kubectl", "Apply", json!({"f:data": {"f:x": {}}})),
        ])
    );
}
