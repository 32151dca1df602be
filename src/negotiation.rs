//! Content negotiation of a resource endpoint: which wire form an answer takes, and into which
//! `meta.k8s.io` representation (`Table`, `PartialObjectMetadata[List]`) the object is turned
//! first. Upstream's `endpoints/handlers/negotiation` (`NegotiateMediaTypeOptions`,
//! `acceptMediaTypeOptions`) with the request scope's `AllowsMediaTypeTransform`, without I/O.
//!
//! The `Accept` clauses are ordered as `goautoneg` orders them ([`crate::tables::parse_accept`]);
//! the first clause that matches a served media type (JSON, YAML, protobuf, in that order) and
//! whose parameters the endpoint allows wins:
//! - `stream=watch` is allowed on JSON and protobuf (YAML has no stream serializer);
//! - `sv` other than `v1` skips the clause;
//! - `as`/`g`/`v` ask for a conversion: `Table` (JSON and YAML only) and
//!   `PartialObjectMetadata[List]` (any of the three) in `meta.k8s.io` `v1` or `v1beta1`; any
//!   other conversion skips the clause.
//!
//! No winner is upstream's 406 listing the media types ([`not_acceptable`]).

use kapi_apimachinery::codec::{self, Format};

use crate::status::ApiError;
use crate::tables::{TableMediaType, TableRequest, TableVersion};

/// The representation an object is turned into before encoding (`as=...;g=meta.k8s.io;v=...`).
/// The version is the `meta.k8s.io` version asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conversion {
    Table(TableVersion),
    PartialObjectMetadata(TableVersion),
    PartialObjectMetadataList(TableVersion),
}

impl Conversion {
    /// The kind's name (what `as=` said).
    pub fn kind(self) -> &'static str {
        match self {
            Conversion::Table(_) => "Table",
            Conversion::PartialObjectMetadata(_) => "PartialObjectMetadata",
            Conversion::PartialObjectMetadataList(_) => "PartialObjectMetadataList",
        }
    }

    pub fn version(self) -> TableVersion {
        match self {
            Conversion::Table(v) | Conversion::PartialObjectMetadata(v) | Conversion::PartialObjectMetadataList(v) => v,
        }
    }

    /// The `Content-Type` of an answer in this representation: upstream appends the converted
    /// kind to the media type (`generateMediaTypeWithGVK`), as `;as=<kind>;v=<version>;g=<group>`.
    pub fn content_type(self, format: Format) -> String {
        let version = match self.version() {
            TableVersion::V1 => "v1",
            TableVersion::V1Beta1 => "v1beta1",
        };
        format!("{};as={};v={version};g=meta.k8s.io", format.content_type(), self.kind())
    }
}

/// The outcome of negotiation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    pub format: Format,
    pub convert: Option<Conversion>,
}

impl Negotiated {
    /// The `Table` request, when a Table was asked for (always JSON or YAML).
    pub fn table(&self) -> Option<TableRequest> {
        let Some(Conversion::Table(version)) = self.convert else { return None };
        let media_type = match self.format {
            Format::Json => TableMediaType::Json,
            Format::Yaml => TableMediaType::Yaml,
            Format::Protobuf => return None,
        };
        Some(TableRequest { version, media_type })
    }
}

/// The media types a resource endpoint serves, in upstream's order.
const SERVED: [(&str, &str, Format); 3] = [
    ("application", "json", Format::Json),
    ("application", "yaml", Format::Yaml),
    ("application", "vnd.kubernetes.protobuf", Format::Protobuf),
];

/// Negotiates `Accept`; `None` when no clause can be served. An absent or empty header is JSON.
pub fn negotiate(accept: Option<&str>) -> Option<Negotiated> {
    let Some(accept) = accept.filter(|a| !a.is_empty()) else {
        return Some(Negotiated { format: Format::Json, convert: None });
    };
    for clause in crate::tables::parse_accept(accept) {
        for (kind, sub_kind, format) in SERVED {
            let matches = (clause.kind == kind && (clause.sub_kind == sub_kind || clause.sub_kind == "*"))
                || (clause.kind == "*" && clause.sub_kind == "*");
            if matches && let Some(convert) = accept_clause(&clause, format) {
                return Some(Negotiated { format, convert });
            }
        }
    }
    None
}

