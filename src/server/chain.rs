//! The request chain: a tower stack written in request order, as kube-apiserver's
//! `DefaultBuildHandlerChain` runs it — panic recovery → path cleaning → request info →
//! authentication → authorization → the handler under its deadline. Each step either enriches
//! the request (the user, the request info) or answers it with a `Status`; nothing after a step
//! that answered runs.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tower::{Layer, Service, ServiceBuilder};

use super::body::Body;
use super::connection::{ConnectionActivity, InFlight};
use super::{ServerState, error_response};
use crate::request_info::UserInfo;
use crate::request_info::{MatchedRoute, RequestInfo};
use crate::status::ApiError;

type BoxFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// The user a request is authenticated as: the connection's client certificate's until the
/// authentication step has run, then the request's (as impersonation leaves it).
#[derive(Clone, Debug)]
pub struct Authenticated(pub Option<Arc<UserInfo>>);

/// The user who sent the request when it impersonates another (what `SelfSubjectReview`
/// does not show, and what audit would log).
#[derive(Clone, Debug)]
pub struct Impersonator(pub Arc<UserInfo>);

/// What a connection's client certificate says.
#[derive(Clone, Debug)]
pub enum ClientIdentity {
    /// No certificate, or one without a common name.
    None,
    /// The certificate's user.
    User(Arc<UserInfo>),
    /// A certificate that does not verify against the client CA: every request is a 401.
    Refused,
}

/// A connection whose client certificate was refused.
#[derive(Clone, Copy, Debug)]
struct RefusedCertificate;

/// The service answering the requests of one connection, whose client certificate made
/// `identity`; `activity` counts its requests in flight (the connection's idle timeout reads it).
pub fn service(
    state: Arc<ServerState>,
    identity: ClientIdentity,
    activity: Arc<ConnectionActivity>,
) -> impl Service<Request<Incoming>, Response = Response<Body>, Error = Infallible, Future: Send> + Clone + Send + 'static {
    let (authn_state, impersonate_state, authz_state) = (state.clone(), state.clone(), state.clone());
    ServiceBuilder::new()
        .layer(RecoverPanicsLayer)
        .layer(StepLayer::new(move |req| {
            match &identity {
                ClientIdentity::None => req.extensions_mut().insert(Authenticated(None)),
                ClientIdentity::User(user) => req.extensions_mut().insert(Authenticated(Some(user.clone()))),
                ClientIdentity::Refused => {
                    req.extensions_mut().insert(RefusedCertificate);
                    req.extensions_mut().insert(Authenticated(None))
                }
            };
            None
        }))
        .layer(StepLayer::new(clean_path))
        .layer(StepLayer::new(request_info))
        .layer(AsyncStepLayer::new(move |req| {
            let state = authn_state.clone();
            Box::pin(async move { authenticate(&state, req).await })
        }))
        .layer(StepLayer::new(move |req| impersonate(&impersonate_state, req)))
        .layer(StepLayer::new(move |req| authorize(&authz_state, req)))
        .service(tower::service_fn(move |req: Request<Incoming>| {
            let state = state.clone();
            // Counted from here until the answer's body has been sent or dropped.
            let in_flight = activity.start();
            // Boxed: the steps before pass this future on without boxing their own.
            Box::pin(async move {
                // Instrumentation (upstream's `InstrumentRouteFunc`): count and time the answer.
                let started = std::time::Instant::now();
                let Some(info) = req.extensions().get::<RequestInfo>() else {
                    return Ok(error_response(&ApiError::internal("the request was not parsed")));
                };
                let route = req.extensions().get::<MatchedRoute>().and_then(|matched| matched.0);
                // Upstream's label is `All` for a valid dry run (an invalid one is answered 400).
                let dry_run = req.uri().query().is_some_and(|q| super::rest::parse_dry_run(q).unwrap_or(false));
                let labels = super::metrics::labels(info, route, req.method().as_str(), dry_run);
                let deadline = request_deadline(info, req.uri().query(), state.request_timeout);
                let resp = match deadline {
                    Err(e) => error_response(&e),
                    Ok(None) => super::handle(&state, req).await,
                    Ok(Some(deadline)) => match tokio::time::timeout(deadline, super::handle(&state, req)).await {
                        Ok(resp) => resp,
                        // Upstream's timeout filter answers so and cancels the handler's context;
                        // dropping the handler's future cancels its work here.
                        Err(_) => error_response(&ApiError::timeout(
                            "request did not complete within requested timeout - context deadline exceeded",
                            0,
                        )),
                    },
                };
                let code = resp.status().as_u16();
                state.metrics.observe(labels, code, started.elapsed().as_secs_f64());
                Ok::<_, Infallible>(track_body(resp, in_flight))
            }) as BoxFuture
        }))
}

