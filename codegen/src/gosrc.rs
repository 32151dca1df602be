//! Reading upstream's Go struct declarations (`api-specs/v<VERSION>/go/k8s.io/<package>/*.go`).
//!
//! Neither `swagger.json` nor `generated.proto` says whether a Go field is a pointer or a value,
//! or carries `omitempty`/`omitzero`; those decide what Go's encoders write for a zero or absent
//! field, so the join ([`crate::model`]) takes them from here. This is a small hand-written
//! parser of `type X struct { ... }` declarations (also inside `type ( ... )` groups) and of
//! `type X = pkg.Y` aliases: per field its name (or, embedded, its type's), its Go type
//! expression and its `json` and `protobuf` struct tags. Method bodies, functions and everything
//! else are skipped. Upstream's API packages use no generics and no anonymous struct fields.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// One Go package: its struct types and aliases by name.
#[derive(Debug, Default, Clone)]
pub struct GoPackage {
    pub structs: BTreeMap<String, GoStruct>,
    /// `type Table = v1.Table`: alias name → (import path, name).
    pub aliases: BTreeMap<String, (String, String)>,
    /// Named non-struct types: name → Go type expression (`type ExtraValue []string`).
    pub named: BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
pub struct GoStruct {
    pub name: String,
    pub fields: Vec<GoField>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoField {
    /// The Go field name; for an embedded field, its type's name (`TypeMeta`).
    pub name: String,
    /// The type expression as written (`*int32`, `[]Container`, `metav1.ObjectMeta`).
    pub ty: String,
    pub embedded: bool,
    /// The `json` tag: name (empty when the tag has none, e.g. `json:",inline"`) and options.
    pub json: Option<JsonTag>,
    /// The field number of the `protobuf` tag; `None` without one or for `protobuf:"-"`.
    pub proto_number: Option<u32>,
    /// The `name=` of the `protobuf` tag.
    pub proto_name: Option<String>,
    /// For a type of another package (`corev1.ResourceList`), that package's import path.
    pub type_import: Option<String>,
    /// The declarative default of a `// +default=<JSON>` marker above the field, as JSON text
    /// (`"TCP"`, `0`); markers naming a Go constant (`ref(...)`) are left out.
    pub default: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JsonTag {
    pub name: String,
    pub omitempty: bool,
    pub omitzero: bool,
    pub inline: bool,
    /// `json:"-"`: never encoded.
    pub skip: bool,
}

impl GoField {
    pub fn is_pointer(&self) -> bool {
        self.ty.starts_with('*')
    }
}

/// Every Go package below `root` (`api-specs/v<VERSION>/go`), keyed by import path
/// (`k8s.io/api/core/v1`).
pub fn load(root: &Path) -> Result<BTreeMap<String, GoPackage>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "go") {
                files.push(path);
            }
        }
        if files.is_empty() {
            continue;
        }
        files.sort();
        let import = dir.strip_prefix(root)?.to_string_lossy().replace('\\', "/");
        let mut pkg = GoPackage::default();
        for f in files {
            let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            parse_file(&text, &mut pkg).with_context(|| format!("parsing {}", f.display()))?;
        }
        out.insert(import, pkg);
    }
    Ok(out)
}

/// How [`strip_comments`] keeps a `// +default=<value>` marker: this character, then the value,
/// on the marker's own line (no Go source contains it).
const DEFAULT_MARKER: char = '\u{1}';

