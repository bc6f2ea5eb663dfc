//! Reading requests off a socket without trusting them: signature checked, optional fields defaulted, bad content kept answerable.
//!
//! jupyter-zmq-client's `Connection::read` turns a request whose content does not fit its type
//! into an error that has lost the sender's identity, so the kernel could not even answer it.
//! jupyter_client sends `history_request(hist_access_type="search")` without `n` or `unique`,
//! which jupyter-protocol requires: read that way, a plain history search would go unanswered.
//! So the kernel reads the raw frames itself (through the crate's signature check), fills the
//! fields the protocol lets clients leave out, and keeps a request it still cannot parse as an
//! `UnknownMessage` with the reason, which the handlers answer with an error reply.
use jupyter_protocol::{Header, JupyterMessage, JupyterMessageContent, UnknownMessage};
use jupyter_zmq_client::{Connection, RawMessage, RuntimeError};
use serde_json::{json, Value};
use zeromq::SocketRecv;

/// A request as read: the message, and why its content could not be understood, if it could not.
pub struct Incoming {
    /// The message; its content is `UnknownMessage` when `problem` is set.
    pub message: JupyterMessage,
    /// What was wrong with the content.
    pub problem: Option<String>,
}

/// Read one signed request from `connection`.
pub async fn read<S: SocketRecv>(connection: &mut Connection<S>) -> Result<Incoming, RuntimeError> {
    let frames = connection.socket.recv().await?;
    let raw = RawMessage::from_multipart(frames, &connection.mac)?;
    decode(raw)
}

fn decode(raw: RawMessage) -> Result<Incoming, RuntimeError> {
    let header: Header = serde_json::from_slice(&raw.jparts[0])?;
    let parent_header = serde_json::from_slice::<Header>(&raw.jparts[1]).ok();
    let metadata: Value = serde_json::from_slice(&raw.jparts[2]).unwrap_or_else(|_| json!({}));
    let mut content: Value = serde_json::from_slice(&raw.jparts[3])?;
    fill_defaults(&header.msg_type, &mut content);
    let (content, problem) =
        match JupyterMessageContent::from_type_and_content(&header.msg_type, content.clone()) {
            Ok(parsed) => (parsed, None),
            Err(e) => {
                let unknown = UnknownMessage {
                    msg_type: header.msg_type.clone(),
                    content,
                };
                let problem = format!("malformed {} content: {e}", header.msg_type);
                (
                    JupyterMessageContent::UnknownMessage(unknown),
                    Some(problem),
                )
            }
        };
    let message = JupyterMessage {
        zmq_identities: raw.zmq_identities,
        header,
        parent_header,
        metadata,
        content,
        buffers: raw.jparts[4..].to_vec(),
        channel: None,
    };
    Ok(Incoming { message, problem })
}

/// Give optional request fields the defaults the messaging spec (and ipykernel) use.
fn fill_defaults(msg_type: &str, content: &mut Value) {
    let Some(map) = content.as_object_mut() else {
        return;
    };
    let mut default = |key: &str, value: Value| {
        if map.get(key).is_none_or(Value::is_null) {
            map.insert(key.to_string(), value);
        }
    };
    match msg_type {
        "history_request" => {
            default("output", json!(false));
            default("raw", json!(true));
            default("hist_access_type", json!("range"));
            default("n", json!(0)); // 0: no limit (search) / nothing (tail)
            default("unique", json!(false));
            default("pattern", json!("*"));
            default("start", json!(0));
            default("stop", json!(0));
        }
        "execute_request" => {
            default("silent", json!(false));
            default("store_history", json!(true));
            default("user_expressions", json!({}));
        }
        "complete_request" | "inspect_request" => default("cursor_pos", json!(0)),
        "shutdown_request" => default("restart", json!(false)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jupyter_protocol::HistoryRequest;

    fn raw(msg_type: &str, content: Value) -> RawMessage {
        let header = json!({"msg_id": "m1", "username": "u", "session": "s",
            "date": "2026-01-01T00:00:00Z", "msg_type": msg_type, "version": "5.3"});
        RawMessage {
            zmq_identities: vec![b"client".to_vec().into()],
            jparts: [header, json!({}), json!({}), content]
                .iter()
                .map(|v| serde_json::to_vec(v).unwrap().into())
                .collect(),
        }
    }

    #[test]
    fn a_search_without_n_or_unique_is_understood() {
        let got = decode(raw(
            "history_request",
            json!({"hist_access_type": "search", "pattern": "a*", "output": false, "raw": true}),
        ))
        .unwrap();
        assert!(got.problem.is_none());
        assert!(matches!(
            got.message.content,
            JupyterMessageContent::HistoryRequest(HistoryRequest::Search {
                n: 0,
                unique: false,
                ..
            })
        ));
        assert_eq!(got.message.zmq_identities.len(), 1);
    }

    #[test]
    fn bad_content_keeps_the_sender_and_says_why() {
        let got = decode(raw("complete_request", json!({"code": 5}))).unwrap();
        assert!(got.problem.unwrap().contains("malformed complete_request"));
        assert!(matches!(
            got.message.content,
            JupyterMessageContent::UnknownMessage(_)
        ));
        assert_eq!(got.message.header.msg_id, "m1");
    }

    #[test]
    fn frames_that_are_not_json_are_an_error() {
        let mut r = raw("kernel_info_request", json!({}));
        r.jparts[3] = b"{not json".to_vec().into();
        assert!(decode(r).is_err());
    }
}
