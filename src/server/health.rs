//! `/healthz`, `/livez`, `/readyz` as upstream serves them: `ok` when every check passes, per
//! check paths (`/readyz/etcd`), `?verbose` listing each check, `?exclude=name` to skip one.

use std::sync::Arc;

/// One named check; `Err` carries the reason shown in verbose output and logs.
pub struct Check {
    pub name: &'static str,
    pub run: Arc<dyn Fn() -> Result<(), String> + Send + Sync>,
    /// Not part of `/livez`: a dependency being down (etcd) makes the server unready, but
    /// restarting it would not help.
    pub readiness_only: bool,
}

impl Check {
    pub fn new(name: &'static str, run: impl Fn() -> Result<(), String> + Send + Sync + 'static) -> Self {
        Self { name, run: Arc::new(run), readiness_only: false }
    }

    fn applies_to(&self, endpoint: &str) -> bool {
        !(self.readiness_only && endpoint == "livez")
    }
}

/// A check that the store answers: a background task reads its revision every second (with a
/// deadline) and the check reports the last outcome, so that probes never wait on the store.
pub fn storage_check(name: &'static str, store: Arc<dyn crate::storage::Storage>) -> Check {
    use std::sync::Mutex;
    use std::time::Duration;
    let last: Arc<Mutex<Result<(), String>>> = Arc::new(Mutex::new(Ok(())));
    let probe = last.clone();
    tokio::spawn(async move {
        loop {
            let outcome = match tokio::time::timeout(Duration::from_secs(2), store.current_revision()).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err("timed out".to_owned()),
            };
            if let Ok(mut slot) = probe.lock() {
                *slot = outcome;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    Check { readiness_only: true, ..Check::new(name, move || last.lock().map_err(|e| e.to_string())?.clone()) }
}

/// The outcome of a health endpoint: status code and plain-text body.
#[derive(Debug, PartialEq, Eq)]
pub struct HealthResponse {
    pub code: u16,
    pub body: String,
}

/// Answers `/<endpoint>` or `/<endpoint>/<check>` (`rest` is what follows the endpoint name).
pub fn answer(endpoint: &str, rest: &str, query: &str, checks: &[Check]) -> Option<HealthResponse> {
    let params: Vec<(&str, &str)> = query.split('&').filter(|p| !p.is_empty()).map(|p| p.split_once('=').unwrap_or((p, ""))).collect();
    let verbose = params.iter().any(|(k, _)| *k == "verbose");
    let excluded: Vec<&str> = params.iter().filter(|(k, _)| *k == "exclude").map(|(_, v)| *v).collect();

    let rest = rest.trim_matches('/');
    if !rest.is_empty() {
        // A single check: `/readyz/ping`.
        let check = checks.iter().find(|c| c.name == rest && c.applies_to(endpoint))?;
        return Some(match (check.run)() {
            Ok(()) => HealthResponse { code: 200, body: "ok".into() },
            Err(reason) => HealthResponse { code: 500, body: format!("internal server error: {reason}\n") },
        });
    }

    let mut lines = Vec::new();
    let mut failed = false;
    for check in checks.iter().filter(|c| c.applies_to(endpoint)) {
        if excluded.contains(&check.name) {
            lines.push(format!("[+]{} excluded: ok", check.name));
            continue;
        }
        match (check.run)() {
            Ok(()) => lines.push(format!("[+]{} ok", check.name)),
            Err(_) => {
                failed = true;
                lines.push(format!("[-]{} failed: reason withheld", check.name));
            }
        }
    }
    if failed {
        lines.push(format!("{endpoint} check failed"));
        return Some(HealthResponse { code: 500, body: lines.join("\n") + "\n" });
    }
    if verbose {
        lines.push(format!("{endpoint} check passed"));
        return Some(HealthResponse { code: 200, body: lines.join("\n") + "\n" });
    }
    Some(HealthResponse { code: 200, body: "ok".into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(storage_ok: bool) -> Vec<Check> {
        vec![Check::new("ping", || Ok(())), Check::new("etcd", move || if storage_ok { Ok(()) } else { Err("storage unreachable".into()) })]
    }

    #[test]
    fn plain_verbose_single_and_excluded() {
        let ok = checks(true);
        assert_eq!(answer("readyz", "", "", &ok).unwrap(), HealthResponse { code: 200, body: "ok".into() });
        let v = answer("readyz", "", "verbose", &ok).unwrap();
        assert_eq!(v.body, "[+]ping ok\n[+]etcd ok\nreadyz check passed\n");
        let bad = checks(false);
        let r = answer("readyz", "", "verbose", &bad).unwrap();
        assert_eq!(r.code, 500);
        assert!(r.body.contains("[-]etcd failed: reason withheld") && r.body.ends_with("readyz check failed\n"));
        assert_eq!(answer("readyz", "", "exclude=etcd", &bad).unwrap().code, 200);
        assert_eq!(answer("readyz", "/etcd", "", &bad).unwrap().code, 500);
        assert_eq!(answer("readyz", "/ping", "", &bad).unwrap().code, 200);
        assert!(answer("readyz", "/nope", "", &bad).is_none());
    }
}
