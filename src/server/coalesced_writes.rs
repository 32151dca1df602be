//! A connection's socket writes, gathered until a flush; on HTTP/2, until the connection has
//! no more frames ready.
//!
//! HTTP/2 writes each DATA frame as its own TLS record, and h2 flushes after every large DATA
//! frame. With thousands of watches multiplexed on a few connections, tokio also ran a
//! connection's task right after each watch handed it an event (the woken task runs next), so
//! every event became its own flush, system call and TCP segment: 85k socket writes a second
//! for 100k watch events, about 40% of kapi's CPU in the kernel's TCP send path.
//!
//! [`CoalescedWrites`] sits between TLS and the socket. Writes land in a buffer. On an HTTP/2
//! connection ([`CoalescedWrites::gather_frames`]) a flush goes through three steps:
//! - the first flush of a batch lets the other ready tasks run once (it wakes its own task and
//!   answers `Pending`), so the events other watches hand over meanwhile join the batch;
//! - on the next turn, flushes that find new bytes since the previous flush answer at once
//!   without writing, so h2 goes on writing every frame it has queued (each wakes the task
//!   again, so a last flush is sure to come);
//! - the first flush that finds nothing new since the one before writes the whole batch: h2
//!   ends every pass of its connection with a flush after its last frame.
//!
//! Above TLS, [`GatheredFrames`] does the same for TLS records on HTTP/2: h2 chains a DATA
//! frame's payload of 256 bytes or more to its write instead of copying it when the stream
//! writes vectored, and writes it then with its header alone: one TLS record, encrypted and
//! framed on its own, per watch event. Told the stream does not write vectored, h2 copies
//! payloads under 1 KiB into its 16 KiB buffer, and a record carries many frames (three times
//! fewer CPU per delivered event with thousands of watches).
//!
//! HTTP/1.1 flushes once per response piece and then waits for the body or the next request,
//! so there a flush writes at once. The buffer holds at most [`CAPACITY`] bytes (a fuller one
//! is written out before more is taken, and a larger write goes straight through); it is freed
//! once written, so an idle connection holds none.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most bytes gathered before they are written out.
pub const CAPACITY: usize = 64 * 1024;

/// `T` (a socket) with its writes gathered until a flush; reads pass through.
pub struct CoalescedWrites<T> {
    inner: T,
    buffer: Vec<u8>,
    /// How much of `buffer` the socket has taken.
    written: usize,
    /// Whether flushes gather HTTP/2 frames (see the module documentation).
    gather_frames: bool,
    batch: Batch,
}

/// Where an HTTP/2 batch is: the steps of the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Batch {
    /// Nothing is held back.
    Idle,
    /// A flush let the other tasks run once.
    Yielded,
    /// Frames are being gathered; the buffer's length at the last flush.
    Gathering(usize),
}

impl<T> CoalescedWrites<T> {
    pub fn new(inner: T) -> Self {
        CoalescedWrites { inner, buffer: Vec::new(), written: 0, gather_frames: false, batch: Batch::Idle }
    }

    /// Gathers frames across flushes, for a connection that speaks HTTP/2.
    pub fn gather_frames(&mut self) {
        self.gather_frames = true;
    }
}

