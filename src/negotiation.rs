//! Content negotiation of a resource endpoint: which wire form an answer takes, and into which
//! `meta.k8s.io` representation (`Table`, `PartialObjectMetadata[List]`) the object is turned
//! first. Upstream's `endpoints/handlers/negotiation` (`NegotiateMediaTypeOptions`,
//! `acceptMediaTypeOptions`) with the request scope's `AllowsMediaTypeTransform`, without I/O.
//!
//! The `Accept` clauses are ordered as `goautoneg` orders them ([`parse_accept`], in
//! O(n log n) of the header's length; a header past Go's 1 MiB header limit matches nothing);
//! the first clause that matches a served media type (JSON, YAML, protobuf, in that order) and
//! whose parameters the endpoint allows wins:
//! - `stream=watch` is allowed on JSON and protobuf (YAML has no stream serializer);
//! - `sv` other than `v1` skips the clause;
//! - `as`/`g`/`v` ask for a conversion: `Table` (JSON and YAML only) and
//!   `PartialObjectMetadata[List]` (any of the three) in `meta.k8s.io` `v1` or `v1beta1`; any
//!   other conversion skips the clause.
//!
//! No winner is upstream's 406 listing the media types ([`not_acceptable`]).
//!
//! Discovery negotiates with the same [`negotiate_media_type`] under its own restrictions
//! (`crate::discovery::negotiate_aggregated`).

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
    // One served media type (or `*/*`) without parameters, as most clients send, names its
    // format outright.
    if let Some((_, _, format)) =
        SERVED.iter().find(|(kind, sub_kind, _)| accept.strip_prefix(kind).and_then(|a| a.strip_prefix('/')) == Some(sub_kind))
    {
        return Some(Negotiated { format: *format, convert: None });
    }
    if accept == "*/*" {
        return Some(Negotiated { format: Format::Json, convert: None });
    }
    negotiate_media_type(accept, accept_clause).map(|(format, convert)| Negotiated { format, convert })
}

