//! Service-account tokens (`pkg/serviceaccount`, `pkg/registry/core/serviceaccount/storage`
//! `token.go`): JWTs signed with the service-account key (`jsonwebtoken`; ES256 for an ECDSA P-256 key,
//! RS256 for an RSA one), issued by
//! the `serviceaccounts/<name>/token` subresource (TokenRequest) and verified when a client
//! presents one — signature, issuer, expiry, audience, and the service account and bound
//! pod, secret or node still stored with the same uid. Legacy tokens (issuer
//! `kubernetes/serviceaccount`, kept in `kubernetes.io/service-account-token` Secrets) are
//! verified against their Secret. The OIDC discovery documents come from here too.

use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::{Value, json};
use sha2::Digest;

use crate::registry::keys;
use crate::registry::objects;
use crate::request_info::UserInfo;
use crate::status::{ApiError, FieldError, GroupKind, GroupResource};
use crate::storage::Storage;

/// The issuer of legacy (secret-based) tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// TokenRequest's shortest validity (`ValidateTokenRequest`).
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// TokenRequest's longest validity before `--service-account-max-token-expiration`.
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// The validity of a TokenRequest that names none.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

/// Why keys could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("not a PEM ECDSA P-256 or RSA key: {0}")]
    Unsupported(String),
    #[error("{0}")]
    Jwt(#[from] jsonwebtoken::errors::Error),
}

/// A key that verifies tokens, with its algorithm and JWK.
struct VerifyingKey {
    kid: String,
    alg: Algorithm,
    key: DecodingKey,
    jwk: Value,
}

/// What signs and verifies service-account tokens (`--service-account-*` flags).
pub struct TokenAuthority {
    signing: EncodingKey,
    signing_alg: Algorithm,
    signing_kid: String,
    verifying: Vec<VerifyingKey>,
    /// `--service-account-issuer`: the first issues, all are accepted.
    pub issuers: Vec<String>,
    /// `--api-audiences` (default: the issuers).
    pub api_audiences: Vec<String>,
    /// `--service-account-max-token-expiration` in seconds (0: none).
    pub max_expiration_seconds: i64,
}

/// `rsaEncryption`, the algorithm of RSA keys in PKCS#8 and SubjectPublicKeyInfo.
const RSA_ENCRYPTION: &[u64] = &[1, 2, 840, 113549, 1, 1, 1];

/// A public key's SubjectPublicKeyInfo (DER): the key, its algorithm (ES256 for ECDSA P-256,
/// RS256 for RSA, as upstream's signer picks) and the JWK and `kid` upstream derives from it
/// (base64url of the SHA-256 of the DER).
fn public_key(spki_der: &[u8]) -> Result<VerifyingKey, KeyError> {
    use x509_parser::prelude::FromDer;
    use x509_parser::public_key::PublicKey;
    let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(spki_der).map_err(|e| KeyError::Unsupported(e.to_string()))?;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let kid = b64.encode(sha2::Sha256::digest(spki_der));
    match spki.parsed().map_err(|e| KeyError::Unsupported(e.to_string()))? {
        PublicKey::RSA(rsa) => {
            let (n, e) = (b64.encode(unsigned(rsa.modulus)), b64.encode(unsigned(rsa.exponent)));
            let key = DecodingKey::from_rsa_components(&n, &e)?;
            let jwk = json!({ "use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256", "n": n, "e": e });
            Ok(VerifyingKey { kid, alg: Algorithm::RS256, key, jwk })
        }
        PublicKey::EC(_) => {
            let point = spki.subject_public_key.data.as_ref();
            if point.len() != 65 || point[0] != 4 {
                return Err(KeyError::Unsupported("of the ECDSA curves only P-256 is supported".into()));
            }
            let (x, y) = (b64.encode(&point[1..33]), b64.encode(&point[33..]));
            let key = DecodingKey::from_ec_components(&x, &y)?;
            let jwk = json!({ "use": "sig", "kty": "EC", "kid": kid, "crv": "P-256", "alg": "ES256", "x": x, "y": y });
            Ok(VerifyingKey { kid, alg: Algorithm::ES256, key, jwk })
        }
        _ => Err(KeyError::Unsupported("only ECDSA P-256 and RSA keys are supported".into())),
    }
}