/// The answer with its body holding the request's in-flight mark until the body is done.
fn track_body(resp: Response<Body>, in_flight: InFlight) -> Response<Body> {
    resp.map(|body| TrackedBody { inner: body, _in_flight: in_flight }.boxed())
}

struct TrackedBody {
    inner: Body,
    _in_flight: InFlight,
}

impl hyper::body::Body for TrackedBody {
    type Data = bytes::Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, Infallible>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// How long the handler may take (upstream's `WithRequestDeadline`): `None` for long-running
/// requests (watches), else the `timeout` query parameter (a Go duration) when it is positive
/// and shorter than `maximum` (`--request-timeout`), else `maximum`. A `timeout` that does not
/// parse is upstream's 400.
fn request_deadline(info: &RequestInfo, query: Option<&str>, maximum: Duration) -> Result<Option<Duration>, ApiError> {
    if info.verb == "watch" {
        return Ok(None);
    }
    // Go's `URL.Query().Get("timeout")`: the first value.
    let timeout = crate::url::query_first(query.unwrap_or_default(), "timeout");
    let Some(timeout) = timeout.filter(|t| !t.is_empty()) else { return Ok(Some(maximum)) };
    let parsed = kapi_apimachinery::Duration::parse(&timeout)
        .map_err(|e| ApiError::bad_request(format!("invalid timeout specified in the request URL - {e}")))?;
    Ok(Some(match parsed.to_std() {
        Some(t) if !t.is_zero() && t < maximum => t,
        _ => maximum,
    }))
}

/// A path that is not clean (`//`, `/./`, `/../`, also once decoded) is redirected to its
/// clean form with a 301, as Go's `ServeMux` does, before anything reads it: request info and
/// routing would otherwise see different segments (an empty namespace segment made a
/// namespaced DELETE act cluster-wide). Clients change the method of a followed 301 to GET, so
/// a redirected write is never replayed.
fn clean_path(req: &mut Request<Incoming>) -> Option<Response<Body>> {
    let location = match crate::request_info::unclean_path_redirect(req.uri().path(), req.uri().query()) {
        Ok(None) => return None,
        Ok(Some(location)) => location,
        Err(e) => return Some(error_response(&ApiError::from(e))),
    };
    Some(moved_permanently(req.method(), &location))
}

/// Go's `http.Redirect` with 301: `Location`, and for GET a short HTML body.
fn moved_permanently(method: &http::Method, location: &str) -> Response<Body> {
    let body = match *method {
        http::Method::GET => format!("<a href=\"{}\">Moved Permanently</a>.\n\n", html_escape(location)),
        _ => String::new(),
    };
    let mut resp = Response::new(super::body::full(body));
    *resp.status_mut() = http::StatusCode::MOVED_PERMANENTLY;
    if let Ok(v) = http::HeaderValue::from_str(location) {
        resp.headers_mut().insert(http::header::LOCATION, v);
    }
    if matches!(*method, http::Method::GET | http::Method::HEAD) {
        resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/html; charset=utf-8"));
    }
    resp
}

/// Go's `html.EscapeString`.
fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            c => out.push(c),
        }
    }
    out
}