/// Upstream's `NegotiateMediaTypeOptions` for a non-empty header: the first clause, in
/// `goautoneg`'s order, that matches a served media type (JSON, YAML, protobuf, in that order;
/// `type/*` and `*/*` match) and that `accept_clause` takes in that format (the endpoint's
/// `acceptMediaTypeOptions` under its `EndpointRestrictions`; `None` skips the pair).
pub(crate) fn negotiate_media_type<T>(header: &str, accept_clause: impl Fn(&AcceptClause<'_>, Format) -> Option<T>) -> Option<(Format, T)> {
    for clause in parse_accept(header) {
        for (kind, sub_kind, format) in SERVED {
            let matches = (clause.kind == kind && (clause.sub_kind == sub_kind || clause.sub_kind == "*"))
                || (clause.kind == "*" && clause.sub_kind == "*");
            if matches && let Some(accepted) = accept_clause(&clause, format) {
                return Some((format, accepted));
            }
        }
    }
    None
}

/// The parameters `acceptMediaTypeOptions` checks the same way for every endpoint: a
/// non-empty `stream` must be `watch` (every endpoint's `AllowsStreamSchema`) in a format with a
/// stream serializer (not YAML), and a non-empty `sv` must be the endpoint's server version
/// (`AllowsServerVersion`; `None`: the endpoint allows none).
pub(crate) fn allows_stream_and_server_version(clause: &AcceptClause<'_>, format: Format, server_version: Option<&str>) -> bool {
    let stream_ok = clause.param("stream").is_none_or(|stream| stream.is_empty() || (stream == "watch" && format != Format::Yaml));
    let server_version_ok = clause.param("sv").is_none_or(|sv| sv.is_empty() || Some(sv) == server_version);
    stream_ok && server_version_ok
}

/// `acceptMediaTypeOptions` under a resource endpoint's restrictions (the request scope's:
/// server version `v1`, and `AllowsMediaTypeTransform`): `None` when the clause must be skipped.
fn accept_clause(clause: &AcceptClause<'_>, format: Format) -> Option<Option<Conversion>> {
    if !allows_stream_and_server_version(clause, format, Some("v1")) {
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

// ---------------------------------------------------------------------------------------------
// The Accept header

/// One clause of an `Accept` header, as `goautoneg` parses it.
pub(crate) struct AcceptClause<'a> {
    pub(crate) kind: &'a str,
    pub(crate) sub_kind: &'a str,
    pub(crate) q: f64,
    pub(crate) params: Vec<(&'a str, &'a str)>,
}

impl AcceptClause<'_> {
    pub(crate) fn param(&self, key: &str) -> Option<&str> {
        self.params.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

/// The longest `Accept` header read: Go's `http.Server` refuses requests whose headers pass
/// `DefaultMaxHeaderBytes` (1 MiB) with a 431 before any handler sees them; a longer header
/// here yields no clauses (so nothing is acceptable).
pub(crate) const MAX_ACCEPT_BYTES: usize = 1 << 20;

/// `goautoneg.ParseAccept` (`github.com/munnerz/goautoneg` as kube-apiserver vendors it):
/// clauses, then ordered by `q` and specificity (Go's insertion sort
/// for short slices, with `goautoneg`'s comparison; [`goautoneg_order`] gives the insertion
/// sort's result in O(n log n)).
pub(crate) fn parse_accept(header: &str) -> Vec<AcceptClause<'_>> {
    if header.len() > MAX_ACCEPT_BYTES {
        return Vec::new();
    }
    let mut clauses = Vec::new();
    for part in header.split(',') {
        let mut pieces = part.trim_matches(' ').split(';');
        let range = pieces.next().unwrap_or_default(); // `split` yields at least one piece
        // `type/subtype`, or `*` alone; `type`, `type/` and `type/sub/more` are skipped, and a
        // trailing `/` after the subtype is dropped.
        let (kind, sub_kind) = match range.split_once('/') {
            Some((kind, rest)) if !rest.is_empty() => match rest.split_once('/') {
                None => (kind, rest),
                Some((sub_kind, "")) => (kind, sub_kind),
                Some(_) => continue,
            },
            _ => match range.split('/').next().unwrap_or_default().trim_matches(' ') {
                "*" => ("*", "*"),
                _ => continue,
            },
        };
        let mut clause = AcceptClause { kind: kind.trim_matches(' '), sub_kind: sub_kind.trim_matches(' '), q: 1.0, params: Vec::new() };
        for param in pieces {
            // `key=value`: a parameter without a value (`key`, `key=`) is skipped, so is one
            // whose value holds a further `=` followed by more.
            let Some((key, rest)) = param.split_once('=') else { continue };
            if rest.is_empty() {
                continue;
            }
            let value = match rest.split_once('=') {
                None => rest,
                Some((value, "")) => value,
                Some(_) => continue,
            };
            let key = key.trim_matches(' ');
            if key == "q" {
                // Go's `strconv.ParseFloat(value, 32)`, untrimmed; 0 when it fails.
                clause.q = value.parse::<f32>().map(f64::from).unwrap_or(0.0);
            } else {
                clause.params.push((key, value.trim_matches(' ')));
            }
        }
        clauses.push(clause);
    }
    let keys: Vec<AcceptOrderKey> =
        clauses.iter().map(|c| AcceptOrderKey { q: c.q, any_kind: c.kind == "*", any_sub_kind: c.sub_kind == "*" }).collect();
    let mut slots: Vec<Option<AcceptClause<'_>>> = clauses.into_iter().map(Some).collect();
    goautoneg_order(&keys).into_iter().filter_map(|i| slots[i].take()).collect()
}

/// What `goautoneg` compares clauses by.
#[derive(Clone, Copy, Debug)]
struct AcceptOrderKey {
    q: f64,
    any_kind: bool,
    any_sub_kind: bool,
}

impl AcceptOrderKey {
    /// `goautoneg`'s `Less`: a higher `q`, or a type where the other has `*`, or a subtype where
    /// the other has `*`. Not an order (`a/b;q=0.5` and `*/*` are each less than the other).
    fn less(self, other: AcceptOrderKey) -> bool {
        self.q > other.q || (!self.any_kind && other.any_kind) || (!self.any_sub_kind && other.any_sub_kind)
    }

    /// The wildcard class: bit 1 for `*` as type, bit 0 for `*` as subtype.
    fn class(self) -> usize {
        usize::from(self.any_kind) << 1 | usize::from(self.any_sub_kind)
    }

    /// `q` as a key ordered as `!(x.q > y.q)` needs: numbers in numeric order (`-0` = `0`), NaN
    /// above all (no `q` is greater than NaN); never 0.
    fn q_key(self) -> u64 {
        if self.q.is_nan() {
            return u64::MAX;
        }
        let bits = (self.q + 0.0).to_bits();
        if bits >> 63 == 1 { !bits } else { bits | 1 << 63 }
    }

    /// The least [`q_key`](Self::q_key) of a clause this one is not less than by `q`: its own,
    /// or any (1) when its `q` is NaN.
    fn q_threshold(self) -> u64 {
        if self.q.is_nan() { 1 } else { self.q_key() }
    }
}

/// The order an insertion sort with [`AcceptOrderKey::less`] leaves `keys` in (indices into
/// `keys`), in O(n log n) where the sort itself is quadratic.
///
/// The insertion sort moves each clause `x` left past the clauses it is less than, so it lands
/// right after the last clause `y` placed before it that it is not less than: `!(x.q > y.q)`
/// and `y` with `*` only where `x` has it (a wildcard class that is a subset of `x`'s), or at
/// the front when there is none. That clause is found in a search tree of the sequence built so
/// far that keeps, per subtree and wildcard class, the greatest `q` ([`OrderTree`]).
fn goautoneg_order(keys: &[AcceptOrderKey]) -> Vec<usize> {
    // Already in order (the usual case): nothing moves.
    if keys.windows(2).all(|pair| !pair[1].less(pair[0])) {
        return (0..keys.len()).collect();
    }
    let mut sequence = OrderTree::with_capacity(keys.len());
    for key in keys {
        let classes = (0..4).filter(|class| class & !key.class() == 0).fold(0u8, |mask, class| mask | 1 << class);
        let after = sequence.last_at_least(classes, key.q_threshold());
        sequence.insert_after(after, key.class(), key.q_key());
    }
    sequence.in_order()
}

/// A sequence of `(class, key)` elements (numbered in insertion order) with insertion after any
/// element and "the last element of these classes with a key of at least this", both in
/// O(log n) expected: a treap ordered by position, each node keeping the greatest key of each
/// class in its subtree.
struct OrderTree {
    nodes: Vec<OrderNode>,
    root: usize,
    seed: u64,
}

#[derive(Clone, Copy)]
struct OrderNode {
    left: usize,
    right: usize,
    parent: usize,
    priority: u64,
    class: usize,
    key: u64,
    /// The greatest key per class in the subtree (0: none).
    greatest: [u64; 4],
}

const NO_NODE: usize = usize::MAX;

impl OrderTree {
    fn with_capacity(capacity: usize) -> OrderTree {
        OrderTree { nodes: Vec::with_capacity(capacity), root: NO_NODE, seed: 0x9e37_79b9_7f4a_7c15 }
    }

    /// Whether the subtree of `node` has an element of `classes` (a bit set) with a key of at
    /// least `threshold`.
    fn has(&self, node: usize, classes: u8, threshold: u64) -> bool {
        node != NO_NODE && (0..4).any(|class| classes & 1 << class != 0 && self.nodes[node].greatest[class] >= threshold)
    }

    /// The last element of `classes` with a key of at least `threshold` (`threshold` > 0).
    fn last_at_least(&self, classes: u8, threshold: u64) -> Option<usize> {
        let mut node = self.root;
        if !self.has(node, classes, threshold) {
            return None;
        }
        loop {
            let n = self.nodes[node];
            if self.has(n.right, classes, threshold) {
                node = n.right;
            } else if classes & 1 << n.class != 0 && n.key >= threshold {
                return Some(node);
            } else {
                node = n.left;
            }
        }
    }

    fn leftmost(&self, mut node: usize) -> usize {
        while self.nodes[node].left != NO_NODE {
            node = self.nodes[node].left;
        }
        node
    }

    /// Recomputes the greatest keys of `node` from its own and its children's.
    fn update(&mut self, node: usize) {
        let n = self.nodes[node];
        let mut greatest = [0; 4];
        greatest[n.class] = n.key;
        for child in [n.left, n.right] {
            if child != NO_NODE {
                for (mine, theirs) in greatest.iter_mut().zip(self.nodes[child].greatest) {
                    *mine = (*mine).max(theirs);
                }
            }
        }
        self.nodes[node].greatest = greatest;
    }

    /// Inserts a new element right after `after` (at the front for `None`).
    fn insert_after(&mut self, after: Option<usize>, class: usize, key: u64) {
        // xorshift64: priorities independent of the input.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let node = self.nodes.len();
        let mut greatest = [0; 4];
        greatest[class] = key;
        self.nodes.push(OrderNode { left: NO_NODE, right: NO_NODE, parent: NO_NODE, priority: self.seed, class, key, greatest });
        if self.root == NO_NODE {
            self.root = node;
            return;
        }
        let (parent, as_left) = match after {
            None => (self.leftmost(self.root), true),
            Some(after) if self.nodes[after].right == NO_NODE => (after, false),
            Some(after) => (self.leftmost(self.nodes[after].right), true),
        };
        if as_left {
            self.nodes[parent].left = node;
        } else {
            self.nodes[parent].right = node;
        }
        self.nodes[node].parent = parent;
        let mut ancestor = parent;
        while ancestor != NO_NODE {
            let greatest = &mut self.nodes[ancestor].greatest[class];
            *greatest = (*greatest).max(key);
            ancestor = self.nodes[ancestor].parent;
        }
        while self.nodes[node].parent != NO_NODE && self.nodes[self.nodes[node].parent].priority < self.nodes[node].priority {
            self.rotate_up(node);
        }
    }

    /// Rotates `node` above its parent, keeping the sequence.
    fn rotate_up(&mut self, node: usize) {
        let parent = self.nodes[node].parent;
        let grandparent = self.nodes[parent].parent;
        let moved = if self.nodes[parent].left == node {
            let moved = self.nodes[node].right;
            self.nodes[parent].left = moved;
            self.nodes[node].right = parent;
            moved
        } else {
            let moved = self.nodes[node].left;
            self.nodes[parent].right = moved;
            self.nodes[node].left = parent;
            moved
        };
        if moved != NO_NODE {
            self.nodes[moved].parent = parent;
        }
        self.nodes[parent].parent = node;
        self.nodes[node].parent = grandparent;
        if grandparent == NO_NODE {
            self.root = node;
        } else if self.nodes[grandparent].left == parent {
            self.nodes[grandparent].left = node;
        } else {
            self.nodes[grandparent].right = node;
        }
        self.update(parent);
        self.update(node);
    }

    /// The elements in sequence order.
    fn in_order(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut stack = Vec::new();
        let mut node = self.root;
        loop {
            while node != NO_NODE {
                stack.push(node);
                node = self.nodes[node].left;
            }
            let Some(top) = stack.pop() else { break };
            out.push(top);
            node = self.nodes[top].right;
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Answers

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
        parse_accept(header).iter().map(|c| c.param("i").unwrap().parse().unwrap()).collect()
    }

    /// The headers answered without parsing answer as parsing them does.
    #[test]
    fn plain_media_types_negotiate_as_parsed() {
        for accept in ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "*/*"] {
            let parsed = negotiate_media_type(accept, accept_clause).map(|(format, convert)| Negotiated { format, convert });
            assert_eq!(negotiate(Some(accept)), parsed, "{accept}");
            assert!(parsed.is_some(), "{accept}");
        }
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

    /// `goautoneg.ParseAccept` (munnerz/goautoneg as kube-apiserver vendors it) on each clause
    /// shape: the clauses kept, in order, as `kind/sub_kind q params...`.
    #[test]
    fn accept_clauses_are_read_as_goautoneg_reads_them() {
        let cases: &[(&str, &[&str])] = &[
            ("a/b", &["a/b 1"]),
            ("*", &["*/* 1"]),
            (" a / b ;q=0.5 ", &["a/b 0.5"]),
            // Media ranges that are not `type/subtype` or `*` are skipped.
            ("a,a/,a/b/c,/", &[]),
            ("*/", &["*/* 1"]),
            ("a/b/", &["a/b 1"]),
            ("a//", &["a/ 1"]),
            // Parameters without a value, or with more after a second `=`, are skipped.
            ("a/b;k;k2=;k3=v=w;k4=v=;k5==; k6 = v6 ", &["a/b 1 k4=v k5= k6=v6"]),
            ("a/b;q=", &["a/b 1"]),
            ("a/b;q=0.5=", &["a/b 0.5"]),
            ("a/b;q= 0.5", &["a/b 0"]),
            ("a/b;q=x", &["a/b 0"]),
            ("a/b;q=1e50", &["a/b inf"]),
            ("", &[]),
            (",,a/b,", &["a/b 1"]),
        ];
        for (header, want) in cases {
            let got: Vec<String> = parse_accept(header)
                .iter()
                .map(|c| {
                    let params: String = c.params.iter().map(|(k, v)| format!(" {k}={v}")).collect();
                    format!("{}/{} {}{params}", c.kind, c.sub_kind, c.q)
                })
                .collect();
            assert_eq!(got, *want, "{header:?}");
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
        assert!(rising.len() <= MAX_ACCEPT_BYTES, "{}", rising.len());
        assert_eq!(parsed_order(&rising), (0..rising_clauses).rev().collect::<Vec<_>>());
        // The common shapes: many plain clauses, one clause with a huge parameter list.
        let plain = "a/b,".repeat((1 << 20) / 4);
        assert_eq!(parse_accept(&plain).len(), (1 << 20) / 4 + 1 - 1);
        let params = format!("application/json{}", ";a=b".repeat(((1 << 20) - 16) / 4));
        assert_eq!(negotiate(Some(&params)), Some(Negotiated { format: Format::Json, convert: None }));
        // Past Go's header limit nothing is acceptable (Go's server answers 431 before this).
        let too_long = format!("application/json,{}", "a/b,".repeat((1 << 20) / 4));
        assert!(parse_accept(&too_long).is_empty());
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
