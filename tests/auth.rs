//! Authentication and authorization against a started `kapi serve`: the RBAC matrix (four
//! identities — a client certificate, a static token, a service-account token, anonymous —
//! across verbs and resources, namespaced and cluster-wide, with a subresource, resourceNames
//! and non-resource URLs), each cell a real request and `kubectl auth can-i` agreeing; and
//! kubectl end to end: a token user within and outside its role, `create token`, `auth
//! whoami`, `--as`, escalation refused, and bad credentials refused with nothing written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine;
use serde_json::{Value, json};

mod common;

use common::{Client, Server};

const ALICE_TOKEN: &str = "alice-token-0123456789";
const NS: &str = "team";

/// The policy the matrix runs against, created by the admin.
const POLICY: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: team}
- apiVersion: v1
  kind: ServiceAccount
  metadata: {name: robot, namespace: team}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: Role
  metadata: {name: pod-reader, namespace: team}
  rules:
  - {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
  - {apiGroups: [""], resources: [pods/log], verbs: [get]}
  - {apiGroups: [""], resources: [secrets], resourceNames: [s1], verbs: [get, list, watch]}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: Role
  metadata: {name: cm-editor, namespace: team}
  rules:
  - {apiGroups: [""], resources: [configmaps], verbs: ["*"]}
  - {apiGroups: [""], resources: [secrets], resourceNames: [s1], verbs: [get, update, patch, delete]}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata: {name: node-viewer}
  rules:
  - {apiGroups: [""], resources: [nodes], verbs: [get, list, watch]}
  - {apiGroups: [""], resources: [namespaces], verbs: [get]}
  - {nonResourceURLs: [/metrics, /logs/*], verbs: [get]}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {name: pod-readers, namespace: team}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
  subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}
  - {kind: ServiceAccount, name: robot}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {name: cm-editors, namespace: team}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-editor}
  subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRoleBinding
  metadata: {name: node-viewers}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-viewer}
  subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: qa}
  - {kind: ServiceAccount, name: robot, namespace: team}
"#;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Who {
    Carol,
    Alice,
    Robot,
    Anonymous,
}

/// A started server with the matrix's identities.
struct Cluster {
    server: Server,
    dir: PathBuf,
    _tmp: tempfile::TempDir,
    carol_cert: (Vec<u8>, Vec<u8>),
    robot_token: String,
}

fn kapi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kapi")).args(args).output().unwrap()
}

/// A kubeconfig for kubelet `node` (user `system:node:<node>` in `system:nodes`), signed by
/// the CA of the server whose data dir is `data`, written under `into`.
fn node_kubeconfig(data: &Path, into: &Path, node: &str) -> PathBuf {
    let user = format!("system:node:{node}");
    let out = kapi(&["kubeconfig", "--user", &user, "--group", "system:nodes", "--data-dir", data.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let path = into.join(format!("{node}.kubeconfig"));
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new("kubectl").args(args).env("KUBECONFIG", kubeconfig).output().expect("running kubectl")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn ok(kubeconfig: &Path, args: &[&str]) -> String {
    let out = kubectl(kubeconfig, args);
    assert!(out.status.success(), "kubectl {args:?} failed: {}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn fails(kubeconfig: &Path, args: &[&str]) -> String {
    let out = kubectl(kubeconfig, args);
    assert!(!out.status.success(), "kubectl {args:?} should fail: {}", text(&out));
    String::from_utf8(out.stderr).unwrap()
}

fn start() -> Cluster {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = tmp.path().join("tokens.csv");
    std::fs::write(&tokens, format!("{ALICE_TOKEN},alice,uid-alice,\"dev\"\n")).unwrap();
    let server = common::start_with(&dir, &["--token-auth-file", tokens.to_str().unwrap()]);
    server.wait_ready();
    let admin = dir.join("admin.kubeconfig");
    let policy = tmp.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    ok(&admin, &["apply", "-f", policy.to_str().unwrap()]);
    // carol: a client certificate from `kapi kubeconfig`, in group qa.
    let out = kapi(&["kubeconfig", "--user", "carol", "--group", "qa", "--data-dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let config: Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    let b64 = |v: &Value| base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap();
    let user = &config["users"][0]["user"];
    let carol_cert = (b64(&user["client-certificate-data"]), b64(&user["client-key-data"]));
    std::fs::write(dir.join("carol.kubeconfig"), &out.stdout).unwrap();
    let robot_token = ok(&admin, &["create", "token", "robot", "-n", NS]).trim().to_owned();
    let cluster = Cluster { server, dir, _tmp: tmp, carol_cert, robot_token };
    // The RBAC cache follows the writes asynchronously: wait until it has the bindings.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while cluster.request(Who::Alice, "GET", &format!("/api/v1/namespaces/{NS}/configmaps"), &[], b"").0 != 200 {
        assert!(std::time::Instant::now() < deadline, "alice's binding never took effect");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for who in [Who::Alice, Who::Robot, Who::Anonymous] {
        cluster.write_kubeconfig(who);
    }
    cluster
}

impl Cluster {
    fn admin(&self) -> PathBuf {
        self.dir.join("admin.kubeconfig")
    }

    fn client(&self, who: Who) -> (Client, Option<String>) {
        match who {
            Who::Carol => (self.server.client(Some((&self.carol_cert.0, &self.carol_cert.1))), None),
            Who::Alice => (self.server.client(None), Some(ALICE_TOKEN.to_owned())),
            Who::Robot => (self.server.client(None), Some(self.robot_token.clone())),
            Who::Anonymous => (self.server.client(None), None),
        }
    }

    fn request(&self, who: Who, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Value) {
        let (client, token) = self.client(who);
        let bearer = token.map(|t| format!("Bearer {t}"));
        let mut all: Vec<(&str, &str)> = vec![("Accept", "application/json")];
        if let Some(b) = &bearer {
            all.push(("Authorization", b));
        }
        all.extend_from_slice(headers);
        let (code, body) = client.request(method, path, &all, body);
        (code, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    fn kubeconfig(&self, who: Who) -> PathBuf {
        self.dir.join(format!("{who:?}.kubeconfig").to_lowercase())
    }

    /// A kubeconfig for the identity: the admin's cluster, with a token or nothing.
    fn write_kubeconfig(&self, who: Who) {
        let admin: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(self.admin()).unwrap()).unwrap();
        let user = match who {
            Who::Alice => json!({"token": ALICE_TOKEN}),
            Who::Robot => json!({"token": self.robot_token}),
            _ => json!({}),
        };
        let config = json!({
            "apiVersion": "v1", "kind": "Config",
            "clusters": admin["clusters"],
            "contexts": [{"name": "c", "context": {"cluster": admin["clusters"][0]["name"], "user": "u"}}],
            "current-context": "c",
            "users": [{"name": "u", "user": user}],
        });
        std::fs::write(self.kubeconfig(who), serde_yaml_ng::to_string(&config).unwrap()).unwrap();
    }
}

/// One resource of the matrix: its collection path, an object path, and how kubectl names it.
struct Resource {
    name: &'static str,
    collection: String,
    object: String,
    /// kubectl auth can-i arguments (resource, name, flags).
    can_i: Vec<&'static str>,
    /// An object body for writes.
    body: Value,
}

fn resources() -> Vec<Resource> {
    let ns = |rest: &str| format!("/api/v1/namespaces/{NS}/{rest}");
    vec![
        Resource {
            name: "pods",
            collection: ns("pods"),
            object: ns("pods/p1"),
            can_i: vec!["pods/p1", "-n", NS],
            body: json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
        },
        Resource {
            name: "pods/log",
            collection: String::new(),
            object: ns("pods/p1/log"),
            can_i: vec!["pods/p1", "--subresource=log", "-n", NS],
            body: json!({}),
        },
        Resource {
            name: "configmaps",
            collection: ns("configmaps"),
            object: ns("configmaps/c1"),
            can_i: vec!["configmaps/c1", "-n", NS],
            body: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}}),
        },
        Resource {
            name: "secrets/s1",
            collection: format!("{}?fieldSelector=metadata.name%3Ds1", ns("secrets")),
            object: ns("secrets/s1"),
            can_i: vec!["secrets/s1", "-n", NS],
            body: json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}}),
        },
        Resource {
            name: "nodes",
            collection: "/api/v1/nodes".into(),
            object: "/api/v1/nodes/n1".into(),
            can_i: vec!["nodes/n1"],
            body: json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
        },
        Resource {
            name: "namespaces",
            collection: "/api/v1/namespaces".into(),
            object: format!("/api/v1/namespaces/{NS}"),
            can_i: vec!["namespaces/team"],
            body: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
        },
        Resource {
            name: "pods (all namespaces)",
            collection: "/api/v1/pods".into(),
            object: String::new(),
            can_i: vec!["pods", "--all-namespaces"],
            body: json!({}),
        },
    ]
}

const VERBS: [&str; 8] = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"];

/// What the policy above grants.
fn expected(who: Who, verb: &str, resource: &str) -> bool {
    let read = ["get", "list", "watch"].contains(&verb);
    match (who, resource) {
        (Who::Carol | Who::Robot, "pods") => read,
        (Who::Carol | Who::Robot, "pods/log") => verb == "get",
        (Who::Carol | Who::Robot, "secrets/s1") => read,
        (Who::Carol | Who::Robot, "nodes") => read,
        (Who::Carol | Who::Robot, "namespaces") => verb == "get",
        (Who::Alice, "configmaps") => true,
        (Who::Alice, "secrets/s1") => ["get", "update", "patch", "delete"].contains(&verb),
        _ => false,
    }
}

/// The request that asks for `verb` on the resource (dry-run writes), if a URL can express it.
fn real_request(verb: &str, r: &Resource) -> Option<(&'static str, String, Vec<u8>, &'static str)> {
    let json = "application/json";
    let body = serde_json::to_vec(&r.body).unwrap();
    let with = |path: &str, query: &str| if path.contains('?') { format!("{path}&{query}") } else { format!("{path}?{query}") };
    let object = (!r.object.is_empty()).then_some(r.object.as_str());
    let collection = (!r.collection.is_empty()).then_some(r.collection.as_str());
    Some(match verb {
        "get" => ("GET", object?.to_owned(), Vec::new(), json),
        "list" => ("GET", collection?.to_owned(), Vec::new(), json),
        "watch" => ("GET", with(collection?, "watch=1&timeoutSeconds=1"), Vec::new(), json),
        "create" => ("POST", with(collection.or(object)?, "dryRun=All"), body, json),
        "update" => ("PUT", with(object?, "dryRun=All"), body, json),
        "patch" => ("PATCH", with(object?, "dryRun=All"), b"{}".to_vec(), "application/merge-patch+json"),
        "delete" => ("DELETE", with(object?, "dryRun=All"), Vec::new(), json),
        "deletecollection" => ("DELETE", with(collection?, "dryRun=All"), Vec::new(), json),
        _ => return None,
    })
}

#[test]
fn rbac_matrix_requests_and_can_i_agree() {
    let cluster = start();
    let admin = cluster.admin();
    // The objects the reads find (a pod for its log, the secret s1).
    ok(&admin, &["create", "secret", "generic", "s1", "-n", NS]);
    let mut cells = 0;
    let mut failures = Vec::new();
    let whos = [Who::Carol, Who::Alice, Who::Robot, Who::Anonymous];
    for r in resources() {
        for verb in VERBS {
            // A create of pods/log is a POST to the object's log path.
            let verb_for_url = verb;
            for who in whos {
                let want = expected(who, verb, r.name);
                let Some((method, path, body, content_type)) = real_request(verb_for_url, &r) else { continue };
                cells += 1;
                let (code, answer) = cluster.request(who, method, &path, &[("Content-Type", content_type)], &body);
                let allowed = code != 403 && code != 401;
                if allowed != want {
                    failures.push(format!("{who:?} {verb} {}: {method} {path} answered {code} {answer}", r.name));
                }
                if !want {
                    // Upstream's wording, and 401 never for a known identity.
                    let message = answer["message"].as_str().unwrap_or_default().to_owned();
                    let user = match who {
                        Who::Carol => "carol".to_owned(),
                        Who::Alice => "alice".to_owned(),
                        Who::Robot => "system:serviceaccount:team:robot".to_owned(),
                        Who::Anonymous => "system:anonymous".to_owned(),
                    };
                    if code != 403 || !message.contains(&format!("User \"{user}\" cannot {verb} resource")) {
                        failures.push(format!("{who:?} {verb} {}: {code} {message}", r.name));
                    }
                }
            }
        }
    }
    assert!(cells >= 4 * 8 * 6, "only {cells} cells");
    assert!(failures.is_empty(), "{} of {cells} cells wrong:\n{}", failures.len(), failures.join("\n"));
    // Nothing a denied request asked for was written (all writes were dry runs anyway, and the
    // store has no pod p1 or node n1).
    assert!(fails(&admin, &["get", "node", "n1"]).contains("NotFound"));

    // kubectl auth can-i agrees, cell by cell (every verb, the subresource and cluster-wide
    // included), run a few at a time.
    let mut asks = Vec::new();
    for r in resources() {
        for verb in VERBS {
            for who in [Who::Carol, Who::Alice, Who::Robot] {
                asks.push((who, verb, r.name, r.can_i.clone()));
            }
        }
    }
    let wrong = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for chunk in asks.chunks(asks.len().div_ceil(6)) {
            let (cluster, wrong) = (&cluster, &wrong);
            scope.spawn(move || {
                for (who, verb, name, args) in chunk {
                    let kubeconfig = match who {
                        Who::Carol => cluster.dir.join("carol.kubeconfig"),
                        other => cluster.kubeconfig(*other),
                    };
                    let mut all = vec!["auth", "can-i", *verb];
                    all.extend(args.iter().copied());
                    let out = kubectl(&kubeconfig, &all);
                    let answer = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                    let want = if expected(*who, verb, name) { "yes" } else { "no" };
                    if answer != want {
                        wrong.lock().unwrap().push(format!("{who:?} can-i {verb} {name}: {answer} ({})", text(&out)));
                    }
                }
            });
        }
    });
    let wrong = wrong.into_inner().unwrap();
    assert!(wrong.is_empty(), "kubectl auth can-i disagrees:\n{}", wrong.join("\n"));

    // Anonymous may not ask (system:basic-user is for authenticated users), as upstream (and
    // kubectl without credentials prompts for a password): a SubjectAccessReview by the admin
    // answers for it instead.
    let ssar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": NS}}});
    let (code, answer) = cluster.request(
        Who::Anonymous,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &[("Content-Type", "application/json")],
        ssar.to_string().as_bytes(),
    );
    assert_eq!(code, 403, "{answer}");
    assert_eq!(
        answer["message"],
        "selfsubjectaccessreviews.authorization.k8s.io is forbidden: User \"system:anonymous\" cannot create resource \"selfsubjectaccessreviews\" in API group \"authorization.k8s.io\" at the cluster scope"
    );
    for (verb, resource, group, want) in [("get", "pods", "", false), ("get", "nodes", "", false)] {
        let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "system:anonymous", "groups": ["system:unauthenticated"],
                     "resourceAttributes": {"verb": verb, "resource": resource, "group": group, "namespace": NS}}});
        let (code, answer) = cluster.request(
            Who::Carol,
            "POST",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &[("Content-Type", "application/json")],
            review.to_string().as_bytes(),
        );
        assert_eq!(code, 403, "carol may not create SubjectAccessReviews: {answer}");
        let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
        let (code, body) = common::request(&cluster.server, "POST", path, "application/json", review.to_string().as_bytes());
        assert_eq!(code, 201, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["status"]["allowed"], want, "{answer}");
    }

    // Non-resource URLs: the bootstrap policy's public paths, node-viewer's `/metrics` and
    // `/logs/*`, discovery for authenticated users only.
    for (who, path, want) in [
        (Who::Anonymous, "/healthz", true),
        (Who::Anonymous, "/version", true),
        (Who::Anonymous, "/api", false),
        (Who::Anonymous, "/metrics", false),
        (Who::Alice, "/api", true),
        (Who::Alice, "/metrics", false),
        (Who::Carol, "/metrics", true),
        (Who::Carol, "/logs/kube.log", true),
        (Who::Robot, "/metrics", true),
        (Who::Robot, "/readyz", true),
    ] {
        let (code, answer) = cluster.request(who, "GET", path, &[], b"");
        assert_eq!(code != 403, want, "{who:?} GET {path}: {code} {answer}");
        if !want {
            let user = if who == Who::Anonymous { "system:anonymous" } else { "alice" };
            assert_eq!(answer["message"], format!("forbidden: User \"{user}\" cannot get path \"{path}\""));
        }
        if who != Who::Anonymous {
            let kubeconfig = if who == Who::Carol { cluster.dir.join("carol.kubeconfig") } else { cluster.kubeconfig(who) };
            let out = kubectl(&kubeconfig, &["auth", "can-i", "get", path]);
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), if want { "yes" } else { "no" }, "{who:?} can-i get {path}");
        }
    }

    // can-i --list: what the rules review gives.
    let list = ok(&cluster.kubeconfig(Who::Alice), &["auth", "can-i", "--list", "-n", NS]);
    assert!(list.contains("configmaps") && list.contains("[s1]"), "{list}");
    assert!(list.contains("selfsubjectaccessreviews.authorization.k8s.io"), "{list}");
}

#[test]
fn kubectl_identities_tokens_impersonation_and_escalation() {
    let cluster = start();
    let admin = cluster.admin();
    let alice = cluster.kubeconfig(Who::Alice);
    let carol = cluster.dir.join("carol.kubeconfig");

    // A token user within and outside its role.
    ok(&alice, &["create", "configmap", "mine", "-n", NS, "--from-literal=a=b"]);
    assert!(ok(&alice, &["get", "configmaps", "-n", NS]).contains("mine"));
    let denied = fails(&alice, &["get", "pods", "-n", NS]);
    assert!(
        denied.contains(r#"Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "team""#),
        "{denied}"
    );
    let denied = fails(&alice, &["get", "deployments.apps", "-A"]);
    assert!(
        denied.contains(
            r#"deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" at the cluster scope"#
        ),
        "{denied}"
    );

    // whoami for each identity.
    let whoami = |kubeconfig: &Path| ok(kubeconfig, &["auth", "whoami", "-o", "json"]);
    let me: Value = serde_json::from_str(&whoami(&admin)).unwrap();
    assert_eq!(me["status"]["userInfo"]["username"], "kubernetes-admin");
    assert_eq!(me["status"]["userInfo"]["groups"], json!(["system:masters", "system:authenticated"]));
    let me: Value = serde_json::from_str(&whoami(&alice)).unwrap();
    assert_eq!(me["status"]["userInfo"], json!({"username": "alice", "uid": "uid-alice", "groups": ["dev", "system:authenticated"]}));
    let me: Value = serde_json::from_str(&whoami(&carol)).unwrap();
    assert_eq!(me["status"]["userInfo"]["username"], "carol");

    // create token, then use it.
    let robot = cluster.kubeconfig(Who::Robot);
    let me: Value = serde_json::from_str(&whoami(&robot)).unwrap();
    assert_eq!(me["status"]["userInfo"]["username"], "system:serviceaccount:team:robot");
    assert_eq!(
        me["status"]["userInfo"]["groups"],
        json!(["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"])
    );
    assert!(me["status"]["userInfo"]["extra"]["authentication.kubernetes.io/credential-id"][0].as_str().unwrap().starts_with("JTI="));
    ok(&robot, &["get", "pods", "-n", NS]);
    let fresh = ok(&admin, &["create", "token", "robot", "-n", NS, "--duration", "20m"]).trim().to_owned();
    let out = kubectl(&admin, &["--token", &fresh, "--kubeconfig", robot.to_str().unwrap(), "get", "pods", "-n", NS]);
    assert!(out.status.success(), "{}", text(&out));
    let short = fails(&admin, &["create", "token", "robot", "-n", NS, "--duration", "5m"]);
    assert!(short.contains("may not specify a duration less than 10 minutes"), "{short}");

    // --as: the admin may impersonate anyone; alice only whom a role lets her.
    let denied = fails(&admin, &["get", "pods", "-n", NS, "--as", "alice"]);
    assert!(denied.contains(r#"User "alice" cannot list resource "pods""#), "{denied}");
    ok(&admin, &["get", "pods", "-n", NS, "--as", "carol"]);
    let me: Value = serde_json::from_str(&ok(&admin, &["auth", "whoami", "-o", "json", "--as", "carol", "--as-group", "qa"])).unwrap();
    assert_eq!(me["status"]["userInfo"]["username"], "carol");
    assert_eq!(me["status"]["userInfo"]["groups"], json!(["qa", "system:authenticated"]));
    let denied = fails(&alice, &["get", "pods", "-n", NS, "--as", "carol"]);
    assert!(
        denied.contains(
            r#"users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
        ),
        "{denied}"
    );
    ok(&admin, &["create", "clusterrole", "impersonate-carol", "--verb=impersonate", "--resource=users", "--resource-name=carol"]);
    ok(&admin, &["create", "clusterrolebinding", "alice-impersonates", "--clusterrole=impersonate-carol", "--user=alice"]);
    wait_until(|| kubectl(&alice, &["get", "pods", "-n", NS, "--as", "carol"]).status.success());
    let denied = fails(&alice, &["get", "pods", "-n", NS, "--as", "bob"]);
    assert!(denied.contains(r#"users "bob" is forbidden"#), "{denied}");
    let denied = fails(&alice, &["get", "pods", "-n", NS, "--as", "carol", "--as-group", "system:masters"]);
    assert!(denied.contains(r#"groups "system:masters" is forbidden"#), "{denied}");

    // Escalation: alice may write roles and bindings in team, but only with what she holds.
    ok(&admin, &["create", "role", "role-maker", "-n", NS, "--verb=create,update,get", "--resource=roles,rolebindings"]);
    ok(&admin, &["create", "rolebinding", "alice-makes-roles", "-n", NS, "--role=role-maker", "--user=alice"]);
    wait_until(|| String::from_utf8_lossy(&kubectl(&alice, &["auth", "can-i", "create", "roles", "-n", NS]).stdout).trim() == "yes");
    ok(&alice, &["create", "role", "cm-reader", "-n", NS, "--verb=get,list", "--resource=configmaps"]);
    let refused = fails(&alice, &["create", "role", "secret-reader", "-n", NS, "--verb=list", "--resource=secrets"]);
    assert!(
        refused.contains(r#"roles.rbac.authorization.k8s.io "secret-reader" is forbidden: user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#)
            && refused.contains(r#"{APIGroups:[""], Resources:["secrets"], Verbs:["list"]}"#),
        "{refused}"
    );
    let refused = fails(&alice, &["create", "rolebinding", "alice-reads-pods", "-n", NS, "--role=pod-reader", "--user=alice"]);
    assert!(refused.contains("is attempting to grant RBAC permissions not currently held"), "{refused}");
    wait_until(|| {
        kubectl(&alice, &["create", "rolebinding", "dev-reads-cm", "-n", NS, "--role=cm-reader", "--group=dev"]).status.success()
    });
    assert!(fails(&admin, &["get", "role", "secret-reader", "-n", NS]).contains("NotFound"));
}

fn wait_until(mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !check() {
        assert!(std::time::Instant::now() < deadline, "condition never held");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A service-account token signed with the server's key, with `claims` changed.
fn forged(dir: &Path, change: impl FnOnce(&mut Value)) -> String {
    let key = std::fs::read(dir.join("pki").join("sa.key")).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let mut claims = json!({
        "aud": ["https://kubernetes.default.svc.cluster.local"],
        "exp": now + 3600, "iat": now, "nbf": now,
        "iss": "https://kubernetes.default.svc.cluster.local",
        "kubernetes.io": {"namespace": NS, "serviceaccount": {"name": "robot", "uid": "x"}},
        "sub": "system:serviceaccount:team:robot",
    });
    change(&mut claims);
    let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    jsonwebtoken::encode(&header, &claims, &jsonwebtoken::EncodingKey::from_ec_pem(&key).unwrap()).unwrap()
}

#[test]
fn bad_credentials_are_401_with_nothing_written() {
    let cluster = start();
    let admin = cluster.admin();
    let robot_uid = ok(&admin, &["get", "sa", "robot", "-n", NS, "-o", "jsonpath={.metadata.uid}"]);
    let valid = forged(&cluster.dir, |c| c["kubernetes.io"]["serviceaccount"]["uid"] = json!(robot_uid));
    let (client, _) = cluster.client(Who::Anonymous);
    let me = |token: &str| {
        let bearer = format!("Bearer {token}");
        let (code, body) = client.request(
            "POST",
            &format!("/api/v1/namespaces/{NS}/configmaps"),
            &[("Authorization", &bearer), ("Content-Type", "application/json"), ("Accept", "application/json")],
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"written"}}"#,
        );
        (code, String::from_utf8_lossy(&body).into_owned())
    };
    // A token the server signed authenticates (robot may not create config maps: 403).
    assert_eq!(me(&valid).0, 403);
    let mut bad = vec![
        ("garbage", "not-a-token".to_owned()),
        ("huge", "x".repeat(100_000)),
        (
            "expired",
            forged(&cluster.dir, |c| {
                c["kubernetes.io"]["serviceaccount"]["uid"] = json!(robot_uid);
                c["exp"] = json!(1_000_000_000);
                c["nbf"] = json!(999_000_000);
            }),
        ),
        (
            "wrong audience",
            forged(&cluster.dir, |c| {
                c["kubernetes.io"]["serviceaccount"]["uid"] = json!(robot_uid);
                c["aud"] = json!(["vault"]);
            }),
        ),
        (
            "wrong issuer",
            forged(&cluster.dir, |c| {
                c["kubernetes.io"]["serviceaccount"]["uid"] = json!(robot_uid);
                c["iss"] = json!("https://elsewhere");
            }),
        ),
        ("stale uid", forged(&cluster.dir, |_| {})),
    ];
    // A character in the middle of the signature changed (the last one may carry only padding).
    let at = valid.rfind('.').unwrap() + 10;
    let flipped = if &valid[at..=at] == "A" { "B" } else { "A" };
    let tampered = format!("{}{flipped}{}", &valid[..at], &valid[at + 1..]);
    bad.push(("bad signature", tampered));
    // Tokens of a deleted account and of a deleted pod.
    ok(&admin, &["create", "serviceaccount", "temp", "-n", NS]);
    let temp = ok(&admin, &["create", "token", "temp", "-n", NS]).trim().to_owned();
    ok(&admin, &["run", "p", "-n", NS, "--image=x", "--overrides={\"spec\":{\"serviceAccountName\":\"robot\"}}"]);
    let pod_bound =
        ok(&admin, &["create", "token", "robot", "-n", NS, "--bound-object-kind=Pod", "--bound-object-name=p"]).trim().to_owned();
    assert_eq!(me(&temp).0, 403);
    let who: Value = {
        let bearer = format!("Bearer {pod_bound}");
        let (code, body) = client.request(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &[("Authorization", &bearer), ("Content-Type", "application/json"), ("Accept", "application/json")],
            br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#,
        );
        assert_eq!(code, 201);
        serde_json::from_slice(&body).unwrap()
    };
    assert_eq!(who["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-name"], json!(["p"]));
    ok(&admin, &["delete", "serviceaccount", "temp", "-n", NS]);
    ok(&admin, &["delete", "pod", "p", "-n", NS, "--grace-period=0", "--force"]);
    wait_until(|| kubectl(&admin, &["get", "pod", "p", "-n", NS]).status.code() == Some(1));
    // A legacy token: a Secret the tokens controller fills; it works until the Secret goes.
    let legacy = cluster.dir.join("legacy.yaml");
    std::fs::write(
        &legacy,
        "apiVersion: v1\nkind: Secret\nmetadata: {name: robot-token, namespace: team, annotations: {kubernetes.io/service-account.name: robot}}\ntype: kubernetes.io/service-account-token\n",
    )
    .unwrap();
    ok(&admin, &["apply", "-f", legacy.to_str().unwrap()]);
    wait_until(|| !ok(&admin, &["get", "secret", "robot-token", "-n", NS, "-o", "jsonpath={.data.token}"]).is_empty());
    let legacy_token = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(ok(&admin, &["get", "secret", "robot-token", "-n", NS, "-o", "jsonpath={.data.token}"]))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(me(&legacy_token).0, 403, "the legacy token authenticates robot");
    ok(&admin, &["delete", "secret", "robot-token", "-n", NS]);
    bad.push(("deleted secret of a legacy token", legacy_token));
    bad.push(("deleted account", temp));
    bad.push(("deleted pod", pod_bound));
    for (what, token) in &bad {
        let (code, body) = me(token);
        assert_eq!(code, 401, "{what}: {body}");
        let status: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            status,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401}),
            "{what}"
        );
    }
    // A client certificate from another CA (even one naming a system:masters admin): 401.
    let other = tempfile::tempdir().unwrap();
    kapi::pki::Pki::load_or_create(other.path(), &[]).unwrap();
    let (cert, key) =
        (std::fs::read(other.path().join("pki/admin.crt")).unwrap(), std::fs::read(other.path().join("pki/admin.key")).unwrap());
    let foreign = cluster.server.client(Some((&cert, &key)));
    let (code, body) = foreign.request(
        "POST",
        &format!("/api/v1/namespaces/{NS}/configmaps"),
        &[("Content-Type", "application/json"), ("Accept", "application/json")],
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"written"}}"#,
    );
    assert_eq!(code, 401, "{}", String::from_utf8_lossy(&body));
    assert!(fails(&admin, &["get", "configmap", "written", "-n", NS]).contains("NotFound"));
    // kubectl says so too.
    let out = kubectl(&admin, &["--token", "nope", "--kubeconfig", cluster.kubeconfig(Who::Alice).to_str().unwrap(), "get", "pods"]);
    assert!(text(&out).contains("You must be logged in to the server"), "{}", text(&out));

    // TokenReview answers for the tokens: the valid one authenticates with the API audience.
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": valid}});
    let (code, body) = common::request(
        &cluster.server,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        "application/json",
        review.to_string().as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["status"]["authenticated"], true);
    assert_eq!(answer["status"]["user"]["username"], "system:serviceaccount:team:robot");
    assert_eq!(answer["status"]["audiences"], json!(["https://kubernetes.default.svc.cluster.local"]));
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": bad[2].1}});
    let (_, body) = common::request(
        &cluster.server,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        "application/json",
        review.to_string().as_bytes(),
    );
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert!(answer["status"]["authenticated"].is_null() || answer["status"]["authenticated"] == false, "{answer}");

    // OIDC discovery, readable by service accounts (system:service-account-issuer-discovery).
    let (code, config) = cluster.request(Who::Robot, "GET", "/.well-known/openid-configuration", &[], b"");
    assert_eq!(code, 200);
    assert_eq!(config["issuer"], "https://kubernetes.default.svc.cluster.local");
    let (code, jwks) = cluster.request(Who::Robot, "GET", "/openid/v1/jwks", &[], b"");
    assert_eq!(code, 200);
    assert_eq!(jwks["keys"][0]["alg"], "ES256");
    assert_eq!(cluster.request(Who::Anonymous, "GET", "/openid/v1/jwks", &[], b"").0, 403);
}

#[test]
fn bootstrap_policy_is_reconciled_and_aggregated() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let server = common::start(&dir);
    server.wait_ready();
    let admin = dir.join("admin.kubeconfig");
    let get = |what: &str| -> Value { serde_json::from_str(&ok(&admin, &["get", what, "-o", "json"])).unwrap() };
    // The aggregated roles are filled, and follow a new role labelled for them.
    let view = get("clusterrole/view");
    assert!(view["rules"].as_array().unwrap().iter().any(|r| r["resources"].as_array().unwrap().contains(&json!("pods"))), "{view}");
    let admin_role = get("clusterrole/admin");
    assert!(admin_role["rules"].to_string().contains("localsubjectaccessreviews"), "admin aggregates edit and its own: {admin_role}");
    let widgets = tmp.path().join("widgets.yaml");
    std::fs::write(
        &widgets,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: widget-viewer, labels: {rbac.authorization.k8s.io/aggregate-to-view: \"true\"}}\nrules:\n- {apiGroups: [example.com], resources: [widgets], verbs: [get]}\n",
    )
    .unwrap();
    ok(&admin, &["apply", "-f", widgets.to_str().unwrap()]);
    wait_until(|| get("clusterrole/admin")["rules"].to_string().contains("widgets"));
    // The controllers' roles and bindings are stored and grant what upstream's do.
    let role = get("clusterrole/system:controller:namespace-controller");
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["delete", "get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["namespaces/finalize", "namespaces/status"], "verbs": ["update"]},
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["delete", "deletecollection", "get", "list", "watch"]},
        ])
    );
    let binding = get("clusterrolebinding/system:controller:namespace-controller");
    assert_eq!(binding["subjects"], json!([{"kind": "ServiceAccount", "name": "namespace-controller", "namespace": "kube-system"}]));
    let can_i = |args: &[&str]| String::from_utf8_lossy(&kubectl(&admin, args).stdout).trim().to_owned();
    let gc = "--as=system:serviceaccount:kube-system:generic-garbage-collector";
    assert_eq!(can_i(&["auth", "can-i", "delete", "deployments.apps", "-A", gc]), "yes");
    assert_eq!(can_i(&["auth", "can-i", "create", "deployments.apps", "-A", gc]), "no");
    let names = ok(&admin, &["get", "clusterroles", "-o", "name"]);
    assert_eq!(names.lines().filter(|l| l.starts_with("clusterrole.rbac.authorization.k8s.io/system:controller:")).count(), 38);
    let bindings = get("clusterrolebinding/system:public-info-viewer");
    assert_eq!(bindings["subjects"].as_array().unwrap().len(), 2);
    assert_eq!(bindings["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");

    // An edited bootstrap role gets its rules back at the next start; an opted-out one is left.
    let untouched = get("clusterrole/cluster-admin")["metadata"]["resourceVersion"].clone();
    ok(&admin, &["patch", "clusterrole", "system:basic-user", "--type=json", "-p", r#"[{"op":"remove","path":"/rules/1"}]"#]);
    ok(&admin, &["annotate", "--overwrite", "clusterrole", "system:monitoring", "rbac.authorization.kubernetes.io/autoupdate=false"]);
    ok(&admin, &["patch", "clusterrole", "system:monitoring", "--type=json", "-p", r#"[{"op":"replace","path":"/rules","value":[]}]"#]);
    server.kill();
    let server = common::start(&dir);
    server.wait_ready();
    assert!(get("clusterrole/system:basic-user")["rules"].to_string().contains("selfsubjectreviews"));
    assert_eq!(get("clusterrole/system:monitoring")["rules"], json!(null), "opted out: left as it was");
    assert_eq!(get("clusterrole/cluster-admin")["metadata"]["resourceVersion"], untouched, "nothing rewritten without a change");
    drop(server);
}

#[test]
fn client_ca_file_trusts_another_ca_instead() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other");
    kapi::pki::Pki::load_or_create(&other, &[]).unwrap();
    let dir = tmp.path().join("data");
    let ca = other.join("pki/ca.crt");
    let server = common::start_with(&dir, &["--client-ca-file", ca.to_str().unwrap()]);
    let read = |name: &str| std::fs::read(other.join("pki").join(name)).unwrap();
    let (cert, key) = (read("admin.crt"), read("admin.key"));
    let theirs = server.client(Some((&cert, &key)));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (code, body) = theirs.request("GET", "/api/v1/namespaces", &[("Accept", "application/json")], b"");
        if code == 200 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the other CA's admin: {code} {}", String::from_utf8_lossy(&body));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // kapi's own admin certificate is not from the trusted CA any more.
    let (code, _) = common::request(&server, "GET", "/api/v1/namespaces", "application/json", b"");
    assert_eq!(code, 401);
}

/// A kubeconfig at `path` for the admin's cluster that authenticates with `token` alone.
fn token_kubeconfig(admin: &Path, token: &str, path: &Path) -> PathBuf {
    let admin: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(admin).unwrap()).unwrap();
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": admin["clusters"],
        "contexts": [{"name": "c", "context": {"cluster": admin["clusters"][0]["name"], "user": "u"}}],
        "current-context": "c",
        "users": [{"name": "u", "user": {"token": token}}],
    });
    std::fs::write(path, serde_yaml_ng::to_string(&config).unwrap()).unwrap();
    path.to_owned()
}

/// The claims of a JWT, unverified.
fn jwt_claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

#[test]
fn token_requests_dry_run_and_pod_node_info() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let server = common::start_with(&dir, &["--service-account-max-token-expiration", "2h"]);
    server.wait_ready();
    let post = |path: &str, body: Value| -> (u16, Value) {
        let (code, text) = common::request(&server, "POST", path, "application/json", body.to_string().as_bytes());
        (code, serde_json::from_str(&text).unwrap_or(Value::Null))
    };
    assert_eq!(post("/api/v1/namespaces", json!({"metadata": {"name": "tok"}})).0, 201);
    assert_eq!(post("/api/v1/namespaces/tok/serviceaccounts", json!({"metadata": {"name": "sa"}})).0, 201);
    let (code, node) = post("/api/v1/nodes", json!({"metadata": {"name": "n1"}}));
    assert_eq!(code, 201, "{node}");
    let pod = |name: &str, node: &str| json!({"metadata": {"name": name}, "spec": {"serviceAccountName": "sa", "nodeName": node, "containers": [{"name": "c", "image": "i"}]}});
    let (code, p1) = post("/api/v1/namespaces/tok/pods", pod("p1", "n1"));
    assert_eq!(code, 201, "{p1}");
    let (code, p2) = post("/api/v1/namespaces/tok/pods", pod("p2", "gone"));
    assert_eq!(code, 201, "{p2}");
    let token_path = "/api/v1/namespaces/tok/serviceaccounts/sa/token";
    let bound = |pod: &str| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod}}});

    // A pod-bound token names the pod's node, with its uid when the node exists.
    let (code, answer) = post(token_path, bound("p1"));
    assert_eq!(code, 201, "{answer}");
    let token = answer["status"]["token"].as_str().unwrap().to_owned();
    let claims = jwt_claims(&token);
    assert_eq!(claims["kubernetes.io"]["pod"], json!({"name": "p1", "uid": p1["metadata"]["uid"]}));
    assert_eq!(claims["kubernetes.io"]["node"], json!({"name": "n1", "uid": node["metadata"]["uid"]}));
    assert_eq!(answer["metadata"]["name"], "sa");
    assert_eq!(answer["metadata"]["namespace"], "tok");
    assert!(answer["metadata"]["uid"].as_str().is_some_and(|u| !u.is_empty()), "{answer}");
    assert!(answer["metadata"]["creationTimestamp"].is_string(), "{answer}");
    let (_, answer2) = post(token_path, bound("p2"));
    assert_eq!(jwt_claims(answer2["status"]["token"].as_str().unwrap())["kubernetes.io"]["node"], json!({"name": "gone"}));
    let review = |token: &str| post("/apis/authentication.k8s.io/v1/tokenreviews", json!({"spec": {"token": token}})).1;
    let extra = &review(&token)["status"]["user"]["extra"];
    assert_eq!(extra["authentication.kubernetes.io/pod-name"], json!(["p1"]));
    assert_eq!(extra["authentication.kubernetes.io/node-name"], json!(["n1"]));
    assert_eq!(extra["authentication.kubernetes.io/node-uid"], json!([node["metadata"]["uid"]]));
    // The node of a pod-bound token is information, not a binding: the token outlives it.
    let (code, _) = common::request(&server, "DELETE", "/api/v1/nodes/n1", "application/json", b"");
    assert_eq!(code, 200);
    assert_eq!(review(&token)["status"]["authenticated"], true);

    // Dry run: nothing is stored by a TokenRequest, so it is answered in full, as upstream's.
    let (code, dry) = post(&format!("{token_path}?dryRun=All"), json!({"spec": {"expirationSeconds": 900}}));
    assert_eq!(code, 201, "{dry}");
    assert_eq!(dry["spec"]["expirationSeconds"], 900);
    assert_eq!(review(dry["status"]["token"].as_str().unwrap())["status"]["authenticated"], true);

    // Name, namespace and uid in the body must be the account's; expiry shortened with a warning.
    let (code, err) = post(token_path, json!({"metadata": {"name": "other"}, "spec": {}}));
    assert_eq!(code, 422, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("metadata.name: Invalid value: \"other\": must match the service account name if specified"),
        "{err}"
    );
    let (code, err) = post(token_path, json!({"metadata": {"uid": "nope"}, "spec": {}}));
    assert_eq!(code, 409, "{err}");
    let body = json!({"spec": {"expirationSeconds": 86400}}).to_string();
    let (code, headers, answer) = common::request_full(
        &server,
        "POST",
        token_path,
        &[("Content-Type", "application/json"), ("Accept", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(code, 201);
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer["spec"]["expirationSeconds"], 7200);
    assert_eq!(common::header(&headers, "warning"), Some(r#"299 - "requested expiration of 86400 seconds shortened to 7200 seconds""#));
}

#[test]
fn rsa_service_account_keys_sign_and_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let (key, public) = (tmp.path().join("sa-rsa.key"), tmp.path().join("sa-rsa.pub"));
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl").args(args).output().expect("the openssl command");
        assert!(out.status.success(), "{}", text(&out));
    };
    openssl(&["genrsa", "-traditional", "-out", key.to_str().unwrap(), "2048"]);
    openssl(&["rsa", "-in", key.to_str().unwrap(), "-pubout", "-out", public.to_str().unwrap()]);
    let dir = tmp.path().join("data");
    let server = common::start_with(
        &dir,
        &["--service-account-signing-key-file", key.to_str().unwrap(), "--service-account-key-file", public.to_str().unwrap()],
    );
    server.wait_ready();
    let get = |path: &str| -> Value { serde_json::from_str(&common::request(&server, "GET", path, "application/json", b"").1).unwrap() };
    let jwks = get("/openid/v1/jwks");
    assert_eq!(jwks["keys"].as_array().unwrap().len(), 1, "the signing key's public half is the verifying key: {jwks}");
    assert_eq!(jwks["keys"][0]["kty"], "RSA");
    assert_eq!(jwks["keys"][0]["alg"], "RS256");
    assert_eq!(jwks["keys"][0]["e"], "AQAB");
    assert_eq!(get("/.well-known/openid-configuration")["id_token_signing_alg_values_supported"], json!(["RS256"]));
    let admin = dir.join("admin.kubeconfig");
    ok(&admin, &["create", "serviceaccount", "robot"]);
    let token = ok(&admin, &["create", "token", "robot"]).trim().to_owned();
    let header = jsonwebtoken::decode_header(&token).unwrap();
    assert_eq!(header.alg, jsonwebtoken::Algorithm::RS256);
    assert_eq!(header.kid.as_deref(), jwks["keys"][0]["kid"].as_str());
    let robot = token_kubeconfig(&admin, &token, &tmp.path().join("robot.kubeconfig"));
    let out = kubectl(&robot, &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let me: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(me["status"]["userInfo"]["username"], "system:serviceaccount:default:robot");
    // A token signed by another RSA key is refused.
    let other = tmp.path().join("other.key");
    openssl(&["genrsa", "-traditional", "-out", other.to_str().unwrap(), "2048"]);
    let claims = jwt_claims(&token);
    let forged = jsonwebtoken::encode(
        &jsonwebtoken::Header { kid: header.kid.clone(), ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256) },
        &claims,
        &jsonwebtoken::EncodingKey::from_rsa_pem(&std::fs::read(&other).unwrap()).unwrap(),
    )
    .unwrap();
    let out = kubectl(&token_kubeconfig(&admin, &forged, &tmp.path().join("forged.kubeconfig")), &["auth", "whoami"]);
    assert!(!out.status.success() && text(&out).contains("Unauthorized"), "{}", text(&out));
}

#[test]
fn node_authorizer_limits_kubelets_to_their_pods() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let server = common::start_with(&dir, &["--authorization-mode", "Node,RBAC"]);
    server.wait_ready();
    let admin = dir.join("admin.kubeconfig");
    let node_config = |node: &str| node_kubeconfig(&dir, tmp.path(), node);
    let (n1, n2) = (node_config("n1"), node_config("n2"));
    let objects = tmp.path().join("objects.yaml");
    std::fs::write(
        &objects,
        r#"
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Secret, metadata: {name: used, namespace: default}, stringData: {a: b}}
- {apiVersion: v1, kind: Secret, metadata: {name: unused, namespace: default}, stringData: {a: b}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: default}, data: {a: b}}
- apiVersion: v1
  kind: Pod
  metadata: {name: web, namespace: default}
  spec:
    nodeName: n1
    containers:
    - name: c
      image: i
      envFrom: [{configMapRef: {name: settings}}]
    volumes: [{name: s, secret: {secretName: used}}, {name: d, persistentVolumeClaim: {claimName: data}}]
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-data}
  spec:
    capacity: {storage: 1Gi}
    accessModes: [ReadWriteOnce]
    claimRef: {namespace: default, name: data}
    csi: {driver: d.example.com, volumeHandle: h, nodeStageSecretRef: {namespace: default, name: stage}}
- {apiVersion: storage.k8s.io/v1, kind: VolumeAttachment, metadata: {name: va-n1},
   spec: {attacher: d.example.com, nodeName: n1, source: {persistentVolumeName: pv-data}}}
"#,
    )
    .unwrap();
    ok(&admin, &["apply", "-f", objects.to_str().unwrap()]);
    // The graph follows the pods asynchronously.
    wait_until(|| kubectl(&n1, &["get", "secret", "used"]).status.success());
    ok(&n1, &["get", "configmap", "settings"]);
    ok(&n1, &["get", "pod", "web"]);
    // A claim's volume and the secret it names for the kubelet; the attachments to its node.
    wait_until(|| kubectl(&n1, &["get", "persistentvolume", "pv-data"]).status.success());
    wait_until(|| kubectl(&n1, &["get", "volumeattachment", "va-n1"]).status.success());
    let missing = kubectl(&n1, &["get", "secret", "stage"]);
    assert!(text(&missing).contains(r#"secrets "stage" not found"#), "allowed, and missing: {}", text(&missing));
    fails(&n2, &["get", "persistentvolume", "pv-data"]);
    fails(&n2, &["get", "volumeattachment", "va-n1"]);
    ok(&n1, &["get", "pods", "-A", "--field-selector", "spec.nodeName=n1"]);
    let denied = fails(&n1, &["get", "secret", "unused"]);
    assert!(
        denied.contains(r#"secrets "unused" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'n1' and this object"#),
        "{denied}"
    );
    let denied = fails(&n2, &["get", "secret", "used"]);
    assert!(denied.contains("no relationship found between node 'n2' and this object"), "{denied}");
    fails(&n2, &["get", "pod", "web"]);
    let denied = fails(&n1, &["get", "pods", "-A"]);
    assert!(denied.contains("can only list/watch pods with spec.nodeName field selector"), "{denied}");
    // Its own Node object only.
    let denied = fails(&n1, &["get", "node", "n2"]);
    assert!(denied.contains("node 'n1' cannot read 'n2', only its own Node object"), "{denied}");
    let mine = kubectl(&n1, &["get", "node", "n1"]);
    assert!(text(&mine).contains(r#"nodes "n1" not found"#), "allowed, and missing: {}", text(&mine));
    // What the Node authorizer does not subdivide, the system:node rules decide.
    ok(&n1, &["get", "services"]);
    fails(&n1, &["get", "deployments"]);
    // Pod deleted: the path is gone.
    ok(&admin, &["delete", "pod", "web", "--grace-period=0", "--force"]);
    wait_until(|| !kubectl(&n1, &["get", "secret", "used"]).status.success());
}

#[test]
fn admission_plugins_are_chosen_by_flags() {
    // An unknown plugin stops the server before it serves, with upstream's message.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("refused");
    let out =
        kapi(&["serve", "--data-dir", data.to_str().unwrap(), "--secure-port", "0", "--enable-admission-plugins", "NodeRestriction,Nope"]);
    assert!(!out.status.success());
    assert!(text(&out).contains(r#"enable-admission-plugins plugin "Nope" is unknown"#), "{}", text(&out));

    // Without NodeRestriction a kubelet writes whatever the Node authorizer lets it.
    let dir = tmp.path().join("data");
    let server = common::start_with(&dir, &["--authorization-mode", "Node,RBAC", "--disable-admission-plugins", "NodeRestriction"]);
    server.wait_ready();
    let n1 = node_kubeconfig(&dir, tmp.path(), "n1");
    let other = tmp.path().join("n2.yaml");
    std::fs::write(&other, "apiVersion: v1\nkind: Node\nmetadata: {name: n2}\n").unwrap();
    ok(&n1, &["create", "-f", other.to_str().unwrap()]);
}

#[test]
fn node_restriction_admits_kubelets_writes_to_their_own_objects_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let server = common::start_with(&dir, &["--authorization-mode", "Node,RBAC"]);
    server.wait_ready();
    let admin = dir.join("admin.kubeconfig");
    let node_config = |node: &str| node_kubeconfig(&dir, tmp.path(), node);
    let n1 = node_config("n1");
    let file = |name: &str, yaml: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, yaml).unwrap();
        path
    };
    let forbidden = |out: String, message: &str| assert!(out.contains(message), "wanted {message:?}, got {out}");

    // Its own Node, not another.
    let node = |name: &str| file(&format!("{name}.yaml"), &format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n"));
    ok(&n1, &["create", "-f", node("n1").to_str().unwrap()]);
    forbidden(
        fails(&n1, &["create", "-f", node("n2").to_str().unwrap()]),
        r#"nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2""#,
    );
    let restricted =
        file("restricted.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {node-restriction.kubernetes.io/a: b}}\n");
    forbidden(
        fails(&n1, &["replace", "-f", restricted.to_str().unwrap()]),
        r#"nodes "n1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/a"#,
    );
    ok(&n1, &["label", "node", "n1", "example.com/rack=r1", "node.kubernetes.io/pool=p"]);
    forbidden(fails(&n1, &["label", "node", "n1", "kubernetes.io/role=master"]), "is not allowed to modify labels: kubernetes.io/role");
    forbidden(
        fails(&n1, &["taint", "node", "n1", "k=v:NoSchedule"]),
        r#"nodes "n1" is forbidden: node "n1" is not allowed to modify taints"#,
    );
    ok(&admin, &["taint", "node", "n1", "k=v:NoSchedule"]);
    let uid = ok(&admin, &["get", "node", "n1", "-o", "jsonpath={.metadata.uid}"]);

    // Mirror pods bound to itself, owned by its Node, referring to nothing else.
    let pod = |name: &str, annotations: &str, node: &str, extra: &str| {
        file(
            &format!("{name}.yaml"),
            &format!(
                "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  annotations: {{{annotations}}}
  ownerReferences: [{{apiVersion: v1, kind: Node, name: n1, uid: {uid}, controller: true}}]
spec:
  nodeName: {node}
  containers: [{{name: c, image: i{extra}}}]
"
            ),
        )
    };
    let mirror = "kubernetes.io/config.mirror: x";
    forbidden(
        fails(&n1, &["create", "-f", pod("plain", "", "n1", "").to_str().unwrap()]),
        r#"pods "plain" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods"#,
    );
    forbidden(
        fails(&n1, &["create", "-f", pod("elsewhere", mirror, "n2", "").to_str().unwrap()]),
        r#"pods "elsewhere" is forbidden: node "n1" can only create pods with spec.nodeName set to itself"#,
    );
    forbidden(
        fails(&n1, &["create", "-f", pod("secretive", mirror, "n1", ", envFrom: [{secretRef: {name: s}}]").to_str().unwrap()]),
        r#"pods "secretive" is forbidden: node "n1" can not create pods that reference secrets"#,
    );
    forbidden(
        fails(&n1, &["create", "-f", pod("configured", mirror, "n1", ", envFrom: [{configMapRef: {name: c}}]").to_str().unwrap()]),
        r#"pods "configured" is forbidden: node "n1" can not create pods that reference configmaps"#,
    );
    ok(&n1, &["create", "-f", pod("static", mirror, "n1", "").to_str().unwrap()]);
    // The status of its pods only; deletes of its pods only.
    ok(&admin, &["create", "-f", pod("theirs", "", "n2", "").to_str().unwrap()]);
    // A PUT of the status (kubectl's `--subresource=status` reads it first, which the Node
    // authorizer does not allow).
    let put_status = |name: &str| {
        let mut pod: Value = serde_json::from_str(&ok(&admin, &["get", "pod", name, "-o", "json"])).unwrap();
        pod["status"]["message"] = Value::from("hi");
        let body = file(&format!("{name}-status.json"), &pod.to_string());
        let uri = format!("/api/v1/namespaces/default/pods/{name}/status");
        kubectl(&n1, &["replace", "--raw", &uri, "-f", body.to_str().unwrap()])
    };
    let done = put_status("static");
    assert!(done.status.success(), "{}", text(&done));
    let refused = put_status("theirs");
    assert!(!refused.status.success());
    forbidden(
        text(&refused),
        r#"pods "theirs" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself"#,
    );
    forbidden(
        fails(&n1, &["delete", "pod", "theirs", "--wait=false"]),
        r#"pods "theirs" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself"#,
    );
    ok(&n1, &["delete", "pod", "static", "--wait=false", "--grace-period=0", "--force"]);

    // Its own Lease, in kube-node-lease only.
    let lease = |name: &str, ns: &str| {
        file(
            &format!("lease-{name}-{ns}.yaml"),
            &format!("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: {name}, namespace: {ns}}}\n"),
        )
    };
    ok(&n1, &["create", "-f", lease("n1", "kube-node-lease").to_str().unwrap()]);
    forbidden(
        fails(&n1, &["create", "-f", lease("n2", "kube-node-lease").to_str().unwrap()]),
        r#"leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node"#,
    );
    // Other users are not restricted.
    ok(&admin, &["label", "node", "n1", "node-restriction.kubernetes.io/a=b"]);
}
