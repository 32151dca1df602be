//! `/version`: the `version.Info` kubectl reads first (its dispatcher picks the kubectl matching
//! the minor version).

use kapi_api::apimachinery::pkg::version::Info;

/// The server's version, reported as the Kubernetes version whose API it serves.
pub fn info() -> Info {
    let spec = kapi_api::SPEC_VERSION; // e.g. "1.36.0"
    let mut parts = spec.split('.');
    let major = parts.next().unwrap_or("1").to_owned();
    let minor = parts.next().unwrap_or("0").to_owned();
    Info {
        major: major.clone(),
        minor: minor.clone(),
        emulation_major: Some(major.clone()),
        emulation_minor: Some(minor.clone()),
        min_compatibility_major: Some(major),
        min_compatibility_minor: Some(minor),
        git_version: format!("v{spec}+kapi-{}", env!("CARGO_PKG_VERSION")),
        git_commit: option_env!("KAPI_GIT_COMMIT").unwrap_or("unknown").to_owned(),
        git_tree_state: "clean".to_owned(),
        build_date: option_env!("KAPI_BUILD_DATE").unwrap_or("1970-01-01T00:00:00Z").to_owned(),
        go_version: "none (kapi is written in Rust)".to_owned(),
        compiler: "rustc".to_owned(),
        platform: format!("{}/{}", std::env::consts::OS, go_arch()),
    }
}

/// Go's name for the architecture, as upstream's `platform` uses it.
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reports_the_served_kubernetes_version() {
        let info = super::info();
        assert_eq!(info.major, "1");
        assert_eq!(info.minor, "36");
        assert!(info.git_version.starts_with("v1.36."), "{}", info.git_version);
        let json = serde_json::to_value(&info).unwrap();
        assert_eq!(json["gitVersion"], info.git_version.as_str());
        assert_eq!(json["platform"], format!("linux/{}", super::go_arch()));
    }
}