/// A DER INTEGER's magnitude without the sign byte (a JWK's `n` and `e`).
fn unsigned(integer: &[u8]) -> &[u8] {
    let zeros = integer.iter().take_while(|b| **b == 0).count();
    &integer[zeros.min(integer.len().saturating_sub(1))..]
}

/// DER of one TLV.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// A positive DER INTEGER from its magnitude.
fn der_unsigned(magnitude: &[u8]) -> Vec<u8> {
    let magnitude = unsigned(magnitude);
    let mut content = Vec::with_capacity(magnitude.len() + 1);
    if magnitude.first().is_some_and(|b| b & 0x80 != 0) {
        content.push(0);
    }
    content.extend_from_slice(magnitude);
    der(0x02, &content)
}

/// The SubjectPublicKeyInfo of an RSA public key, as Go's `x509.MarshalPKIXPublicKey` writes it
/// (the `kid` is its hash).
fn rsa_spki(n: &[u8], e: &[u8]) -> Vec<u8> {
    // SEQUENCE { OID rsaEncryption, NULL }
    let algorithm = der(0x30, &[&[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01][..], &[0x05, 0x00]].concat());
    let public = der(0x30, &[der_unsigned(n), der_unsigned(e)].concat());
    let bits = der(0x03, &[&[0u8][..], &public].concat());
    der(0x30, &[algorithm, bits].concat())
}

/// The modulus and public exponent of a PKCS#1 `RSAPrivateKey` (or `RSAPublicKey`).
fn rsa_numbers(pkcs1: &[u8], private: bool) -> Result<(Vec<u8>, Vec<u8>), KeyError> {
    let bad = |e: &dyn std::fmt::Display| KeyError::Unsupported(format!("RSA key: {e}"));
    let (_, object) = x509_parser::der_parser::der::parse_der(pkcs1).map_err(|e| bad(&e))?;
    let items = object.as_sequence().map_err(|e| bad(&e))?;
    let first = usize::from(private); // a private key starts with its version
    let number = |i: usize| -> Result<Vec<u8>, KeyError> {
        items.get(i).ok_or_else(|| bad(&"too short"))?.as_slice().map(|s| unsigned(s).to_vec()).map_err(|e| bad(&e))
    };
    Ok((number(first)?, number(first + 1)?))
}

/// A PKCS#8 `PrivateKeyInfo`: whether it holds an RSA key, and the key's own encoding.
fn pkcs8_rsa(der_bytes: &[u8]) -> Option<Vec<u8>> {
    let (_, object) = x509_parser::der_parser::der::parse_der(der_bytes).ok()?;
    let items = object.as_sequence().ok()?;
    let algorithm = items.get(1)?.as_sequence().ok()?.first()?.as_oid().ok()?.clone();
    if !algorithm.iter().is_some_and(|arcs| arcs.eq(RSA_ENCRYPTION.iter().copied())) {
        return None;
    }
    items.get(2)?.as_slice().ok().map(<[u8]>::to_vec)
}

/// The signing key of a PEM private key: PKCS#8 ECDSA P-256 (ES256), or RSA as PKCS#1
/// (`RSA PRIVATE KEY`) or PKCS#8 (RS256), with its public half's SubjectPublicKeyInfo.
fn signing_key(pem_text: &[u8]) -> Result<(EncodingKey, Algorithm, Vec<u8>), KeyError> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem_text).map_err(|e| KeyError::Unsupported(e.to_string()))?;
    let rsa = match pem.label.as_str() {
        "RSA PRIVATE KEY" => Some(pem.contents.clone()),
        "PRIVATE KEY" => pkcs8_rsa(&pem.contents),
        other => return Err(KeyError::Unsupported(format!("PEM block {other:?} is not a private key"))),
    };
    if let Some(pkcs1) = rsa {
        let (n, e) = rsa_numbers(&pkcs1, true)?;
        return Ok((EncodingKey::from_rsa_der(&pkcs1), Algorithm::RS256, rsa_spki(&n, &e)));
    }
    Ok((EncodingKey::from_ec_pem(pem_text)?, Algorithm::ES256, spki_of_pem(pem_text)?))
}