/// Removes comments (keeping newlines and the contents of string and raw-string literals, where
/// `//` may appear).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            '/' if b.get(i + 1) == Some(&'/') => {
                let start = i;
                while i < b.len() && b[i] != '\n' {
                    i += 1;
                }
                // A marker on a line of its own survives as a line the struct parser reads.
                let own_line = out.rsplit('\n').next().is_some_and(|l| l.trim().is_empty());
                let comment: String = b[start + 2..i].iter().collect();
                if own_line && let Some(value) = comment.trim().strip_prefix("+default=") {
                    out.push(DEFAULT_MARKER);
                    out.push_str(value.trim());
                }
            }
            '/' if b.get(i + 1) == Some(&'*') => {
                i += 2;
                while i < b.len() && !(b[i] == '*' && b.get(i + 1) == Some(&'/')) {
                    if b[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
                i += 2;
            }
            '`' => {
                out.push(c);
                i += 1;
                while i < b.len() && b[i] != '`' {
                    out.push(b[i]);
                    i += 1;
                }
                if i < b.len() {
                    out.push('`');
                }
                i += 1;
            }
            '"' | '\'' => {
                out.push(c);
                i += 1;
                while i < b.len() && b[i] != c && b[i] != '\n' {
                    if b[i] == '\\' && i + 1 < b.len() {
                        out.push(b[i]);
                        i += 1;
                    }
                    out.push(b[i]);
                    i += 1;
                }
                if i < b.len() && b[i] == c {
                    out.push(c);
                }
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Splits `text` into logical lines: a newline inside a raw string (a multi-line struct tag)
/// does not end a line.
fn logical_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_raw = false;
    for c in text.chars() {
        match c {
            '`' => {
                in_raw = !in_raw;
                cur.push(c);
            }
            '\n' if in_raw => cur.push(' '),
            '\n' | ';' => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|l| l.trim().to_owned()).collect()
}

fn parse_file(text: &str, pkg: &mut GoPackage) -> Result<()> {
    let text = strip_comments(text);
    let lines = logical_lines(&text);
    let imports = imports(&lines);
    let mut i = 0;
    let mut in_group = false;
    while i < lines.len() {
        let line = &lines[i];
        i += 1;
        let decl = if in_group {
            if line == ")" {
                in_group = false;
                continue;
            }
            line.as_str()
        } else if let Some(rest) = line.strip_prefix("type ") {
            if rest.trim() == "(" {
                in_group = true;
                continue;
            }
            rest
        } else {
            continue;
        };
        let decl = decl.trim();
        let Some((name, rest)) = decl.split_once(char::is_whitespace) else { continue };
        let rest = rest.trim();
        if let Some(target) = rest.strip_prefix('=') {
            let target = target.trim();
            if let Some((alias_pkg, alias_name)) = target.split_once('.') {
                let Some(path) = imports.get(alias_pkg) else {
                    bail!("alias {name} = {target}: no import named {alias_pkg}");
                };
                pkg.aliases.insert(name.to_owned(), (path.clone(), alias_name.to_owned()));
            } else {
                pkg.named.insert(name.to_owned(), target.to_owned());
            }
            continue;
        }
        if rest.starts_with("struct") && rest.ends_with('{') {
            let mut fields = Vec::new();
            let mut default = None;
            loop {
                let Some(l) = lines.get(i) else { bail!("struct {name} is not closed") };
                i += 1;
                if l == "}" {
                    break;
                }
                if let Some(value) = l.strip_prefix(DEFAULT_MARKER) {
                    // Only JSON literals: `ref(Constant)` names a Go constant.
                    default = serde_json::from_str::<serde_json::Value>(value).is_ok().then(|| value.to_owned());
                    continue;
                }
                if l.is_empty() {
                    continue;
                }
                let field_default = default.take();
                for mut f in parse_field(l).with_context(|| format!("struct {name}: field `{l}`"))? {
                    f.default.clone_from(&field_default);
                    let base = f.ty.trim_start_matches(['*', '[', ']']);
                    if let Some((q, _)) = base.split_once('.') {
                        f.type_import = imports.get(q).cloned();
                    }
                    fields.push(f);
                }
            }
            pkg.structs.insert(name.to_owned(), GoStruct { name: name.to_owned(), fields });
        } else if rest.starts_with("struct{}") || rest == "struct {}" {
            pkg.structs.insert(name.to_owned(), GoStruct { name: name.to_owned(), fields: Vec::new() });
        } else if rest.starts_with("interface") {
            if rest.ends_with('{') {
                // Skip the method set.
                while let Some(l) = lines.get(i) {
                    i += 1;
                    if l == "}" {
                        break;
                    }
                }
            }
        } else {
            // A defined type with another package's struct underneath (`type MatchCondition
            // v1.MatchCondition`) has that struct's fields: resolve it like an alias.
            if let Some((p, n)) = rest.split_once('.')
                && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && let Some(path) = imports.get(p)
            {
                pkg.aliases.insert(name.to_owned(), (path.clone(), n.to_owned()));
            }
            pkg.named.insert(name.to_owned(), rest.to_owned());
        }
    }
    Ok(())
}

/// The file's imports: local name → import path.
fn imports(lines: &[String]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut add = |spec: &str| {
        let spec = spec.trim();
        let (alias, path) = match spec.split_once(char::is_whitespace) {
            Some((a, p)) => (Some(a.trim()), p.trim()),
            None => (None, spec),
        };
        let path = path.trim_matches('"');
        if path.is_empty() {
            return;
        }
        let name = alias.map(str::to_owned).unwrap_or_else(|| path.rsplit('/').next().unwrap_or(path).to_owned());
        out.insert(name, path.to_owned());
    };
    let mut in_group = false;
    for line in lines {
        if in_group {
            if line == ")" {
                in_group = false;
            } else if !line.is_empty() {
                add(line);
            }
        } else if let Some(rest) = line.strip_prefix("import") {
            let rest = rest.trim();
            if rest == "(" {
                in_group = true;
            } else {
                add(rest);
            }
        }
    }
    out
}

/// One field line: `Name Type` / `A, B Type` / `Type` (embedded), each with an optional tag.
fn parse_field(line: &str) -> Result<Vec<GoField>> {
    let (decl, tag) = match line.find('`') {
        Some(start) => {
            let end = line.rfind('`').filter(|e| *e > start).context("unterminated struct tag")?;
            (line[..start].trim(), Some(&line[start + 1..end]))
        }
        None => (line.trim(), None),
    };
    let tag = tag.map(parse_tag).unwrap_or_default();
    let json = tag.get("json").map(|v| parse_json_tag(v));
    let (proto_number, proto_name) = match tag.get("protobuf") {
        Some(v) if v != "-" => {
            let parts: Vec<&str> = v.split(',').collect();
            let number = parts.get(1).and_then(|n| n.parse().ok());
            let name = parts.iter().find_map(|p| p.strip_prefix("name=")).map(str::to_owned);
            (number, name)
        }
        _ => (None, None),
    };
    if decl.ends_with('{') {
        bail!("anonymous struct types are not supported");
    }
    let mut words = decl.splitn(2, char::is_whitespace);
    let first = words.next().unwrap_or_default();
    let rest = words.next().map(str::trim).unwrap_or_default();
    let field = |name: &str, ty: &str, embedded: bool| GoField {
        name: name.to_owned(),
        ty: ty.to_owned(),
        embedded,
        json: json.clone(),
        proto_number,
        proto_name: proto_name.clone(),
        type_import: None,
        default: None,
    };
    if rest.is_empty() {
        // Embedded: `metav1.TypeMeta`, `*Foo`.
        let base = first.trim_start_matches('*');
        let name = base.rsplit('.').next().unwrap_or(base);
        return Ok(vec![field(name, first, true)]);
    }
    if first.ends_with(',') {
        // `A, B T`
        let all = decl;
        let (names, ty) = split_names(all)?;
        return Ok(names.iter().map(|n| field(n, &ty, false)).collect());
    }
    Ok(vec![field(first, rest, false)])
}

fn split_names(decl: &str) -> Result<(Vec<String>, String)> {
    let mut names = Vec::new();
    let mut rest = decl;
    loop {
        let (name, tail) = rest.split_once(|c: char| c == ',' || c.is_whitespace()).context("field list")?;
        names.push(name.trim().to_owned());
        let tail = tail.trim_start();
        if let Some(t) = tail.strip_prefix(',') {
            rest = t.trim_start();
        } else if rest[name.len()..].trim_start().starts_with(',') {
            rest = tail;
        } else {
            return Ok((names, tail.trim().to_owned()));
        }
    }
}

/// `json:"a,omitempty" protobuf:"bytes,1,opt,name=a"` → key → value.
fn parse_tag(tag: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = tag.trim();
    while let Some(colon) = rest.find(":\"") {
        let key = rest[..colon].trim().to_owned();
        let after = &rest[colon + 2..];
        let Some(end) = after.find('"') else { break };
        out.insert(key, after[..end].to_owned());
        rest = after[end + 1..].trim_start();
    }
    out
}

fn parse_json_tag(v: &str) -> JsonTag {
    if v == "-" {
        return JsonTag { skip: true, ..JsonTag::default() };
    }
    let mut parts = v.split(',');
    let name = parts.next().unwrap_or_default().to_owned();
    let mut tag = JsonTag { name, ..JsonTag::default() };
    for opt in parts {
        match opt.trim() {
            "omitempty" => tag.omitempty = true,
            "omitzero" => tag.omitzero = true,
            "inline" => tag.inline = true,
            _ => {}
        }
    }
    tag
}

/// The Go import path of a proto package: `k8s.io.api.core.v1` → `k8s.io/api/core/v1`,
/// `k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1` →
/// `k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1`.
pub fn import_path(proto_package: &str) -> String {
    let rest = proto_package.strip_prefix("k8s.io.").unwrap_or(proto_package);
    let rest =
        rest.replace('.', "/").replace("apiextensions_apiserver", "apiextensions-apiserver").replace("kube_aggregator", "kube-aggregator");
    format!("k8s.io/{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_structs_tags_aliases_and_comments() {
        let src = r#"
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A comment with a `backtick` and type Fake struct {
type Pod struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object's metadata. // nested
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Spec PodSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	/* block */ Replicas *int32 `json:"replicas" protobuf:"varint,3,opt,name=replicas"`
	Data []byte `json:"data,omitzero"
		protobuf:"bytes,4,opt,name=data"`
	A, B string
	// +default=ref(SomeConstant)
	Ignored string `json:"-"`
	// Defaults to "TCP".
	// +default="TCP"

	Port intstr.IntOrString `json:"port,omitempty" protobuf:"bytes,5,opt,name=port"`
}

type (
	Empty struct{}
	Names []string
)

type Table = metav1.Table

func (p *Pod) String() string { return "type X struct {" }
"#;
        let mut pkg = GoPackage::default();
        parse_file(src, &mut pkg).unwrap();
        let pod = &pkg.structs["Pod"];
        let names: Vec<&str> = pod.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["TypeMeta", "ObjectMeta", "Spec", "Replicas", "Data", "A", "B", "Ignored", "Port"]);
        assert!(pod.fields[0].embedded && pod.fields[0].json.as_ref().unwrap().inline);
        assert_eq!(pod.fields[1].proto_number, Some(1));
        assert_eq!(pod.fields[1].json.as_ref().unwrap().name, "metadata");
        assert!(pod.fields[3].is_pointer());
        let data = &pod.fields[4];
        assert_eq!((data.ty.as_str(), data.proto_number), ("[]byte", Some(4)));
        assert!(data.json.as_ref().unwrap().omitzero && !data.json.as_ref().unwrap().omitempty);
        assert_eq!(pod.fields[6].ty, "string");
        assert!(pod.fields[7].json.as_ref().unwrap().skip);
        assert_eq!(pod.fields[7].default, None);
        assert_eq!(pod.fields[8].default.as_deref(), Some("\"TCP\""));
        assert_eq!(pod.fields[3].default, None);
        assert!(pkg.structs["Empty"].fields.is_empty());
        assert_eq!(pkg.named["Names"], "[]string");
        assert_eq!(pkg.aliases["Table"], ("k8s.io/apimachinery/pkg/apis/meta/v1".to_owned(), "Table".to_owned()));
        assert!(!pkg.structs.contains_key("Fake"));
    }

    #[test]
    fn import_paths() {
        assert_eq!(import_path("k8s.io.api.core.v1"), "k8s.io/api/core/v1");
        assert_eq!(
            import_path("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"),
            "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
        );
    }
}
