//! Content negotiation of a resource endpoint: which wire form an answer takes, and into which
//! `meta.k8s.io` representation (`Table`, `PartialObjectMetadata[List]`) the object is turned
//! first. Upstream's `endpoints/handlers/negotiation` (`NegotiateMediaTypeOptions`,
//! `acceptMediaTypeOptions`) with the request scope's `AllowsMediaTypeTransform`, without I/O.
//!
//! The `Accept` clauses are ordered as `goautoneg` orders them ([`crate::tables::parse_accept`],
//! in O(n log n) of the header's length; a header past Go's 1 MiB header limit matches nothing);
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

    /// `goautoneg`'s ordering as Go's insertion sort does it: the reference the fast ordering of
    /// `parse_accept` must agree with. Clauses are `(q, kind, sub_kind, index)`.
    fn insertion_sorted(mut clauses: Vec<(f64, String, String, usize)>) -> Vec<usize> {
        let less = |a: &(f64, String, String, usize), b: &(f64, String, String, usize)| {
            a.0 > b.0 || (a.1 != "*" && b.1 == "*") || (a.2 != "*" && b.2 == "*")
        };
        for i in 1..clauses.len() {
            let mut j = i;
            while j > 0 && less(&clauses[j], &clauses[j - 1]) {
                clauses.swap(j, j - 1);
                j -= 1;
            }
        }
        clauses.into_iter().map(|c| c.3).collect()
    }

    /// The `i` parameters of the parsed clauses, in order.
    fn parsed_order(header: &str) -> Vec<usize> {
        crate::tables::parse_accept(header).iter().map(|c| c.param("i").unwrap().parse().unwrap()).collect()
    }

    #[test]
    fn accept_clauses_are_ordered_as_the_insertion_sort_orders_them() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as usize
        };
        let ranges = ["a/b", "*/*", "a/*", "*/b", "*", " a / b "];
        let qs = ["", ";q=1", ";q=0.5", ";q=0.5", ";q=0.2", ";q=0", ";q=-0", ";q=x", ";q=NaN", ";q=inf", ";q=0.9;x=y"];
        for _ in 0..3000 {
            let n = 1 + next(40);
            let mut header = Vec::new();
            let mut clauses = Vec::new();
            for i in 0..n {
                let (range, q) = (ranges[next(ranges.len() as u64)], qs[next(qs.len() as u64)]);
                header.push(format!("{range};i={i}{q}"));
                let (kind, sub_kind) = range.split_once('/').map_or(("*", "*"), |(k, s)| (k.trim(), s.trim()));
                let q = q.split(';').find_map(|p| p.strip_prefix("q=")).map_or(1.0, |v| v.parse::<f32>().map(f64::from).unwrap_or(0.0));
                clauses.push((q, kind.to_owned(), sub_kind.to_owned(), i));
            }
            let header = header.join(",");
            assert_eq!(parsed_order(&header), insertion_sorted(clauses), "{header}");
        }
    }

    #[test]
    fn long_accept_headers_are_read_in_n_log_n() {
        // 1 MiB of clauses, in the orders that make an insertion sort quadratic: each specific
        // clause moves past every wildcard before it, each clause past every one before it.
        let clauses = (1 << 20) / "a/b;i=123456,*/*;i=123456,".len();
        let alternating: String = (0..clauses).map(|i| format!("a/b;i={},*/*;i={},", 2 * i, 2 * i + 1)).collect();
        let order = parsed_order(&alternating);
        let want: Vec<usize> = (0..clauses).map(|i| 2 * i).chain((0..clauses).map(|i| 2 * i + 1)).collect();
        assert_eq!(order, want);
        let rising_clauses = (1 << 20) / "a/b;q=0.123456;i=123456,".len();
        let rising: String = (0..rising_clauses).map(|i| format!("a/b;q=0.{:06};i={i},", i + 1)).collect();
        assert!(rising.len() <= crate::tables::MAX_ACCEPT_BYTES, "{}", rising.len());
        assert_eq!(parsed_order(&rising), (0..rising_clauses).rev().collect::<Vec<_>>());
        // The common shapes: many plain clauses, one clause with a huge parameter list.
        let plain = "a/b,".repeat((1 << 20) / 4);
        assert_eq!(crate::tables::parse_accept(&plain).len(), (1 << 20) / 4 + 1 - 1);
        let params = format!("application/json{}", ";a=b".repeat(((1 << 20) - 16) / 4));
        assert_eq!(negotiate(Some(&params)), Some(Negotiated { format: Format::Json, convert: None }));
        // Past Go's header limit nothing is acceptable (Go's server answers 431 before this).
        let too_long = format!("application/json,{}", "a/b,".repeat((1 << 20) / 4));
        assert!(crate::tables::parse_accept(&too_long).is_empty());
        assert_eq!(negotiate(Some(&too_long)), None);
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