/// The SubjectPublicKeyInfo DER of a PEM key: a `PUBLIC KEY`, an `RSA PUBLIC KEY`, or the
/// public half of a private key (PKCS#8, or PKCS#1 RSA) or a certificate's.
fn spki_of_pem(pem_text: &[u8]) -> Result<Vec<u8>, KeyError> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem_text).map_err(|e| KeyError::Unsupported(e.to_string()))?;
    match pem.label.as_str() {
        "PUBLIC KEY" => Ok(pem.contents),
        "RSA PUBLIC KEY" => {
            let (n, e) = rsa_numbers(&pem.contents, false)?;
            Ok(rsa_spki(&n, &e))
        }
        "RSA PRIVATE KEY" => {
            let (n, e) = rsa_numbers(&pem.contents, true)?;
            Ok(rsa_spki(&n, &e))
        }
        "PRIVATE KEY" => match pkcs8_rsa(&pem.contents) {
            Some(pkcs1) => {
                let (n, e) = rsa_numbers(&pkcs1, true)?;
                Ok(rsa_spki(&n, &e))
            }
            None => {
                let text = std::str::from_utf8(pem_text).map_err(|e| KeyError::Unsupported(e.to_string()))?;
                let pair = rcgen::KeyPair::from_pem(text).map_err(|e| KeyError::Unsupported(e.to_string()))?;
                Ok(rcgen::PublicKeyData::subject_public_key_info(&pair))
            }
        },
        "CERTIFICATE" => {
            let cert = pem.parse_x509().map_err(|e| KeyError::Unsupported(e.to_string()))?;
            Ok(cert.public_key().raw.to_vec())
        }
        other => Err(KeyError::Unsupported(format!("PEM block {other:?}"))),
    }
}

/// The claims of a token's payload, read before its signature is checked only to pick the
/// validation rules (bound or legacy).
fn unverified_issuer(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims["iss"].as_str().map(str::to_owned)
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or_default()
}

/// A stored object's JSON, if it exists: a consistent read (not the watch cache's), so that a
/// token stops working as soon as its account, pod or secret is deleted.
async fn stored(storage: &dyn Storage, resource: &str, namespace: Option<&str>, name: &str) -> Result<Option<Value>, ApiError> {
    let Some(kv) = storage.get(&keys::key("", resource, namespace, Some(name))).await? else { return Ok(None) };
    Ok(objects::decode_stored(&kv.value).ok().map(|(_, v)| v))
}

