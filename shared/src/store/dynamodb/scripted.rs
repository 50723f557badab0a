//! A scripted DynamoDB for tests (feature `test-util`): a loopback HTTP server that answers each
//! request as the test's script says, with no emulator, so that the answers a client meets (a
//! refusal DynamoDB documents, a missing table) and their number are exactly known.

use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server answers to the `n`th request (counted from 0) of one operation: called with
/// the operation's name (`"PutItem"`, the part of `X-Amz-Target` after the dot) and `n`; returns
/// the HTTP status and the JSON body (`application/x-amz-json-1.0`, as DynamoDB answers).
pub type Script = dyn Fn(&str, usize) -> (u16, String) + Send + Sync;

/// The JSON body of a DynamoDB error: `{"__type": "com.amazonaws.dynamodb.v20120810#<code>",
/// "message": <message>}` (the AWS JSON 1.0 protocol's error shape).
pub fn error_body(code: &str, message: &str) -> String {
    serde_json::json!({
        "__type": format!("com.amazonaws.dynamodb.v20120810#{code}"),
        "message": message,
    })
    .to_string()
}

/// A scripted DynamoDB on `127.0.0.1`, serving until the test's runtime ends; it records the
/// operation of every request it receives.
#[derive(Debug)]
pub struct ScriptedDynamoDb {
    endpoint: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl ScriptedDynamoDb {
    /// Binds a free loopback port and serves `script` there (HTTP/1.1, each connection kept
    /// until the client closes it).
    ///
    /// Errors: the port cannot be bound.
    pub async fn start(script: Box<Script>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::from(script);
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (script, log) = (script.clone(), log.clone());
                tokio::spawn(async move {
                    while let Some(operation) = read_request(&mut socket).await {
                        let n = {
                            let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
                            log.push(operation.clone());
                            log.iter().filter(|seen| **seen == operation).count() - 1
                        };
                        let (status, body) = script(&operation, n);
                        let reason = http::StatusCode::from_u16(status)
                            .ok()
                            .and_then(|code| code.canonical_reason())
                            .unwrap_or("");
                        let answer = format!(
                            "HTTP/1.1 {status} {reason}\r\ncontent-type: application/x-amz-json-1.0\r\nx-amzn-requestid: test\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if socket.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Ok(Self { endpoint, seen })
    }

    /// The server's URL (`http://127.0.0.1:<port>`), for an SDK's endpoint or `AWS_ENDPOINT_URL`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The operations received so far, in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Reads one HTTP request; its `X-Amz-Target` operation (`None` when the client closed the
/// connection or sent no target).
async fn read_request(socket: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).to_string();
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buffer.len() < header_end + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
    let target = header("x-amz-target")?;
    Some(target.rsplit('.').next()?.to_string())
}