/// Parses the request info once, for everything after (upstream's `WithRequestInfo`), and
/// matches the request's route.
fn request_info(req: &mut Request<Incoming>) -> Option<Response<Body>> {
    let parsed = crate::request_info::parse_and_match(req.method().as_str(), req.uri().path(), req.uri().query());
    match parsed {
        Ok((info, route)) => {
            req.extensions_mut().insert(MatchedRoute(route));
            req.extensions_mut().insert(info);
            None
        }
        Err(e) => Some(error_response(&ApiError::from(e))),
    }
}

/// Upstream's authenticator union, first success wins: the connection's client certificate,
/// then a bearer token (`--token-auth-file`, service-account tokens); a request with neither
/// is anonymous when `--anonymous-auth` allows (a bearer token nobody accepts is never
/// anonymous). Every authenticated user gets `system:authenticated`; the `Authorization`
/// header is removed for what follows. A refusal is a bare 401 that names nothing.
async fn authenticate(state: &ServerState, mut req: Request<Incoming>) -> Result<Request<Incoming>, Response<Body>> {
    let unauthorized = || error_response(&ApiError::unauthorized());
    if req.extensions().get::<RefusedCertificate>().is_some() {
        return Err(unauthorized());
    }
    let from_cert = req.extensions().get::<Authenticated>().and_then(|a| a.0.clone());
    let header = req.headers_mut().remove(http::header::AUTHORIZATION);
    let user = match from_cert {
        Some(user) => user,
        None => {
            let token = header.as_ref().and_then(|h| h.to_str().ok()).and_then(crate::authn::bearer_token);
            match token {
                Some(token) => match state.store_config.authentication.authenticate_token(state.store.as_ref(), token).await {
                    Some(user) => Arc::new(crate::authn::with_authenticated_group(user)),
                    None => return Err(unauthorized()),
                },
                None if state.store_config.authentication.anonymous => Arc::new(crate::authn::anonymous()),
                None => return Err(unauthorized()),
            }
        }
    };
    req.extensions_mut().insert(Authenticated(Some(user)));
    Ok(req)
}

/// Upstream's `WithImpersonation`: `Impersonate-*` headers make the request another user's,
/// each part (user or service account, groups, uid, extra values) allowed by the `impersonate`
/// verb for the requesting user; the headers are removed.
fn impersonate(state: &ServerState, req: &mut Request<Incoming>) -> Option<Response<Body>> {
    let asked = crate::authn::impersonation(req.headers().iter().filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?))));
    let asked = match asked {
        Ok(asked) if asked.is_empty() => return None,
        Ok(asked) => asked,
        Err(message) => return Some(error_response(&ApiError::internal(message))),
    };
    let Some(requester) = req.extensions().get::<Authenticated>().and_then(|a| a.0.clone()) else {
        return Some(error_response(&ApiError::unauthorized()));
    };
    let target = match super::authentication::impersonate(&state.store_config.authorizer, &requester, &asked) {
        Ok(target) => target,
        Err(e) => return Some(error_response(&e)),
    };
    let names: Vec<http::HeaderName> = req.headers().keys().filter(|k| k.as_str().starts_with("impersonate-")).cloned().collect();
    for name in names {
        req.headers_mut().remove(name);
    }
    req.extensions_mut().insert(Impersonator(requester));
    req.extensions_mut().insert(Authenticated(Some(Arc::new(target))));
    None
}

/// Upstream's `WithAuthorization`: the request's attributes asked of the authorizer (members
/// of `system:masters` first, then `--authorization-mode`); a refusal is upstream's 403.
fn authorize(state: &ServerState, req: &mut Request<Incoming>) -> Option<Response<Body>> {
    // Both are set by the steps before; without them nothing is allowed.
    let Some(info) = req.extensions().get::<RequestInfo>() else {
        return Some(error_response(&ApiError::internal("the request was not parsed")));
    };
    let Some(user) = req.extensions().get::<Authenticated>().and_then(|a| a.0.clone()) else {
        return Some(error_response(&ApiError::unauthorized()));
    };
    let attributes = crate::rbac::Attributes::of_request(&user, info);
    match state.store_config.authorizer.authorize(&attributes) {
        Ok(_) => None,
        Err(reason) => Some(error_response(&ApiError::forbidden_request(info, &user.name, &reason))),
    }
}