/// Whether an object is gone for a token's purposes: missing, another uid, or deleted
/// (`deletionTimestamp` in the past).
fn invalidated(object: &Option<Value>, uid: &str, now: i64) -> bool {
    let Some(object) = object else { return true };
    if object["metadata"]["uid"].as_str() != Some(uid) {
        return true;
    }
    object["metadata"]["deletionTimestamp"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .is_some_and(|t| t.timestamp() < now)
}

impl TokenAuthority {
    /// From a signing key (PEM: PKCS#8 ECDSA P-256, or RSA as PKCS#1 or PKCS#8) and the keys
    /// that verify (PEM, public or private, ECDSA P-256 or RSA; the signing key's public half is
    /// always one).
    pub fn new(
        signing_pem: &[u8],
        verifying_pems: &[Vec<u8>],
        issuers: Vec<String>,
        api_audiences: Vec<String>,
        max_expiration_seconds: i64,
    ) -> Result<TokenAuthority, KeyError> {
        let (signing, signing_alg, spki) = signing_key(signing_pem)?;
        let own = public_key(&spki)?;
        let signing_kid = own.kid.clone();
        let mut verifying = vec![own];
        for pem in verifying_pems {
            let key = public_key(&spki_of_pem(pem)?)?;
            if !verifying.iter().any(|k| k.kid == key.kid) {
                verifying.push(key);
            }
        }
        let api_audiences = if api_audiences.is_empty() { issuers.clone() } else { api_audiences };
        Ok(TokenAuthority { signing, signing_alg, signing_kid, verifying, issuers, api_audiences, max_expiration_seconds })
    }

    fn sign(&self, claims: &Value) -> Result<String, ApiError> {
        let header = Header { kid: Some(self.signing_kid.clone()), ..Header::new(self.signing_alg) };
        jsonwebtoken::encode(&header, claims, &self.signing).map_err(ApiError::internal)
    }

    /// `/.well-known/openid-configuration`, as upstream's (issuer, the JWKS URL under it).
    pub fn openid_configuration(&self) -> Value {
        let issuer = self.issuers.first().cloned().unwrap_or_default();
        json!({
            "issuer": issuer,
            "jwks_uri": format!("{issuer}/openid/v1/jwks"),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": self.algorithms(),
        })
    }

    /// The algorithms of the verifying keys, sorted (upstream's `getAlgs`).
    fn algorithms(&self) -> Vec<&'static str> {
        let mut algs: Vec<&'static str> =
            self.verifying.iter().map(|k| if k.alg == Algorithm::RS256 { "RS256" } else { "ES256" }).collect();
        algs.sort_unstable();
        algs.dedup();
        algs
    }

    /// `/openid/v1/jwks`: the verifying keys.
    pub fn jwks(&self) -> Value {
        json!({ "keys": self.verifying.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>() })
    }

    /// The user a service-account token names, checked against storage, for the API's
    /// audiences.
    pub async fn authenticate(&self, storage: &dyn Storage, token: &str) -> Option<UserInfo> {
        self.authenticate_for(storage, token, &self.api_audiences).await.map(|(user, _)| user)
    }

    /// The user a token names when it is meant for one of `audiences`, and the audiences it
    /// matched (TokenReview's `status.audiences`).
    pub async fn authenticate_for(&self, storage: &dyn Storage, token: &str, audiences: &[String]) -> Option<(UserInfo, Vec<String>)> {
        let header = jsonwebtoken::decode_header(token).ok()?;
        let keys: Vec<&VerifyingKey> = match &header.kid {
            Some(kid) => self.verifying.iter().filter(|k| &k.kid == kid && k.alg == header.alg).collect(),
            None => self.verifying.iter().filter(|k| k.alg == header.alg).collect(),
        };
        if keys.is_empty() {
            return None;
        }
        let legacy = unverified_issuer(token).as_deref() == Some(LEGACY_ISSUER);
        let mut validation = Validation::new(header.alg);
        validation.leeway = 0;
        if legacy {
            validation.set_issuer(&[LEGACY_ISSUER]);
            validation.required_spec_claims = ["iss", "sub"].into_iter().map(str::to_owned).collect();
            validation.validate_exp = false;
            validation.validate_aud = false;
        } else {
            validation.set_issuer(&self.issuers);
            validation.set_audience(audiences);
            validation.validate_nbf = true;
            validation.required_spec_claims = ["exp", "iss", "sub", "aud"].into_iter().map(str::to_owned).collect();
        }
        let claims = keys.iter().find_map(|k| jsonwebtoken::decode::<Value>(token, &k.key, &validation).ok())?.claims;
        let now = now();
        if legacy {
            return self.legacy_user(storage, token, &claims, now).await.map(|u| (u, Vec::new()));
        }
        let k8s = &claims["kubernetes.io"];
        let namespace = k8s["namespace"].as_str()?;
        let (account, account_uid) = (k8s["serviceaccount"]["name"].as_str()?, k8s["serviceaccount"]["uid"].as_str()?);
        if claims["sub"].as_str() != Some(&crate::rbac::service_account_username(namespace, account)) {
            return None;
        }
        let sa = stored(storage, "serviceaccounts", Some(namespace), account).await.ok()?;
        if invalidated(&sa, account_uid, now) {
            return None;
        }
        let mut user = service_account_user(namespace, account, account_uid);
        let bound = |resource: &'static str, namespaced: bool, claim: &str| (resource, namespaced, k8s[claim].clone());
        // A pod-bound token's node is what the pod was scheduled to when the token was issued:
        // it is reported, not checked (upstream's validator checks a node only when the token
        // is bound to it).
        let pod_bound = k8s["pod"].is_object();
        for (resource, namespaced, reference) in
            [bound("pods", true, "pod"), bound("secrets", true, "secret"), bound("nodes", false, "node")]
        {
            let Some(name) = reference["name"].as_str() else { continue };
            let uid = reference["uid"].as_str().unwrap_or_default();
            if !(resource == "nodes" && pod_bound) {
                let object = stored(storage, resource, namespaced.then_some(namespace), name).await.ok()?;
                if invalidated(&object, uid, now) {
                    return None;
                }
            }
            let extra = match resource {
                "pods" => "pod",
                "nodes" => "node",
                _ => continue,
            };
            user.extra.insert(format!("authentication.kubernetes.io/{extra}-name"), vec![name.to_owned()]);
            if !uid.is_empty() {
                user.extra.insert(format!("authentication.kubernetes.io/{extra}-uid"), vec![uid.to_owned()]);
            }
        }
        if let Some(jti) = claims["jti"].as_str() {
            user.extra.insert("authentication.kubernetes.io/credential-id".into(), vec![format!("JTI={jti}")]);
        }
        let token_audiences: Vec<String> = match &claims["aud"] {
            Value::String(a) => vec![a.clone()],
            Value::Array(a) => a.iter().filter_map(|a| a.as_str().map(str::to_owned)).collect(),
            _ => Vec::new(),
        };
        let matched = audiences.iter().filter(|a| token_audiences.contains(a)).cloned().collect();
        Some((user, matched))
    }

    /// A legacy token: its Secret must still hold it, and the account the Secret names exist
    /// with the uid the token carries.
    async fn legacy_user(&self, storage: &dyn Storage, token: &str, claims: &Value, now: i64) -> Option<UserInfo> {
        let namespace = claims["kubernetes.io/serviceaccount/namespace"].as_str()?;
        let secret_name = claims["kubernetes.io/serviceaccount/secret.name"].as_str()?;
        let account = claims["kubernetes.io/serviceaccount/service-account.name"].as_str()?;
        let account_uid = claims["kubernetes.io/serviceaccount/service-account.uid"].as_str()?;
        let secret = stored(storage, "secrets", Some(namespace), secret_name).await.ok()??;
        let stored_token = secret["data"]["token"].as_str().and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok());
        if stored_token.as_deref() != Some(token.as_bytes()) || secret["metadata"]["deletionTimestamp"].is_string() {
            return None;
        }
        let sa = stored(storage, "serviceaccounts", Some(namespace), account).await.ok()?;
        if invalidated(&sa, account_uid, now) {
            return None;
        }
        let mut user = service_account_user(namespace, account, account_uid);
        user.extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            vec![format!(
                "object=Secret,namespace={namespace},name={secret_name},uid={}",
                secret["metadata"]["uid"].as_str().unwrap_or_default()
            )],
        );
        Some(user)
    }

    /// A legacy token for a `kubernetes.io/service-account-token` Secret (what upstream's
    /// tokens controller writes into it).
    pub fn legacy_token(&self, namespace: &str, secret: &str, account: &str, account_uid: &str) -> Result<String, ApiError> {
        self.sign(&json!({
            "iss": LEGACY_ISSUER,
            "kubernetes.io/serviceaccount/namespace": namespace,
            "kubernetes.io/serviceaccount/secret.name": secret,
            "kubernetes.io/serviceaccount/service-account.name": account,
            "kubernetes.io/serviceaccount/service-account.uid": account_uid,
            "sub": crate::rbac::service_account_username(namespace, account),
        }))
    }

    /// The TokenRequest subresource (upstream's `TokenREST.Create`): `request` (an
    /// `authentication.k8s.io/v1` TokenRequest) for the stored service account `account`,
    /// answered with its name, namespace, uid, creation time, audiences and expiry filled in and
    /// its `status` (token and expiry), with the warnings to send. Nothing is stored, so a dry
    /// run is answered as any other request (upstream's `TokenREST` does not look at `dryRun`).
    /// A token bound to a pod that is scheduled also names the pod's node (upstream's
    /// `ServiceAccountTokenPodNodeInfo`): its name, and its uid when the node exists.
    pub async fn request_token(
        &self,
        storage: &dyn Storage,
        namespace: &str,
        account: &str,
        mut request: Value,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let kind = GroupKind::new("authentication.k8s.io", "TokenRequest");
        let meta = &request["metadata"];
        for (field, given, wanted, what) in [
            ("metadata.name", meta["name"].as_str().unwrap_or_default(), account, "name"),
            ("metadata.namespace", meta["namespace"].as_str().unwrap_or_default(), namespace, "namespace"),
        ] {
            if !given.is_empty() && given != wanted {
                let err = FieldError::invalid(field, given, format!("must match the service account {what} if specified"));
                return Err(ApiError::invalid(kind, account, &[err]));
            }
        }
        let sa = stored(storage, "serviceaccounts", Some(namespace), account)
            .await?
            .ok_or_else(|| ApiError::not_found(GroupResource::new("", "serviceaccounts"), account))?;
        let account_uid = sa["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
        if let Some(uid) = request["metadata"]["uid"].as_str().filter(|u| !u.is_empty())
            && uid != account_uid
        {
            return Err(ApiError::conflict_because(
                GroupResource::new("authentication.k8s.io", "TokenRequest"),
                account,
                format!("the UID in the token request ({uid}) does not match the UID of the service account ({account_uid})"),
            ));
        }
        let audiences: Vec<String> = match request["spec"]["audiences"].as_array() {
            Some(a) if !a.is_empty() => a.iter().filter_map(|a| a.as_str().map(str::to_owned)).collect(),
            _ => self.api_audiences.clone(),
        };
        let issued = now();
        request["metadata"]["name"] = json!(account);
        request["metadata"]["namespace"] = json!(namespace);
        request["metadata"]["uid"] = json!(account_uid);
        request["metadata"]["creationTimestamp"] = json!(timestamp(issued));
        request["spec"]["audiences"] = json!(audiences);
        if let Some(status) = request.as_object_mut() {
            status.remove("status");
        }
        let expiration = request["spec"]["expirationSeconds"].as_i64().unwrap_or(DEFAULT_EXPIRATION_SECONDS);
        let mut errs = Vec::new();
        if expiration < MIN_EXPIRATION_SECONDS {
            errs.push(FieldError::invalid("spec.expirationSeconds", expiration, "may not specify a duration less than 10 minutes"));
        }
        if expiration > MAX_EXPIRATION_SECONDS {
            errs.push(FieldError::invalid("spec.expirationSeconds", expiration, "may not specify a duration larger than 2^32 seconds"));
        }
        if !errs.is_empty() {
            return Err(ApiError::invalid(kind, "", &errs));
        }
        let mut k8s = json!({ "namespace": namespace, "serviceaccount": { "name": account, "uid": account_uid } });
        let reference = &request["spec"]["boundObjectRef"];
        if reference.is_object() {
            let ref_kind = reference["kind"].as_str().unwrap_or_default();
            let (resource, claim, namespaced) = match (reference["apiVersion"].as_str().unwrap_or("v1"), ref_kind) {
                ("v1", "Pod") => ("pods", "pod", true),
                ("v1", "Secret") => ("secrets", "secret", true),
                ("v1", "Node") => ("nodes", "node", false),
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "cannot bind token to object of type {}",
                        format_args!("{}, Kind={ref_kind}", reference["apiVersion"].as_str().unwrap_or_default())
                    )));
                }
            };
            let name = reference["name"].as_str().unwrap_or_default();
            let object = stored(storage, resource, namespaced.then_some(namespace), name)
                .await?
                .ok_or_else(|| ApiError::not_found(GroupResource::new("", resource), name))?;
            let uid = object["metadata"]["uid"].as_str().unwrap_or_default();
            if resource == "pods" && object["spec"]["serviceAccountName"].as_str().unwrap_or("default") != account {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
                )));
            }
            if let Some(wanted) = reference["uid"].as_str().filter(|u| !u.is_empty())
                && wanted != uid
            {
                return Err(ApiError::conflict_because(
                    GroupResource::new("", ref_kind),
                    name,
                    format!(
                        "the UID in the bound object reference ({wanted}) does not match the UID in record. The object might have been deleted and then recreated"
                    ),
                ));
            }
            k8s[claim] = json!({ "name": name, "uid": uid });
            if let Some(node_name) = object["spec"]["nodeName"].as_str().filter(|n| resource == "pods" && !n.is_empty()) {
                // A missing node still leaves its name, so the token says where the pod runs.
                k8s["node"] = match stored(storage, "nodes", None, node_name).await? {
                    Some(node) => json!({ "name": node_name, "uid": node["metadata"]["uid"] }),
                    None => json!({ "name": node_name }),
                };
            }
        }
        let mut warnings = Vec::new();
        let mut expiration = expiration;
        if self.max_expiration_seconds > 0 && expiration > self.max_expiration_seconds {
            warnings.push(format!("requested expiration of {expiration} seconds shortened to {} seconds", self.max_expiration_seconds));
            expiration = self.max_expiration_seconds;
        }
        let claims = json!({
            "aud": audiences,
            "exp": issued + expiration,
            "iat": issued,
            "iss": self.issuers.first().cloned().unwrap_or_default(),
            "jti": uuid::Uuid::new_v4().to_string(),
            "kubernetes.io": k8s,
            "nbf": issued,
            "sub": crate::rbac::service_account_username(namespace, account),
        });
        let token = self.sign(&claims)?;
        request["spec"]["expirationSeconds"] = json!(expiration);
        request["status"] = json!({ "token": token, "expirationTimestamp": timestamp(issued + expiration) });
        Ok((request, warnings))
    }
}

