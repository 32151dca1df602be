//! The response body type: whole bodies for most answers, streamed ones for watches (made as
//! the body is polled) and lists (a channel of pieces).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::Frame;
use tokio::sync::mpsc;

/// Every response body kapi sends.
pub type Body = BoxBody<Bytes, Infallible>;

/// A complete body.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(bytes.into()).boxed()
}

/// A body streamed from a channel: each message is a chunk, sent as soon as it is produced
/// (a LIST's pieces, encoded by a task of their own); chunks already queued when the body is
/// polled leave together, up to [`MERGE_UP_TO`] bytes. The body ends when every sender is
/// dropped.
pub fn channel(capacity: usize) -> (mpsc::Sender<Bytes>, Body) {
    let (tx, rx) = mpsc::channel(capacity);
    (tx, Merged { source: rx, held: None }.boxed())
}

/// A body whose chunks `next` makes from a state, one after another, as the HTTP layer polls
/// the body (a watch's events): no task or channel of its own. `next` answers the chunk and the
/// state for the following one, or `None` to end the body. Chunks ready at once leave together,
/// as in [`channel`].
pub fn unfold<S, F, Next>(state: S, next: F) -> Body
where
    S: Send + Unpin + 'static,
    F: FnMut(S) -> Next + Send + Unpin + 'static,
    Next: Future<Output = Option<(Bytes, S)>> + Send + 'static,
{
    // The mutex only makes the body `Sync`, as a boxed body must be: it is reached through
    // `get_mut`, never locked.
    let source = Mutex::new(Unfold { state: Some(state), next, pending: None });
    Merged { source, held: None }.boxed()
}

/// The most bytes of queued chunks sent as one (a TLS record's worth). A watcher that fell
/// behind catches up in fewer, larger frames: each HTTP/2 DATA frame costs stream bookkeeping
/// and a TLS record of its own. Larger chunks (a LIST's pieces) are sent as they are.
const MERGE_UP_TO: usize = 16 * 1024;

/// Where a streamed body's chunks come from.
trait ChunkSource {
    /// The next chunk, `None` once there are no more.
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>>;
}

impl ChunkSource for mpsc::Receiver<Bytes> {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.poll_recv(cx)
    }
}

struct Unfold<S, F, Next> {
    /// `None` while `pending` makes the next chunk, and once the body has ended.
    state: Option<S>,
    next: F,
    pending: Option<Pin<Box<Next>>>,
}

impl<S, F, Next> ChunkSource for Mutex<Unfold<S, F, Next>>
where
    F: FnMut(S) -> Next,
    Next: Future<Output = Option<(Bytes, S)>>,
{
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = self.get_mut().unwrap_or_else(PoisonError::into_inner);
        if this.pending.is_none() {
            let Some(state) = this.state.take() else { return Poll::Ready(None) };
            this.pending = Some(Box::pin((this.next)(state)));
        }
        let Some(pending) = this.pending.as_mut() else { return Poll::Ready(None) };
        let made = ready!(pending.as_mut().poll(cx));
        this.pending = None;
        Poll::Ready(made.map(|(chunk, state)| {
            this.state = Some(state);
            chunk
        }))
    }
}

/// A body of `source`'s chunks, those ready at once merged up to [`MERGE_UP_TO`] bytes.
struct Merged<C> {
    source: C,
    /// A chunk taken from the source that did not fit in the last merged one.
    held: Option<Bytes>,
}

impl<C: ChunkSource + Unpin> hyper::body::Body for Merged<C> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let first = match this.held.take() {
            Some(chunk) => chunk,
            None => match ready!(this.source.poll_chunk(cx)) {
                Some(chunk) => chunk,
                None => return Poll::Ready(None),
            },
        };
        // Gathered first and copied once into a buffer of the merged size: growing one as the
        // chunks came reallocated and copied it again and again (a tenth of a busy watch
        // server's time).
        let mut more = Vec::new();
        let mut len = first.len();
        // The source registers the waker when it is not ready: the body is polled again then.
        while len < MERGE_UP_TO
            && let Poll::Ready(Some(next)) = this.source.poll_chunk(cx)
        {
            if len + next.len() > MERGE_UP_TO {
                this.held = Some(next);
                break;
            }
            len += next.len();
            more.push(next);
        }
        if more.is_empty() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        let mut merged = Vec::with_capacity(len);
        merged.extend_from_slice(&first);
        for chunk in &more {
            merged.extend_from_slice(chunk);
        }
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(merged)))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Queued chunks leave as one frame up to the limit, in order; a larger one alone.
    #[tokio::test]
    async fn queued_chunks_leave_together() {
        let (tx, mut body) = channel(8);
        for chunk in ["a\n", "b\n", "c\n"] {
            tx.send(Bytes::from_static(chunk.as_bytes())).await.unwrap();
        }
        let large = Bytes::from(vec![b'x'; MERGE_UP_TO]);
        tx.send(large.clone()).await.unwrap();
        tx.send(Bytes::from_static(b"d\n")).await.unwrap();
        drop(tx);
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            frames.push(frame.unwrap().into_data().unwrap());
        }
        assert_eq!(frames, [Bytes::from_static(b"a\nb\nc\n"), large, Bytes::from_static(b"d\n")]);
    }

    /// An unfolded body: chunks made as it is polled, those ready at once together, the body
    /// over when `next` says so.
    #[tokio::test]
    async fn unfolded_chunks_are_made_as_the_body_is_polled() {
        let (tx, rx) = mpsc::unbounded_channel::<&'static str>();
        let mut body = unfold(rx, |mut rx| async move {
            let text = rx.recv().await?;
            Some((Bytes::from_static(text.as_bytes()), rx))
        });
        tx.send("a").unwrap();
        tx.send("b").unwrap();
        assert_eq!(body.frame().await.unwrap().unwrap().into_data().unwrap(), "ab");
        let later = tokio::spawn(async move {
            tokio::task::yield_now().await;
            tx.send("c").unwrap();
        });
        assert_eq!(body.frame().await.unwrap().unwrap().into_data().unwrap(), "c");
        later.await.unwrap();
        assert!(body.frame().await.is_none(), "the body ends when the sender is gone");
    }
}