/// `acceptMediaTypeOptions` + `AllowsMediaTypeTransform`: `None` when the clause must be skipped.
fn accept_clause(clause: &crate::tables::AcceptClause<'_>, format: Format) -> Option<Option<Conversion>> {
    if let Some(stream) = clause.param("stream")
        && !stream.is_empty()
        && (stream != "watch" || format == Format::Yaml)
    {
        return None;
    }
    if let Some(sv) = clause.param("sv")
        && !sv.is_empty()
        && sv != "v1"
    {
        return None;
    }
    let (kind, group, version) = (clause.param("as"), clause.param("g"), clause.param("v"));
    if kind.is_none() && group.is_none() && version.is_none() {
        return Some(None);
    }
    if group != Some("meta.k8s.io") {
        return None;
    }
    let version = match version {
        Some("v1") => TableVersion::V1,
        Some("v1beta1") => TableVersion::V1Beta1,
        _ => return None,
    };
    match kind {
        Some("Table") if format != Format::Protobuf => Some(Some(Conversion::Table(version))),
        Some("PartialObjectMetadata") => Some(Some(Conversion::PartialObjectMetadata(version))),
        Some("PartialObjectMetadataList") => Some(Some(Conversion::PartialObjectMetadataList(version))),
        _ => None,
    }
}

/// Upstream's 406 when nothing in `Accept` can be served; a watch lists its stream media types
/// (`MediaTypesForSerializer`).
pub fn not_acceptable(watch: bool) -> ApiError {
    if watch {
        ApiError::not_acceptable(&["application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch"])
    } else {
        ApiError::not_acceptable(&[codec::JSON, codec::YAML, codec::PROTOBUF])
    }
}

/// A 406 for a conversion the answer cannot take (upstream's `newNotAcceptableError` in the
/// handlers): `message` is upstream's wording.
pub fn cannot_convert(message: String) -> ApiError {
    ApiError::new(406, crate::status::StatusReason::NotAcceptable, message)
}

/// The Go type upstream names in conversion errors: the internal type of the resource's kind
/// (`*core.Pod`, `*apps.DeploymentList`). Internal packages are named after the group's first
/// label; the core group's is `core`, as is `events.k8s.io`'s (its internal type is core's
/// Event).
pub fn internal_type_name(group: &str, kind: &str) -> String {
    let package = match group {
        "" | "events.k8s.io" => "core",
        g => g.split('.').next().unwrap_or(g),
    };
    format!("*{package}.{kind}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiates_like_upstream() {
        use Conversion::*;
        use Format::*;
        let n = |format, convert| Some(Negotiated { format, convert });
        let v1 = TableVersion::V1;
        let cases: &[(&str, Option<Negotiated>)] = &[
            ("", n(Json, None)),
            ("*/*", n(Json, None)),
            ("application/*", n(Json, None)),
            ("application/yaml", n(Yaml, None)),
            ("application/vnd.kubernetes.protobuf", n(Protobuf, None)),
            ("application/vnd.kubernetes.protobuf;stream=watch", n(Protobuf, None)),
            ("application/json;stream=watch", n(Json, None)),
            ("application/yaml;stream=watch", None),
            ("application/json;stream=other", None),
            ("text/html", None),
            ("text/yaml", None),
            ("application/json;sv=v2", None),
            ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", n(Json, Some(Table(v1)))),
            ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", n(Json, Some(Table(TableVersion::V1Beta1)))),
            ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json", n(Json, None)),
            ("application/json;as=Table;v=v2;g=meta.k8s.io", None),
            ("application/json;as=Foo;v=v1;g=meta.k8s.io", None),
            ("application/json;as=Table;v=v1;g=other.io", None),
            ("application/json;g=meta.k8s.io;v=v1", None),
            (
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
                n(Protobuf, Some(PartialObjectMetadataList(v1))),
            ),
            ("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", n(Json, Some(PartialObjectMetadata(v1)))),
            (
                "application/yaml;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
                n(Yaml, Some(PartialObjectMetadata(TableVersion::V1Beta1))),
            ),
            // q orders clauses before position does.
            ("application/json;q=0.5,application/vnd.kubernetes.protobuf", n(Protobuf, None)),
        ];
        for (accept, want) in cases {
            assert_eq!(negotiate(Some(accept)), *want, "{accept}");
        }
    }

    #[test]
    fn content_types_name_the_conversion() {
        assert_eq!(
            Conversion::PartialObjectMetadataList(TableVersion::V1).content_type(Format::Protobuf),
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
        );
        assert_eq!(internal_type_name("", "PodList"), "*core.PodList");
        assert_eq!(internal_type_name("apps", "Deployment"), "*apps.Deployment");
        assert_eq!(internal_type_name("rbac.authorization.k8s.io", "Role"), "*rbac.Role");
    }
}
