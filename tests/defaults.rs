//! Defaulting end to end: a started `kapi serve` given minimal objects answers, and stores,
//! them with upstream's defaults (the fields `kubectl get -o yaml` shows on a v1.36 cluster),
//! a pod with what upstream's tolerations and priority admission add, and a claim with the
//! default StorageClass.

mod common;

use common::{request, start, start_with};
use serde_json::{Value, json};

fn create(server: &common::Server, path: &str, body: Value) -> Value {
    let (code, text) = request(server, "POST", path, "application/json", body.to_string().as_bytes());
    assert_eq!(code, 201, "{text}");
    serde_json::from_str(&text).unwrap()
}

fn get(server: &common::Server, path: &str) -> Value {
    let (code, text) = request(server, "GET", path, "", b"");
    assert_eq!(code, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn created_objects_come_back_defaulted() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();

    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}});
    create(&server, "/apis/apps/v1/namespaces/default/deployments", deployment);
    let got = get(&server, "/apis/apps/v1/namespaces/default/deployments/web");
    let spec = &got["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(spec["strategy"], json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}));
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    let pod_spec = &spec["template"]["spec"];
    assert_eq!(pod_spec["restartPolicy"], "Always");
    assert_eq!(pod_spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod_spec["schedulerName"], "default-scheduler");
    assert_eq!(pod_spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(pod_spec["securityContext"], json!({}));
    assert_eq!(pod_spec["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(pod_spec["containers"][0]["terminationMessagePath"], "/dev/termination-log");
    assert!(pod_spec.get("enableServiceLinks").is_none(), "SetDefaults_Pod is for pods only: {pod_spec}");

    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "ports": [{"containerPort": 8080}]}],
                 "volumes": [{"name": "scratch"}]}});
    let created = create(&server, "/api/v1/namespaces/default/pods", pod);
    let got = get(&server, "/api/v1/namespaces/default/pods/p");
    assert_eq!(got, created, "the created object is what is stored");
    let spec = &got["spec"];
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["volumes"][0], json!({"name": "scratch", "emptyDir": {}}));
    let c = &spec["containers"][0];
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["resources"], json!({}));
    assert_eq!(c["ports"][0], json!({"containerPort": 8080, "protocol": "TCP"}));
    assert_eq!(got["status"], json!({"phase": "Pending", "qosClass": "BestEffort"}));
    // Admission (DefaultTolerationSeconds, Priority) after defaulting.
    assert_eq!(spec["tolerations"][0]["key"], "node.kubernetes.io/not-ready");
    assert_eq!(spec["tolerations"][1]["tolerationSeconds"], 300);
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");

    // A stored priority class gives its value; the class itself was defaulted.
    let class = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000});
    let class = create(&server, "/apis/scheduling.k8s.io/v1/priorityclasses", class);
    assert_eq!(class["preemptionPolicy"], "PreemptLowerPriority");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "important"},
        "spec": {"priorityClassName": "high", "containers": [{"name": "c", "image": "busybox"}]}});
    let created = create(&server, "/api/v1/namespaces/default/pods", pod);
    assert_eq!(created["spec"]["priority"], 1000);

    // Admission plugins refuse with upstream's 403 (`admission.NewForbidden`), not a 422.
    for (spec, message) in [
        (json!({"priorityClassName": "nope"}), "pods \"refused\" is forbidden: no PriorityClass with name nope was found"),
        (
            json!({"serviceAccountName": "ghost"}),
            "pods \"refused\" is forbidden: error looking up service account default/ghost: serviceaccount \"ghost\" not found",
        ),
    ] {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "refused"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        pod["spec"].as_object_mut().unwrap().extend(spec.as_object().unwrap().clone());
        let (code, text) = request(&server, "POST", "/api/v1/namespaces/default/pods", "application/json", pod.to_string().as_bytes());
        let status: Value = serde_json::from_str(&text).unwrap();
        assert_eq!((code, status["reason"].as_str()), (403, Some("Forbidden")), "{text}");
        assert_eq!(status["message"], message, "{text}");
    }

    // Updates and patches are defaulted too: a patch that removes the pull policy gets it back.
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "nginx", "imagePullPolicy": null}]}}}});
    let (code, text) = request(
        &server,
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/web",
        "application/strategic-merge-patch+json",
        patch.to_string().as_bytes(),
    );
    assert_eq!(code, 200, "{text}");
    let patched: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(patched["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "Always");

    // A job gets its generated selector and labels.
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
        "spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl"}], "restartPolicy": "Never"}}}});
    let job = create(&server, "/apis/batch/v1/namespaces/default/jobs", job);
    let uid = job["metadata"]["uid"].as_str().unwrap();
    assert_eq!(job["spec"]["selector"], json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}));
    assert_eq!(job["spec"]["template"]["metadata"]["labels"]["job-name"], "pi");
    assert_eq!(job["metadata"]["labels"]["batch.kubernetes.io/job-name"], "pi");
    assert_eq!(job["spec"]["backoffLimit"], 6);
    server.kill();
}

