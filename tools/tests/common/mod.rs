//! A local HTTP/1.1 server on 127.0.0.1 for the tests of the network tools: every request
//! read whole (method, target, headers, body), answered by the test's handler, one thread
//! per connection (Chromium opens speculative connections that send nothing), the
//! connection closed after each answer.

#![allow(dead_code)] // each test binary uses its own part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The request target: path and query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Status, headers, body.
pub type Response = (u16, Vec<(String, String)>, String);

/// Serves until the test process ends; returns the base URL (`http://127.0.0.1:PORT`).
pub fn serve(handler: impl Fn(Request) -> Response + Send + Sync + 'static) -> String {
    serve_on("127.0.0.1", handler)
}

/// Serves on another loopback address (all of 127.0.0.0/8 is loopback on Linux).
pub fn serve_on(ip: &str, handler: impl Fn(Request) -> Response + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let handler = Arc::new(handler);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let handler = handler.clone();
            std::thread::spawn(move || {
                if let Some(request) = read_request(&stream) {
                    let (status, headers, body) = handler(request);
                    let mut response = format!(
                        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                        body.len()
                    );
                    for (k, v) in headers {
                        response.push_str(&format!("{k}: {v}\r\n"));
                    }
                    response.push_str("\r\n");
                    response.push_str(&body);
                    let _ = (&stream).write_all(response.as_bytes());
                }
            });
        }
    });
    base
}

/// None when the client sent nothing (or not HTTP) before closing.
fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok().filter(|&n| n > 0)?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let mut request = Request {
        method,
        path,
        headers,
        body: String::new(),
    };
    let length: usize = request.header("content-length").map_or(0, |v| v.parse().unwrap());
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    request.body = String::from_utf8(body).unwrap();
    Some(request)
}
