//! The request chain: a tower stack written in request order, as kube-apiserver's
//! `DefaultBuildHandlerChain` runs it — panic recovery → request info → authentication →
//! authorization → the handler. Each step either enriches the request (the user, the request
//! info) or answers it with a `Status`; nothing after a step that answered runs.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use hyper::body::Incoming;
use tower::{Layer, Service, ServiceBuilder};

use super::body::Body;
use super::{ServerState, error_response};
use crate::pki::UserInfo;
use crate::request_info::RequestInfo;
use crate::status::ApiError;

type BoxFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// The user a request is authenticated as (none: anonymous). Set from the connection's client
/// certificate.
#[derive(Clone, Debug)]
pub struct Authenticated(pub Option<Arc<UserInfo>>);

/// The service answering the requests of one connection, whose client certificate made `user`.
pub fn service(
    state: Arc<ServerState>,
    user: Option<Arc<UserInfo>>,
) -> impl Service<Request<Incoming>, Response = Response<Body>, Error = Infallible, Future: Send> + Clone + Send + 'static {
    ServiceBuilder::new()
        .layer(RecoverPanicsLayer)
        .layer(StepLayer::new(move |req| {
            req.extensions_mut().insert(Authenticated(user.clone()));
            None
        }))
        .layer(StepLayer::new(request_info))
        .layer(StepLayer::new(authenticate))
        .layer(StepLayer::new(authorize))
        .service(tower::service_fn(move |req: Request<Incoming>| {
            let state = state.clone();
            async move {
                // Instrumentation (upstream's `InstrumentRouteFunc`): count and time the answer.
                let started = std::time::Instant::now();
                let info = req.extensions().get::<RequestInfo>().cloned().unwrap_or_default();
                let method = req.method().as_str().to_owned();
                let dry_run = req.uri().query().is_some_and(|q| q.contains("dryRun=All"));
                let resp = super::handle(&state, req).await;
                let code = resp.status().as_u16();
                state.metrics.observe(&info, &method, dry_run, code, started.elapsed().as_secs_f64());
                Ok::<_, Infallible>(resp)
            }
        }))
}

/// Parses the request info once, for everything after (upstream's `WithRequestInfo`).
fn request_info(req: &mut Request<Incoming>) -> Option<Response<Body>> {
    let info = crate::request_info::parse(req.method().as_str(), req.uri().path(), req.uri().query());
    match info {
        Ok(info) => {
            req.extensions_mut().insert(info);
            None
        }
        Err(e) => Some(error_response(&ApiError::from(e))),
    }
}

/// Paths answered without authentication, as upstream's `system:public-info-viewer` allows.
fn is_public(path: &str) -> bool {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or_default();
    matches!(first, "healthz" | "livez" | "readyz" | "version")
}

/// x509 client certificates (the connection's); everything else only on public paths.
fn authenticate(req: &mut Request<Incoming>) -> Option<Response<Body>> {
    let user = req.extensions().get::<Authenticated>().and_then(|a| a.0.clone());
    (user.is_none() && !is_public(req.uri().path())).then(|| error_response(&ApiError::unauthorized()))
}

/// Every authenticated user may do everything until RBAC lands; the step is here so that RBAC
/// slots in at upstream's place in the chain.
fn authorize(req: &mut Request<Incoming>) -> Option<Response<Body>> {
    let _info: Option<&RequestInfo> = req.extensions().get::<RequestInfo>();
    None
}

/// One step of the chain: may change the request, or answer it.
type StepFn = dyn Fn(&mut Request<Incoming>) -> Option<Response<Body>> + Send + Sync;

#[derive(Clone)]
struct StepLayer(Arc<StepFn>);

impl StepLayer {
    fn new(step: impl Fn(&mut Request<Incoming>) -> Option<Response<Body>> + Send + Sync + 'static) -> Self {
        Self(Arc::new(step))
    }
}

impl<S> Layer<S> for StepLayer {
    type Service = Step<S>;

    fn layer(&self, inner: S) -> Step<S> {
        Step { step: self.0.clone(), inner }
    }
}

#[derive(Clone)]
struct Step<S> {
    step: Arc<StepFn>,
    inner: S,
}

impl<S> Service<Request<Incoming>> for Step<S>
where
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<Incoming>) -> BoxFuture {
        match (self.step)(&mut req) {
            Some(answer) => Box::pin(async move { Ok(answer) }),
            None => Box::pin(self.inner.call(req)),
        }
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

impl<S> Service<Request<Incoming>> for RecoverPanics<S>
where
    S: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Incoming>) -> BoxFuture {
        let handling = tokio::spawn(self.inner.call(req));
        Box::pin(async move {
            Ok(match handling.await {
                Ok(Ok(resp)) => resp,
                Ok(Err(never)) => match never {},
                Err(e) => {
                    tracing::error!(error = %e, "a request handler panicked");
                    error_response(&ApiError::internal("the request handler panicked"))
                }
            })
        })
    }
}
