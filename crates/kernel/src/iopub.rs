//! The IOPub side of the kernel: one task owns the XPUB socket, and a `Publisher` feeds it in order.
//!
//! Every iopub message (status, execute_input, streams, results, errors, welcomes) goes through a
//! single unbounded channel into the one task that owns the socket, so the order in which the
//! kernel decides to publish is the order clients see: busy, execute_input, outputs, idle. The
//! same task answers XPUB subscriptions with `iopub_welcome` (JEP 65), which is why publishing and
//! subscription handling cannot live on two tasks: both need the socket. A request's reply waits
//! for [`Publisher::flushed`], so every output of a cell is on the wire before its execute_reply.
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jupyter_protocol::{
    ExecutionState, IoPubWelcome, JupyterMessage, JupyterMessageContent, Status, Stdio,
    StreamContent,
};
use jupyter_zmq_client::{KernelIoPubXPubConnection, SubscriptionEvent};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;

/// How long printed text may wait before it goes out as one `stream` message.
pub const STREAM_FLUSH_INTERVAL: Duration = Duration::from_millis(50);

/// How long a reply waits for iopub to take the outputs before it: a subscriber that stops reading
/// must not hold every reply forever (ipykernel's flush gives up after 10 s too).
const FLUSH_LIMIT: Duration = Duration::from_secs(10);

/// A `stream` message is sent early once this much text is waiting.
const STREAM_FLUSH_BYTES: usize = 64 * 1024;

/// What the iopub task is asked to do, in order.
pub enum Outgoing {
    /// Publish a message.
    Message(Box<JupyterMessage>),
    /// Say so once everything queued before has been written to the socket.
    Flushed(oneshot::Sender<()>),
}

/// Publishes iopub messages in order, batching stream text; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Publisher {
    state: Arc<Mutex<PublisherState>>,
}

struct PublisherState {
    tx: UnboundedSender<Outgoing>,
    /// The request outputs belong to (an execute_request while a cell runs).
    parent: Option<JupyterMessage>,
    /// Drop outputs (streams, displays) for `silent` executions.
    muted: bool,
    /// Stream text not yet sent: which stream, and the text.
    pending: Option<(bool, String)>,
}