/// Alpha and beta versions turned on with `--runtime-config` default their objects as upstream's
/// `defaults.go` and declarative `+default`s of that version do, and the stored object reads
/// back defaulted.
#[test]
fn alpha_and_beta_versions_are_defaulted() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), &["--runtime-config=api/all=true"]);
    server.wait_ready();

    let path = "/apis/certificates.k8s.io/v1beta1/namespaces/default/podcertificaterequests";
    let request = json!({"apiVersion": "certificates.k8s.io/v1beta1", "kind": "PodCertificateRequest", "metadata": {"name": "pcr"},
        "spec": {"signerName": "example.com/signer", "podName": "p", "podUID": "11111111-1111-1111-1111-111111111111",
                 "serviceAccountName": "default", "serviceAccountUID": "22222222-2222-2222-2222-222222222222",
                 "nodeName": "node-1", "nodeUID": "33333333-3333-3333-3333-333333333333",
                 "pkixPublicKey": "AA==", "proofOfPossession": "AA==", "stubPKCS10Request": "AA=="}});
    let created = create(&server, path, request);
    assert_eq!(created["spec"]["maxExpirationSeconds"], 86_400, "{created}");
    assert_eq!(get(&server, &format!("{path}/pcr"))["spec"]["maxExpirationSeconds"], 86_400);

    let path = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups";
    let group = json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "gang"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}});
    let created = create(&server, path, group);
    assert_eq!(created["spec"]["disruptionMode"], "Pod", "{created}");
    assert_eq!(get(&server, &format!("{path}/gang"))["spec"]["disruptionMode"], "Pod");
    let workload = json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "metadata": {"name": "w"},
        "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}}]}});
    let created = create(&server, "/apis/scheduling.k8s.io/v1alpha2/namespaces/default/workloads", workload);
    assert!(created["spec"]["podGroupTemplates"][0].get("disruptionMode").is_none(), "templates have no default: {created}");

    let path = "/apis/resource.k8s.io/v1alpha3/resourcepoolstatusrequests";
    let pools = json!({"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest", "metadata": {"name": "gpus"},
        "spec": {"driver": "gpu.example.com"}});
    let created = create(&server, path, pools);
    assert_eq!(created["spec"]["limit"], 100, "{created}");

    let path = "/apis/resource.k8s.io/v1beta2/namespaces/default/resourceclaims";
    let claim = json!({"apiVersion": "resource.k8s.io/v1beta2", "kind": "ResourceClaim", "metadata": {"name": "tolerant"},
        "spec": {"devices": {"requests": [{"name": "one", "exactly": {"deviceClassName": "gpu",
            "tolerations": [{"key": "maintenance", "value": "planned", "effect": "NoSchedule"}, {"key": "flaky", "operator": "Exists"}]}}]}}});
    let created = create(&server, path, claim);
    let tolerations = &created["spec"]["devices"]["requests"][0]["exactly"]["tolerations"];
    assert_eq!(tolerations[0]["operator"], "Equal", "{created}");
    assert_eq!(tolerations[1]["operator"], "Exists", "{created}");
    let v1 = get(&server, "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/tolerant");
    assert_eq!(v1["spec"]["devices"]["requests"][0]["exactly"]["tolerations"][0]["operator"], "Equal", "{v1}");
}

/// `DefaultStorageClass`: a claim that names no class gets the newest default one; one that
/// asks for none (`""`) keeps it.
#[test]
fn claims_without_a_class_get_the_default_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let claims = "/api/v1/namespaces/default/persistentvolumeclaims";
    let claim = |name: &str, class: Option<&str>| {
        let mut spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
        if let Some(class) = class {
            spec["storageClassName"] = json!(class);
        }
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec})
    };
    assert!(create(&server, claims, claim("before", None))["spec"].get("storageClassName").is_none(), "no default class yet");
    let class = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "example.com/disk",
        "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}});
    create(&server, "/apis/storage.k8s.io/v1/storageclasses", class);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut n = 0;
    let defaulted = loop {
        n += 1;
        // The plugin reads the classes as cached, as upstream's reads its informer.
        let got = create(&server, claims, claim(&format!("after-{n}"), None));
        if got["spec"]["storageClassName"] == "standard" || std::time::Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(defaulted["spec"]["storageClassName"], "standard");
    assert_eq!(create(&server, claims, claim("none", Some("")))["spec"]["storageClassName"], "");
}

/// `LimitRanger`: a namespace's LimitRange gives new pods' containers the defaults they lack
/// (recorded in an annotation) and refuses pods and claims beyond its bounds, as upstream's
/// 403.
#[test]
fn limit_ranges_default_and_bound_pods_and_claims() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    create(&server, "/api/v1/namespaces", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "limited"}}));
    let range = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "bounds"}, "spec": {"limits": [
        {"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"}, "defaultRequest": {"cpu": "100m"}, "max": {"cpu": "1"}},
        {"type": "PersistentVolumeClaim", "max": {"storage": "5Gi"}},
    ]}});
    create(&server, "/api/v1/namespaces/limited/limitranges", range);
    let pods = "/api/v1/namespaces/limited/pods";
    let pod = |name: &str, resources: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"containers": [{"name": "app", "image": "nginx", "resources": resources}]}})
    };
    // The plugin reads the ranges as cached: wait for the range to be seen.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut n = 0;
    let defaulted = loop {
        n += 1;
        let got = create(&server, pods, pod(&format!("plain-{n}"), json!({})));
        if !got["spec"]["containers"][0]["resources"].as_object().unwrap().is_empty() || std::time::Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(
        defaulted["spec"]["containers"][0]["resources"],
        // The range's own defaulting made its default memory limit the default request too.
        json!({"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}})
    );
    assert_eq!(
        defaulted["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"
    );
    let (code, text) =
        request(&server, "POST", pods, "application/json", pod("big", json!({"limits": {"cpu": "2"}})).to_string().as_bytes());
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((code, status["reason"].as_str()), (403, Some("Forbidden")), "{text}");
    assert_eq!(status["message"], r#"pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2"#);
    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "huge"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}});
    let (code, text) =
        request(&server, "POST", "/api/v1/namespaces/limited/persistentvolumeclaims", "application/json", claim.to_string().as_bytes());
    assert_eq!(code, 403, "{text}");
    assert!(text.contains("maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi"), "{text}");
}
