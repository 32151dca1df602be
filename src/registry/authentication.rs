//! The authenticators kube-apiserver's flags configure besides client certificates
//! (`--token-auth-file`, `--anonymous-auth`, service-account tokens): what the chain's
//! authentication step and `TokenReview` ask.

use std::sync::Arc;

use crate::authn::StaticTokens;
use crate::registry::core::serviceaccounts::tokens::TokenAuthority;
use crate::request_info::UserInfo;
use crate::storage::Storage;

/// What authenticates a request besides its client certificate.
#[derive(Default)]
pub struct Authentication {
    /// `--anonymous-auth`.
    pub anonymous: bool,
    /// `--token-auth-file`.
    pub static_tokens: StaticTokens,
    /// Service-account tokens (issued by kapi, or legacy secret-based ones).
    pub service_accounts: Option<Arc<TokenAuthority>>,
}

impl Authentication {
    /// The user a bearer token names, if any authenticator accepts it (token file first, then
    /// service-account tokens, as upstream's union).
    pub async fn authenticate_token(&self, storage: &dyn Storage, token: &str) -> Option<UserInfo> {
        if token.len() > crate::authn::MAX_TOKEN_BYTES {
            return None;
        }
        if let Some(user) = self.static_tokens.authenticate(token) {
            return Some(user.clone());
        }
        let authority = self.service_accounts.as_ref()?;
        authority.authenticate(storage, token).await
    }
}