impl Publisher {
    /// A publisher sending into `tx`, read by [`run_iopub`].
    pub fn new(tx: UnboundedSender<Outgoing>) -> Publisher {
        Publisher {
            state: Arc::new(Mutex::new(PublisherState {
                tx,
                parent: None,
                muted: false,
                pending: None,
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PublisherState> {
        // A panic while holding the lock cannot leave the state half-written in a way that
        // matters (at worst a stream chunk is lost), so keep publishing.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Attribute the outputs that follow to `parent`; `muted` drops them (silent execution).
    pub fn begin(&self, parent: &JupyterMessage, muted: bool) {
        let mut s = self.lock();
        s.flush();
        s.parent = Some(parent.clone());
        s.muted = muted;
    }

    /// Send any waiting stream text, then stop attributing outputs to the current request.
    pub fn end(&self) {
        let mut s = self.lock();
        s.flush();
        s.parent = None;
        s.muted = false;
    }

    /// Drop (or stop dropping) the current request's outputs; gives the previous setting.
    pub fn set_muted(&self, muted: bool) -> bool {
        let mut s = self.lock();
        s.flush();
        std::mem::replace(&mut s.muted, muted)
    }

    /// Queue printed text; it goes out batched, in order with everything else.
    pub fn stream(&self, stderr: bool, text: &str) {
        let mut s = self.lock();
        if s.muted || s.parent.is_none() || text.is_empty() {
            return;
        }
        if matches!(&s.pending, Some((e, _)) if *e != stderr) {
            s.flush();
        }
        let pending = s.pending.get_or_insert_with(|| (stderr, String::new()));
        pending.1.push_str(text);
        if pending.1.len() >= STREAM_FLUSH_BYTES {
            s.flush();
        }
    }

    /// Send waiting stream text now.
    pub fn flush(&self) {
        self.lock().flush();
    }

    /// Resolves once everything published so far (waiting stream text included) is on the socket:
    /// a reply sent after it cannot overtake its outputs, as ipykernel's flush before the reply.
    pub async fn flushed(&self) {
        let (tx, rx) = oneshot::channel();
        {
            let mut s = self.lock();
            s.flush();
            let _ = s.tx.send(Outgoing::Flushed(tx));
        }
        // An error means the iopub task is gone (shutting down): nothing left to wait for.
        let _ = tokio::time::timeout(FLUSH_LIMIT, rx).await;
    }

    /// Publish an output of the current request (after any waiting stream text), unless muted.
    pub fn output(&self, content: impl Into<JupyterMessageContent>) {
        let mut s = self.lock();
        s.flush();
        if s.muted {
            return;
        }
        if let Some(parent) = s.parent.clone() {
            s.send(JupyterMessage::new(content, Some(&parent)));
        }
    }

    /// Publish `content` as a child of `parent`, after any waiting stream text.
    pub fn send(&self, content: impl Into<JupyterMessageContent>, parent: &JupyterMessage) {
        let mut s = self.lock();
        s.flush();
        s.send(JupyterMessage::new(content, Some(parent)));
    }

    /// Publish `busy` or `idle` for `parent`.
    pub fn status(&self, state: ExecutionState, parent: &JupyterMessage) {
        self.send(
            Status {
                execution_state: state,
            },
            parent,
        );
    }
}

impl PublisherState {
    fn flush(&mut self) {
        let Some((stderr, text)) = self.pending.take() else {
            return;
        };
        if let Some(parent) = &self.parent {
            let name = if stderr { Stdio::Stderr } else { Stdio::Stdout };
            let content = StreamContent { name, text };
            self.send(JupyterMessage::new(content, Some(parent)));
        }
    }

    fn send(&self, mut message: JupyterMessage) {
        // On PUB/XPUB the identity frames are the topic; a parent's ROUTER identity means nothing
        // to subscribers, so use a topic naming the message as ipykernel does.
        let topic = format!("kernel.torchlet.{}", message.header.msg_type);
        message.zmq_identities = vec![topic.into_bytes().into()];
        // The receiver lives as long as the kernel; a send error means we are shutting down.
        let _ = self.tx.send(Outgoing::Message(Box::new(message)));
    }
}

/// Send waiting stream text every [`STREAM_FLUSH_INTERVAL`], so long cells show prints as they go.
pub async fn run_stream_flusher(publisher: Publisher) {
    let mut tick = tokio::time::interval(STREAM_FLUSH_INTERVAL);
    loop {
        tick.tick().await;
        publisher.flush();
    }
}

/// How long one iopub message may wait for a subscriber that is not reading before the kernel stops
/// waiting for it.
///
/// The zeromq crate's XPUB waits until a message is written to every subscriber's connection, so
/// one client that stops reading (a frozen tab, a script that subscribed and forgot) would hold
/// the iopub task, and with it every reply, which waits for its outputs. libzmq's PUB, which
/// ipykernel uses, never waits: it drops what a subscriber cannot take once 1000 messages are
/// queued for it. torchlet waits this long once, then drops iopub messages that cannot be written
/// at once until the subscribers catch up.
const STALLED_SUBSCRIBER: Duration = Duration::from_secs(1);

/// The XPUB socket and whether a subscriber has stopped reading.
struct IoPub {
    socket: KernelIoPubXPubConnection,
    /// Messages dropped since a send last went through, while a subscriber is not reading.
    congested: Option<u64>,
}

impl IoPub {
    /// Send `message`, waiting for slow subscribers only while none has been found stalled, or
    /// when `patient` (a welcome, without which a new client waits on its own).
    async fn send(&mut self, message: JupyterMessage, what: &str, patient: bool) {
        let patience = match self.congested {
            Some(_) if !patient => Duration::ZERO,
            _ => STALLED_SUBSCRIBER,
        };
        // Cancelling a send is safe: the crate's writer takes a message whole or not at all.
        match tokio::time::timeout(patience, self.socket.send(message)).await {
            Ok(sent) => {
                if let Some(dropped) = self.congested.take() {
                    eprintln!(
                        "torchlet kernel: iopub subscribers read again; {dropped} iopub \
                         messages were dropped meanwhile"
                    );
                }
                if let Err(e) = sent {
                    eprintln!("torchlet kernel: cannot {what}: {e}");
                }
            }
            Err(_) => {
                if self.congested.is_none() {
                    eprintln!(
                        "torchlet kernel: an iopub subscriber is not reading; dropping iopub \
                         messages it cannot take until it does (as ZeroMQ's PUB does)"
                    );
                }
                *self.congested.get_or_insert(0) += 1;
            }
        }
    }
}

/// Own the XPUB socket: publish queued messages in order and welcome each new subscriber.
///
/// A failed subscription read is one client going away (often a reset when it closed while the
/// kernel was still publishing to it); the socket has already dropped that client, so it is no
/// news to report.
pub async fn run_iopub(socket: KernelIoPubXPubConnection, mut rx: UnboundedReceiver<Outgoing>) {
    let mut iopub = IoPub {
        socket,
        congested: None,
    };
    loop {
        tokio::select! {
            biased;
            event = iopub.socket.recv_subscription() => match event {
                Ok(SubscriptionEvent::Subscribe(topic)) => {
                    let welcome: JupyterMessage = IoPubWelcome::new(topic).into();
                    iopub.send(welcome, "send iopub_welcome", true).await;
                }
                Ok(SubscriptionEvent::Unsubscribe(_)) | Err(_) => {}
            },
            outgoing = rx.recv() => match outgoing {
                Some(Outgoing::Message(message)) => {
                    iopub.send(*message, "publish on iopub", false).await;
                }
                // XPUB's send returns once the bytes are written to every subscriber's connection.
                Some(Outgoing::Flushed(done)) => {
                    let _ = done.send(());
                }
                None => return,
            },
        }
    }
}
