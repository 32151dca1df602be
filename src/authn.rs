//! Authentication's I/O-free parts (`k8s.io/apiserver/pkg/authentication`): bearer tokens as
//! the `Authorization` header carries them, the static token file (`--token-auth-file`), the
//! anonymous user, the `system:authenticated` group every authenticated user gets, and the
//! impersonation headers. The chain (`server::chain`) runs them in upstream's order.

use std::collections::HashMap;

use crate::rbac::{ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS};
use crate::request_info::UserInfo;

/// The longest bearer token looked at (upstream has no limit below the 1 MiB of headers; a
/// longer one cannot be any token kapi issues or a token file holds, and is refused unread).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The bearer token of an `Authorization` header (upstream's `bearertoken` authenticator):
/// `Bearer <token>`, scheme case-insensitive; `None` when there is none.
pub fn bearer_token(header: &str) -> Option<&str> {
    let auth = header.trim();
    let mut parts = auth.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// `AuthenticatedGroupAdder`: `system:authenticated` appended unless the user is anonymous or
/// already in it or in `system:unauthenticated`.
pub fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    let already = user.groups.iter().any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED);
    if user.name != ANONYMOUS && !already {
        user.groups.push(ALL_AUTHENTICATED.to_owned());
    }
    user
}

/// The user of a request without credentials (`--anonymous-auth`).
pub fn anonymous() -> UserInfo {
    UserInfo { name: ANONYMOUS.into(), groups: vec![ALL_UNAUTHENTICATED.into()], ..Default::default() }
}

/// The tokens of `--token-auth-file`, upstream's CSV: `token,user,uid[,"group1,group2"]`.
#[derive(Debug, Default, Clone)]
pub struct StaticTokens(HashMap<String, UserInfo>);

impl StaticTokens {
    /// Parses the file's text with upstream's rules: at least 3 columns, empty tokens skipped,
    /// a repeated token's last line wins.
    pub fn parse(text: &str) -> Result<StaticTokens, String> {
        let mut tokens = HashMap::new();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for line in text.lines() {
            if line.trim().is_empty() {
                continue;
            }
            let record = csv_record(line)?;
            if record.len() < 3 {
                return Err(format!("token file must have at least 3 columns (token, user name, user uid), found {}", record.len()));
            }
            if record[0].is_empty() {
                continue;
            }
            let groups = match record.get(3) {
                Some(groups) => groups.split(',').map(str::to_owned).collect(),
                None => Vec::new(),
            };
            tokens.insert(record[0].clone(), UserInfo { name: record[1].clone(), uid: record[2].clone(), groups, ..Default::default() });
        }
        Ok(StaticTokens(tokens))
    }

    /// The user a token names (before `system:authenticated` is added).
    pub fn authenticate(&self, token: &str) -> Option<&UserInfo> {
        self.0.get(token)
    }
}

/// One line of CSV as Go's `encoding/csv` reads it (quoted fields, `""` inside quotes).
fn csv_record(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        match c {
            '"' if at_start => {
                quoted = true;
                at_start = false;
            }
            '"' if quoted => {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            }
            ',' if !quoted => {
                fields.push(std::mem::take(&mut field));
                at_start = true;
            }
            c => {
                field.push(c);
                at_start = false;
            }
        }
    }
    if quoted {
        return Err("extraneous or missing \" in quoted-field".into());
    }
    fields.push(field);
    Ok(fields)
}

/// The impersonation a request asks for (`Impersonate-User`, `-Group`, `-Uid`,
/// `Impersonate-Extra-<key>`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Impersonation {
    pub user: Option<String>,
    pub uid: Option<String>,
    pub groups: Vec<String>,
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl Impersonation {
    pub fn is_empty(&self) -> bool {
        self.user.is_none() && self.uid.is_none() && self.groups.is_empty() && self.extra.is_empty()
    }
}

/// The most impersonation header values read (groups and extras together); more is a 400.
pub const MAX_IMPERSONATION_VALUES: usize = 128;

/// What every impersonation header's name starts with, in any case.
const IMPERSONATE_PREFIX: &str = "impersonate-";

/// Reads the impersonation headers; an error is upstream's 400 wording. Extra keys are
/// lower-cased and percent-decoded, as upstream's `unescapeExtraKey`.
pub fn impersonation<'a>(headers: impl Iterator<Item = (&'a str, &'a str)>) -> Result<Impersonation, String> {
    let mut out = Impersonation::default();
    let mut count = 0usize;
    for (name, value) in headers {
        // Most requests carry none of these: the other headers are passed over unlowered.
        if !name.get(..IMPERSONATE_PREFIX.len()).is_some_and(|prefix| prefix.eq_ignore_ascii_case(IMPERSONATE_PREFIX)) {
            continue;
        }
        let lower = name.to_ascii_lowercase();
        let slot = match lower.as_str() {
            "impersonate-user" => {
                out.user.get_or_insert_with(|| value.to_owned());
                continue;
            }
            "impersonate-uid" => {
                out.uid.get_or_insert_with(|| value.to_owned());
                continue;
            }
            "impersonate-group" => &mut out.groups,
            _ => match lower.strip_prefix("impersonate-extra-") {
                Some(key) => {
                    let key = percent_encoding::percent_decode_str(key).decode_utf8_lossy().into_owned();
                    out.extra.entry(key).or_default()
                }
                None => continue,
            },
        };
        count += 1;
        if count > MAX_IMPERSONATION_VALUES {
            return Err("too many impersonation headers".into());
        }
        slot.push(value.to_owned());
    }
    if out.user.is_none() && (!out.groups.is_empty() || !out.extra.is_empty() || out.uid.is_some()) {
        return Err("impersonating groups, a uid or extra without impersonating a user".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_as_upstream_reads_them() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer abc def"), Some("abc"));
        assert_eq!(bearer_token("  Bearer abc  "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("Bearer"), None);
    }

    #[test]
    fn token_files_are_upstreams_csv() {
        let tokens = StaticTokens::parse("t1,alice,1,\"dev,ops\"\nt2,bob,2\n,empty,3\n").unwrap();
        let alice = tokens.authenticate("t1").unwrap();
        assert_eq!((alice.name.as_str(), alice.uid.as_str()), ("alice", "1"));
        assert_eq!(alice.groups, ["dev", "ops"]);
        assert!(tokens.authenticate("t2").unwrap().groups.is_empty());
        assert!(tokens.authenticate("").is_none());
        assert!(StaticTokens::parse("t1,alice\n").is_err());
        assert!(StaticTokens::parse("t1,\"alice,1\n").is_err());
    }

    #[test]
    fn groups_are_added_as_upstream() {
        let u = with_authenticated_group(UserInfo { name: "a".into(), ..Default::default() });
        assert_eq!(u.groups, [ALL_AUTHENTICATED]);
        assert_eq!(with_authenticated_group(anonymous()).groups, [ALL_UNAUTHENTICATED]);
    }

    #[test]
    fn impersonation_headers() {
        let h =
            [("Impersonate-User", "bob"), ("Impersonate-Group", "a"), ("impersonate-group", "b"), ("Impersonate-Extra-Scopes%2Fx", "v")];
        let i = impersonation(h.into_iter()).unwrap();
        assert_eq!(i.user.as_deref(), Some("bob"));
        assert_eq!(i.groups, ["a", "b"]);
        assert_eq!(i.extra["scopes/x"], ["v"]);
        assert!(impersonation([("Impersonate-Group", "a")].into_iter()).is_err());
        assert!(impersonation(std::iter::empty()).unwrap().is_empty());
    }
}