impl<T: AsyncWrite + Unpin> CoalescedWrites<T> {
    /// Writes the buffer out; `Pending` while the socket cannot take more.
    fn poll_write_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.buffer.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.buffer[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.buffer = Vec::new();
        self.written = 0;
        self.batch = Batch::Idle;
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for CoalescedWrites<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for CoalescedWrites<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(data)])
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, slices: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let len: usize = slices.iter().map(|s| s.len()).sum();
        if this.buffer.len() + len > CAPACITY {
            ready!(this.poll_write_out(cx))?;
        }
        if len >= CAPACITY {
            return Pin::new(&mut this.inner).poll_write_vectored(cx, slices);
        }
        if this.buffer.capacity() == 0 {
            this.buffer.reserve(len.max(16 * 1024));
        }
        for slice in slices {
            this.buffer.extend_from_slice(slice);
        }
        Poll::Ready(Ok(len))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let held = this.buffer.len();
        if this.gather_frames && this.written < held {
            match this.batch {
                Batch::Idle => {
                    this.batch = Batch::Yielded;
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Batch::Gathering(at_last_flush) if at_last_flush == held => {}
                Batch::Yielded | Batch::Gathering(_) => {
                    this.batch = Batch::Gathering(held);
                    cx.waker().wake_by_ref();
                    return Poll::Ready(Ok(()));
                }
            }
        }
        ready!(this.poll_write_out(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_write_out(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// A connection's TLS stream as hyper writes to it: on HTTP/2, for h2 to write whole buffers
/// of frames (see the module documentation), it says it does not write vectored; otherwise,
/// and in everything else, it passes through.
pub struct GatheredFrames<T> {
    stream: T,
    http2: bool,
}

impl<T> GatheredFrames<T> {
    pub fn new(stream: T, http2: bool) -> Self {
        GatheredFrames { stream, http2 }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for GatheredFrames<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for GatheredFrames<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, data)
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, slices: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, slices)
    }

    fn is_write_vectored(&self) -> bool {
        !self.http2 && self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Writes reach the peer only at a flush, all in one piece; a write larger than the buffer
    /// goes after what was gathered before it, in order.
    #[tokio::test]
    async fn writes_leave_together_at_a_flush_and_in_order() {
        let (near, mut far) = tokio::io::duplex(4 * CAPACITY);
        let mut writer = CoalescedWrites::new(near);
        writer.write_all(b"first ").await.unwrap();
        writer.write_all(b"second").await.unwrap();
        let mut peek = [0u8; 16];
        let nothing_yet = tokio::time::timeout(std::time::Duration::from_millis(20), far.read(&mut peek)).await;
        assert!(nothing_yet.is_err(), "nothing leaves before the flush");
        writer.flush().await.unwrap();
        let mut got = vec![0u8; 12];
        far.read_exact(&mut got).await.unwrap();
        assert_eq!(got, b"first second");

        let large = vec![b'x'; CAPACITY + 1];
        writer.write_all(b"small").await.unwrap();
        writer.write_all(&large).await.unwrap();
        writer.flush().await.unwrap();
        let mut got = vec![0u8; 5 + large.len()];
        far.read_exact(&mut got).await.unwrap();
        assert_eq!(&got[..5], b"small");
        assert!(got[5..].iter().all(|b| *b == b'x'));
        assert_eq!(writer.buffer.capacity(), 0, "a written-out buffer is freed");
    }

    /// h2 is told an HTTP/2 stream does not write vectored (so that it copies small frames
    /// into whole buffers); HTTP/1.1 sees the stream as it is. Bytes pass through either way.
    #[tokio::test]
    async fn http2_streams_say_they_do_not_write_vectored() {
        let (near, mut far) = tokio::io::duplex(1024);
        let mut http2 = GatheredFrames::new(CoalescedWrites::new(near), true);
        assert!(!http2.is_write_vectored());
        let (other, _other_far) = tokio::io::duplex(1024);
        assert!(GatheredFrames::new(CoalescedWrites::new(other), false).is_write_vectored());
        http2.write_all(b"frames").await.unwrap();
        http2.flush().await.unwrap();
        let mut got = [0u8; 6];
        far.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"frames");
    }

    /// A shutdown sends what is gathered first.
    #[tokio::test]
    async fn shutdown_sends_what_is_gathered() {
        let (near, mut far) = tokio::io::duplex(1024);
        let mut writer = CoalescedWrites::new(near);
        writer.write_all(b"last words").await.unwrap();
        writer.shutdown().await.unwrap();
        let mut got = Vec::new();
        far.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"last words");
    }

    /// Gathering HTTP/2 frames: the first flush of a batch waits one turn, flushes that find
    /// new bytes answer without writing, and the first one that finds none writes the batch.
    #[tokio::test]
    async fn frames_are_written_once_a_flush_finds_nothing_new() {
        use std::future::poll_fn;
        let (near, mut far) = tokio::io::duplex(4 * CAPACITY);
        let mut writer = CoalescedWrites::new(near);
        writer.gather_frames();
        let flush = |writer: &mut CoalescedWrites<_>| {
            let waker = std::task::Waker::noop();
            Pin::new(writer).poll_flush(&mut Context::from_waker(waker))
        };
        writer.write_all(b"one ").await.unwrap();
        assert!(flush(&mut writer).is_pending(), "the batch's first flush yields");
        assert!(flush(&mut writer).is_ready(), "the next turn gathers");
        writer.write_all(b"two ").await.unwrap();
        assert!(flush(&mut writer).is_ready());
        writer.write_all(b"three").await.unwrap();
        assert!(flush(&mut writer).is_ready());
        let mut peek = [0u8; 16];
        let nothing_yet = tokio::time::timeout(std::time::Duration::from_millis(20), far.read(&mut peek)).await;
        assert!(nothing_yet.is_err(), "nothing leaves while frames keep coming");
        poll_fn(|cx| Pin::new(&mut writer).poll_flush(cx)).await.unwrap();
        let mut got = vec![0u8; 13];
        far.read_exact(&mut got).await.unwrap();
        assert_eq!(got, b"one two three");
        assert_eq!(writer.batch, Batch::Idle);
    }
}
