//! `/healthz`, `/livez`, `/readyz` as upstream serves them: `ok` when every check passes, per
//! check paths (`/readyz/etcd`), `?verbose` listing each check, `?exclude=name` to skip one.

use std::sync::Arc;

/// One named check; `Err` carries the reason shown in verbose output and logs.
pub struct Check {
    pub name: &'static str,
    pub run: Arc<dyn Fn() -> Result<(), String> + Send + Sync>,
}

impl Check {
    pub fn new(name: &'static str, run: impl Fn() -> Result<(), String> + Send + Sync + 'static) -> Self {
        Self { name, run: Arc::new(run) }
    }
}

/// The outcome of a health endpoint: status code and plain-text body.
#[derive(Debug, PartialEq, Eq)]
pub struct HealthResponse {
    pub code: u16,
    pub body: String,
}

/// Answers `/<endpoint>` or `/<endpoint>/<check>` (`rest` is what follows the endpoint name).
pub fn answer(endpoint: &str, rest: &str, query: &str, checks: &[Check]) -> Option<HealthResponse> {
    let params: Vec<(&str, &str)> =
        query.split('&').filter(|p| !p.is_empty()).map(|p| p.split_once('=').unwrap_or((p, ""))).collect();
    let verbose = params.iter().any(|(k, _)| *k == "verbose");
    let excluded: Vec<&str> = params.iter().filter(|(k, _)| *k == "exclude").map(|(_, v)| *v).collect();

    let rest = rest.trim_matches('/');
    if !rest.is_empty() {
        // A single check: `/readyz/ping`.
        let check = checks.iter().find(|c| c.name == rest)?;
        return Some(match (check.run)() {
            Ok(()) => HealthResponse { code: 200, body: "ok".into() },
            Err(reason) => HealthResponse { code: 500, body: format!("internal server error: {reason}\n") },
        });
    }

    let mut lines = Vec::new();
    let mut failed = false;
    for check in checks {
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
        vec![
            Check::new("ping", || Ok(())),
            Check::new("etcd", move || if storage_ok { Ok(()) } else { Err("storage unreachable".into()) }),
        ]
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
