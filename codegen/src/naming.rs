//! How spec names become Rust names. All naming rules live here, tested by table.

/// The Rust field name for a JSON property: `snake_case`, with upstream's acronyms kept whole
/// (`podIPs` → `pod_ips`, `hostIPC` → `host_ipc`, `apiVersion` → `api_version`) and keywords as
/// raw identifiers (`type` → `r#type`). JSON names that are not identifiers (`$ref`,
/// `x-kubernetes-list-type`) lose their punctuation.
pub fn field_name(json: &str) -> String {
    let cleaned: String = json.trim_start_matches('$').chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let snake = snake_case(&cleaned);
    if is_keyword(&snake) { format!("r#{snake}") } else { snake }
}

/// `camelCase`/`PascalCase` → `snake_case`, treating a run of capitals as one word and a plural
/// `s` after a run of two or more capitals as part of it (`CIDRs`, `IPs`, `WWNs`).
pub fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '_' {
            if !out.ends_with('_') && !out.is_empty() {
                out.push('_');
            }
            i += 1;
            continue;
        }
        if c.is_ascii_uppercase() {
            // Collect the run of capitals.
            let start = i;
            while i < chars.len() && chars[i].is_ascii_uppercase() {
                i += 1;
            }
            let mut run: String = chars[start..i].iter().collect();
            let next_lower = i < chars.len() && chars[i].is_ascii_lowercase();
            if run.len() > 1 && next_lower {
                let plural_s = chars[i] == 's' && (i + 1 == chars.len() || !chars[i + 1].is_ascii_lowercase());
                if plural_s {
                    run.push('s');
                    i += 1;
                } else {
                    // The last capital starts the next word: `IPFamily` → `ip` + `Family`.
                    run.pop();
                    i -= 1;
                }
            }
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            out.push_str(&run.to_ascii_lowercase());
            // A single capital starts a word whose lower-case tail follows.
            while i < chars.len() && (chars[i].is_ascii_lowercase() || chars[i].is_ascii_digit()) {
                if run.len() > 1 && chars[i].is_ascii_lowercase() {
                    break;
                }
                out.push(chars[i]);
                i += 1;
            }
            continue;
        }
        out.push(c.to_ascii_lowercase());
        i += 1;
    }
    out
}

fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "as" | "break"
            | "const"
            | "continue"
            | "crate"
            | "else"
            | "enum"
            | "extern"
            | "false"
            | "fn"
            | "for"
            | "if"
            | "impl"
            | "in"
            | "let"
            | "loop"
            | "match"
            | "mod"
            | "move"
            | "mut"
            | "pub"
            | "ref"
            | "return"
            | "self"
            | "static"
            | "struct"
            | "super"
            | "trait"
            | "true"
            | "type"
            | "unsafe"
            | "use"
            | "where"
            | "while"
            | "async"
            | "await"
            | "dyn"
            | "abstract"
            | "become"
            | "box"
            | "do"
            | "final"
            | "macro"
            | "override"
            | "priv"
            | "typeof"
            | "unsized"
            | "virtual"
            | "yield"
            | "try"
            | "gen"
    )
}

/// The Rust module path of a proto package: `k8s.io.api.apps.v1` → `["api", "apps", "v1"]`.
pub fn module_path(proto_package: &str) -> Vec<String> {
    proto_package.trim_start_matches("k8s.io.").split('.').map(|s| s.replace('-', "_")).collect()
}

/// The proto package of an OpenAPI definition name (without the type name):
/// `io.k8s.api.apps.v1.Deployment` → `k8s.io.api.apps.v1`.
pub fn definition_package(definition: &str) -> (String, String) {
    let (pkg, name) = definition.rsplit_once('.').unwrap_or(("", definition));
    let pkg = pkg.strip_prefix("io.k8s.").map_or_else(|| pkg.to_owned(), |rest| format!("k8s.io.{rest}"));
    (pkg.replace('-', "_"), name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names() {
        let cases = [
            ("apiVersion", "api_version"),
            ("podIPs", "pod_ips"),
            ("podIP", "pod_ip"),
            ("hostIPC", "host_ipc"),
            ("clusterIPs", "cluster_ips"),
            ("podCIDRs", "pod_cidrs"),
            ("targetWWNs", "target_wwns"),
            ("ipFamilyPolicy", "ip_family_policy"),
            ("IPFamily", "ip_family"),
            ("externalIPs", "external_ips"),
            ("type", "r#type"),
            ("continue", "r#continue"),
            ("$ref", "r#ref"),
            ("$schema", "schema"),
            ("x-kubernetes-list-type", "x_kubernetes_list_type"),
            ("uid", "uid"),
            ("readOnlyRootFilesystem", "read_only_root_filesystem"),
            ("fsGroup", "fs_group"),
            ("nodeSelectorTerms", "node_selector_terms"),
            ("v1", "v1"),
            ("jSONSchemas", "j_son_schemas"),
            ("caBundle", "ca_bundle"),
            ("terminationGracePeriodSeconds", "termination_grace_period_seconds"),
            ("URL", "url"),
            ("serverAddressByClientCIDRs", "server_address_by_client_cidrs"),
            ("matchLabelKeys", "match_label_keys"),
            ("allocatedResourceStatuses", "allocated_resource_statuses"),
            ("ipv4", "ipv4"),
        ];
        for (json, rust) in cases {
            assert_eq!(field_name(json), rust, "{json}");
        }
    }

    #[test]
    fn modules() {
        assert_eq!(module_path("k8s.io.api.apps.v1"), ["api", "apps", "v1"]);
        assert_eq!(
            definition_package("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON"),
            ("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1".to_owned(), "JSON".to_owned())
        );
    }
}