/// One synchronous step of the chain: may change the request, or answer it. It runs in
/// `call`, so it costs no boxed future and no clone of the services after it (most steps are
/// synchronous, and every request passes all of them).
#[derive(Clone)]
struct StepLayer<F>(F);

impl<F: Fn(&mut Request<Incoming>) -> Option<Response<Body>>> StepLayer<F> {
    fn new(step: F) -> Self {
        Self(step)
    }
}

impl<F: Clone, S> Layer<S> for StepLayer<F> {
    type Service = Step<F, S>;

    fn layer(&self, inner: S) -> Step<F, S> {
        Step { step: self.0.clone(), inner }
    }
}

#[derive(Clone)]
struct Step<F, S> {
    step: F,
    inner: S,
}

impl<F, S> Service<Request<Incoming>> for Step<F, S>
where
    F: Fn(&mut Request<Incoming>) -> Option<Response<Body>>,
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>,
    S::Future: Unpin,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = StepFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<Incoming>) -> Self::Future {
        match (self.step)(&mut req) {
            Some(answer) => StepFuture::Answered(Some(answer)),
            None => StepFuture::Next(self.inner.call(req)),
        }
    }
}

/// A [`Step`]'s answer: its own, or the next service's (boxed or a step's, so `Unpin`).
enum StepFuture<N> {
    Answered(Option<Response<Body>>),
    Next(N),
}

impl<N: Future<Output = Result<Response<Body>, Infallible>> + Unpin> Future for StepFuture<N> {
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            // Taken once: a future is not polled again after it is ready.
            StepFuture::Answered(answer) => {
                Poll::Ready(Ok(answer.take().unwrap_or_else(|| error_response(&ApiError::internal("a step's answer was polled twice")))))
            }
            StepFuture::Next(next) => Pin::new(next).poll(cx),
        }
    }
}

/// One asynchronous step: gives the request back to go on, or answers it.
type AsyncStepFn =
    dyn Fn(Request<Incoming>) -> Pin<Box<dyn Future<Output = Result<Request<Incoming>, Response<Body>>> + Send>> + Send + Sync;

#[derive(Clone)]
struct AsyncStepLayer(Arc<AsyncStepFn>);

impl AsyncStepLayer {
    fn new(
        step: impl Fn(Request<Incoming>) -> Pin<Box<dyn Future<Output = Result<Request<Incoming>, Response<Body>>> + Send>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self(Arc::new(step))
    }
}

impl<S> Layer<S> for AsyncStepLayer {
    type Service = AsyncStep<S>;

    fn layer(&self, inner: S) -> AsyncStep<S> {
        AsyncStep { step: self.0.clone(), inner }
    }
}

#[derive(Clone)]
struct AsyncStep<S> {
    step: Arc<AsyncStepFn>,
    inner: S,
}

impl<S> Service<Request<Incoming>> for AsyncStep<S>
where
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Incoming>) -> BoxFuture {
        // The inner service was made ready by `poll_ready`; take that one and leave a clone.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let step = (self.step)(req);
        Box::pin(async move {
            match step.await {
                Ok(req) => inner.call(req).await,
                Err(answer) => Ok(answer),
            }
        })
    }
}

/// A panic in a handler becomes a 500 `Status` instead of a dropped connection (upstream's
/// `WithPanicRecovery`).
#[derive(Clone)]
struct RecoverPanicsLayer;

impl<S> Layer<S> for RecoverPanicsLayer {
    type Service = RecoverPanics<S>;

    fn layer(&self, inner: S) -> RecoverPanics<S> {
        RecoverPanics { inner }
    }
}

#[derive(Clone)]
struct RecoverPanics<S> {
    inner: S,
}

impl<S, B> Service<Request<B>> for RecoverPanics<S>
where
    S: Service<Request<B>, Response = Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> BoxFuture {
        // The handler is polled in place, each poll guarded against panics; it is dropped with
        // this future (the client reset the stream or closed the connection), so no work goes
        // on for a client that left, as upstream cancels the request's context. (A task per
        // request would do the same at the price of a spawn and a cross-task wake-up each.)
        let handling = self.inner.call(req);
        Box::pin(async move {
            match CatchUnwind(Box::pin(handling)).await {
                Ok(Ok(resp)) => Ok(resp),
                Ok(Err(never)) => match never {},
                Err(()) => {
                    tracing::error!("a request handler panicked");
                    Ok(error_response(&ApiError::internal("the request handler panicked")))
                }
            }
        })
    }
}

