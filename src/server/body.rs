//! The response body type: whole bodies for most answers, a channel of chunks for watches and
//! streamed lists.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Bytes, BytesMut};
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
/// (watch events); chunks already queued when the body is polled leave together, up to
/// [`MERGE_UP_TO`] bytes. The body ends when every sender is dropped.
pub fn channel(capacity: usize) -> (mpsc::Sender<Bytes>, Body) {
    let (tx, rx) = mpsc::channel(capacity);
    (tx, ChannelBody { rx, held: None }.boxed())
}

/// The most bytes of queued chunks sent as one. A watcher that fell behind catches up in fewer,
/// larger frames: each HTTP/2 DATA frame costs stream bookkeeping and a TLS record of its own.
/// Larger chunks (a LIST's pieces) are sent as they are.
pub const MERGE_UP_TO: usize = 64 * 1024;

struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
    /// A chunk taken from the channel that did not fit in the last merged one.
    held: Option<Bytes>,
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let first = match this.held.take() {
            Some(chunk) => chunk,
            None => match ready!(this.rx.poll_recv(cx)) {
                Some(chunk) => chunk,
                None => return Poll::Ready(None),
            },
        };
        let mut merged: Option<BytesMut> = None;
        let mut len = first.len();
        while len < MERGE_UP_TO
            && let Ok(next) = this.rx.try_recv()
        {
            if len + next.len() > MERGE_UP_TO {
                this.held = Some(next);
                break;
            }
            len += next.len();
            merged
                .get_or_insert_with(|| {
                    let mut chunk = BytesMut::with_capacity(2 * len);
                    chunk.extend_from_slice(&first);
                    chunk
                })
                .extend_from_slice(&next);
        }
        Poll::Ready(Some(Ok(Frame::data(merged.map_or(first, BytesMut::freeze)))))
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
}