/// A time in seconds as the API writes it (RFC 3339, UTC, seconds).
fn timestamp(seconds: i64) -> String {
    chrono::DateTime::from_timestamp(seconds, 0).unwrap_or_default().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `serviceaccount.UserInfo`: the account's user name, uid and groups.
pub fn service_account_user(namespace: &str, name: &str, uid: &str) -> UserInfo {
    UserInfo {
        name: crate::rbac::service_account_username(namespace, name),
        uid: uid.to_owned(),
        groups: vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{namespace}")],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_make_jwks_and_tokens_verify() {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let authority = TokenAuthority::new(pair.serialize_pem().as_bytes(), &[], vec!["https://issuer".into()], vec![], 0).unwrap();
        let jwks = authority.jwks();
        assert_eq!(jwks["keys"][0]["kty"], "EC");
        assert_eq!(jwks["keys"][0]["kid"].as_str().unwrap().len(), 43);
        let token = authority.legacy_token("ns", "s", "sa", "u").unwrap();
        assert_eq!(unverified_issuer(&token).as_deref(), Some(LEGACY_ISSUER));
        assert_eq!(authority.openid_configuration()["jwks_uri"], "https://issuer/openid/v1/jwks");
    }

    /// An RSA key made by the `openssl` command: PKCS#8 by default, PKCS#1 with `-traditional`.
    fn openssl(args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
        use std::io::Write;
        let mut child = std::process::Command::new("openssl")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the openssl command");
        if let Some(input) = input {
            child.stdin.take().unwrap().write_all(input).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        out.stdout
    }

    #[test]
    fn rsa_keys_sign_rs256_and_publish_their_jwk() {
        let pkcs8 = openssl(&["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], None);
        let pkcs1 = openssl(&["rsa", "-traditional"], Some(&pkcs8));
        assert!(String::from_utf8_lossy(&pkcs1).contains("BEGIN RSA PRIVATE KEY"));
        let public = openssl(&["rsa", "-pubout"], Some(&pkcs8));
        let ec = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        for signing in [&pkcs8, &pkcs1] {
            let authority =
                TokenAuthority::new(signing, &[public.clone(), ec.serialize_pem().into_bytes()], vec!["https://issuer".into()], vec![], 0)
                    .unwrap();
            // The private key's public half is the public key's: one JWK for both, kid the hash
            // of the same SubjectPublicKeyInfo.
            let jwks = authority.jwks();
            let keys = jwks["keys"].as_array().unwrap();
            assert_eq!(keys.len(), 2, "{jwks}");
            assert_eq!(keys[0]["kty"], "RSA");
            assert_eq!(keys[0]["alg"], "RS256");
            assert_eq!(keys[0]["e"], "AQAB");
            assert_eq!(keys[0]["n"].as_str().unwrap().len(), 342, "2048 bits, base64url");
            assert_eq!(keys[1]["kty"], "EC");
            let (_, pem) = x509_parser::pem::parse_x509_pem(&public).unwrap();
            let kid = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(&pem.contents));
            assert_eq!(keys[0]["kid"], kid.as_str());
            assert_eq!(authority.openid_configuration()["id_token_signing_alg_values_supported"], json!(["ES256", "RS256"]));
            let token = authority.legacy_token("ns", "s", "sa", "u").unwrap();
            let header = jsonwebtoken::decode_header(&token).unwrap();
            assert_eq!(header.alg, Algorithm::RS256);
            assert_eq!(header.kid.as_deref(), Some(kid.as_str()));
            // The public key alone verifies it.
            let key = DecodingKey::from_rsa_pem(&public).unwrap();
            let mut validation = Validation::new(Algorithm::RS256);
            validation.required_spec_claims.clear();
            validation.validate_exp = false;
            let claims = jsonwebtoken::decode::<Value>(&token, &key, &validation).unwrap().claims;
            assert_eq!(claims["sub"], "system:serviceaccount:ns:sa");
        }
        assert!(
            TokenAuthority::new(b"-----BEGIN CERTIFICATE REQUEST-----\nAA==\n-----END CERTIFICATE REQUEST-----\n", &[], vec![], vec![], 0)
                .is_err()
        );
    }
}