/// A future whose panics while being polled end it with `Err(())`; it is not polled again.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(Err(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kube-apiserver's `--request-timeout` default.
    const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

    fn info(verb: &str) -> RequestInfo {
        RequestInfo { verb: verb.to_owned(), ..Default::default() }
    }

    #[test]
    fn request_deadlines_follow_upstream() {
        let cases: [(&str, Option<&str>, Option<Duration>); 8] = [
            ("get", None, Some(REQUEST_TIMEOUT)),
            ("get", Some("timeout=5s"), Some(Duration::from_secs(5))),
            ("list", Some("limit=1&timeout=1m30s"), Some(REQUEST_TIMEOUT)),
            ("get", Some("timeout=0s"), Some(REQUEST_TIMEOUT)),
            ("get", Some("timeout=-5s"), Some(REQUEST_TIMEOUT)),
            ("get", Some("timeout=2562047h"), Some(REQUEST_TIMEOUT)),
            ("create", Some("timeout=250ms"), Some(Duration::from_millis(250))),
            ("watch", Some("timeout=5s"), None),
        ];
        for (verb, query, want) in cases {
            assert_eq!(request_deadline(&info(verb), query, REQUEST_TIMEOUT).unwrap(), want, "{verb} {query:?}");
        }
        let err = request_deadline(&info("get"), Some("timeout=soon"), REQUEST_TIMEOUT).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(err.message, "invalid timeout specified in the request URL - time: invalid duration \"soon\"");
        assert_eq!(request_deadline(&info("get"), Some("timeout=99999999999999999999h"), REQUEST_TIMEOUT).unwrap_err().code, 400);
    }

    /// Sets its flag when dropped: whether a handler's future was dropped (cancelled).
    struct DroppedFlag(Arc<std::sync::atomic::AtomicBool>);

    impl Drop for DroppedFlag {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn a_handler_is_cancelled_when_its_client_goes_away() {
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = dropped.clone();
        let handler = tower::service_fn(move |_: Request<()>| {
            let guard = DroppedFlag(flag.clone());
            async move {
                // A handler that would go on for good (a slow store, a blocked send).
                std::future::pending::<()>().await;
                drop(guard);
                Ok::<_, Infallible>(Response::new(super::super::body::full("never")))
            }
        });
        let mut service = RecoverPanicsLayer.layer(handler);
        let answer = service.call(Request::new(()));
        // Let the handler start, then drop the answer as hyper does when the
        // connection resets.
        let answer = tokio::time::timeout(Duration::from_millis(50), answer).await;
        assert!(answer.is_err(), "the handler answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst), "the handler went on after its client left");
    }

    #[tokio::test]
    async fn a_panicking_handler_is_a_500() {
        let handler = tower::service_fn(|_: Request<()>| async {
            if true {
                panic!("boom");
            }
            Ok::<_, Infallible>(Response::new(super::super::body::full("")))
        });
        let resp = RecoverPanicsLayer.layer(handler).call(Request::new(())).await.unwrap();
        assert_eq!(resp.status(), 500);
    }

    #[test]
    fn redirects_are_gos() {
        let resp = moved_permanently(&http::Method::GET, "/api/v1/pods?x=<1>");
        assert_eq!(resp.status(), 301);
        assert_eq!(resp.headers()[http::header::LOCATION], "/api/v1/pods?x=<1>");
        assert_eq!(resp.headers()[http::header::CONTENT_TYPE], "text/html; charset=utf-8");
        let resp = moved_permanently(&http::Method::DELETE, "/api/v1/pods");
        assert!(resp.headers().get(http::header::CONTENT_TYPE).is_none());
        assert_eq!(html_escape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&#34;&lt;/a&gt;");
    }
}
