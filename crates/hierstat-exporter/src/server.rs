//! A small HTTP server for `/metrics`, on `tiny_http`.
//!
//! One thread serves requests one at a time (Prometheus scrapes a target
//! serially), rendering into a buffer reused across scrapes. `GET /metrics`
//! answers in OpenMetrics or the Prometheus text format, as the `Accept`
//! header asks ([`Format::from_accept`]); `GET /` answers a one-line index;
//! anything else 404 (or 405 for other methods).

use crate::error::Error;
use crate::exposition::{Exporter, Format};
use std::io::Cursor;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Scrape counters of a [`MetricsServer`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// `/metrics` answered in OpenMetrics.
    pub openmetrics: u64,
    /// `/metrics` answered in the Prometheus text format.
    pub prometheus: u64,
    /// Renders that failed (answered 500).
    pub errors: u64,
    /// Time spent in the last render (scrape policy flush included), ns.
    pub last_render_ns: u64,
    /// Size of the last exposition, bytes.
    pub last_bytes: u64,
}

/// ORDERING: Relaxed everywhere; statistics read by tests and dashboards,
/// publishing nothing else.
#[derive(Debug, Default)]
struct Counters {
    openmetrics: AtomicU64,
    prometheus: AtomicU64,
    errors: AtomicU64,
    last_render_ns: AtomicU64,
    last_bytes: AtomicU64,
}

/// Serves an [`Exporter`] on `/metrics` from a background thread until
/// dropped (or [`shutdown`](Self::shutdown)).
pub struct MetricsServer {
    addr: SocketAddr,
    server: Arc<tiny_http::Server>,
    counters: Arc<Counters>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("addr", &self.addr)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl MetricsServer {
    /// Binds `addr` (port 0 picks a free port, see
    /// [`local_addr`](Self::local_addr)) and starts serving `exporter`.
    ///
    /// # Errors
    /// [`Error::Io`] if the address cannot be bound or the thread not
    /// started, [`Error::Server`] if the HTTP server cannot use the socket.
    pub fn bind(addr: impl ToSocketAddrs, exporter: Exporter) -> Result<MetricsServer, Error> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let server =
            Arc::new(tiny_http::Server::from_listener(listener, None).map_err(Error::Server)?);
        let counters = Arc::new(Counters::default());
        let thread = std::thread::Builder::new()
            .name("hierstat-metrics".to_string())
            .spawn({
                let server = server.clone();
                let counters = counters.clone();
                move || serve(&server, &exporter, &counters)
            })?;
        Ok(MetricsServer {
            addr,
            server,
            counters,
            thread: Some(thread),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's scrape counters.
    pub fn stats(&self) -> ServerStats {
        let c = &self.counters;
        ServerStats {
            openmetrics: c.openmetrics.load(Ordering::Relaxed),
            prometheus: c.prometheus.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            last_render_ns: c.last_render_ns.load(Ordering::Relaxed),
            last_bytes: c.last_bytes.load(Ordering::Relaxed),
        }
    }

    /// Stops serving and waits for the serving thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            // A panic in the serving thread has been reported on stderr by
            // the panic hook already; shutting down proceeds regardless.
            let _ = t.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("static ASCII header")
}

fn serve(server: &tiny_http::Server, exporter: &Exporter, counters: &Counters) {
    let mut buf = Vec::new();
    for request in server.incoming_requests() {
        let path = request.url().split('?').next().unwrap_or("");
        let get = matches!(
            request.method(),
            tiny_http::Method::Get | tiny_http::Method::Head
        );
        // A failed respond means the client went away: nothing to do.
        let _ = match (get, path) {
            (true, "/metrics") => {
                let accept = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Accept"))
                    .map(|h| h.value.as_str());
                let format = Format::from_accept(accept);
                buf.clear();
                let t = Instant::now();
                match exporter.render(format, &mut buf) {
                    Ok(_) => {
                        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        counters.last_render_ns.store(ns, Ordering::Relaxed);
                        counters
                            .last_bytes
                            .store(buf.len() as u64, Ordering::Relaxed);
                        match format {
                            Format::OpenMetrics => &counters.openmetrics,
                            Format::Prometheus => &counters.prometheus,
                        }
                        .fetch_add(1, Ordering::Relaxed);
                        let response = tiny_http::Response::new(
                            tiny_http::StatusCode(200),
                            vec![header("Content-Type", format.content_type())],
                            Cursor::new(&buf[..]),
                            Some(buf.len()),
                            None,
                        );
                        request.respond(response)
                    }
                    Err(e) => {
                        counters.errors.fetch_add(1, Ordering::Relaxed);
                        request.respond(
                            tiny_http::Response::from_string(format!("render failed: {e}\n"))
                                .with_status_code(500),
                        )
                    }
                }
            }
            (true, "/") => request.respond(
                tiny_http::Response::from_string("hierstat exporter: metrics at /metrics\n")
                    .with_header(header("Content-Type", "text/plain; charset=utf-8")),
            ),
            (true, _) => request.respond(tiny_http::Response::empty(404)),
            (false, _) => request.respond(tiny_http::Response::empty(405)),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hierstat::{Config, HierStats, Preset, Schema, Unit};
    use std::io::{Read, Write};

    fn get(addr: SocketAddr, path: &str, accept: Option<&str>) -> (String, String) {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let accept = accept
            .map(|a| format!("Accept: {a}\r\n"))
            .unwrap_or_default();
        write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n{accept}\r\n").unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).unwrap();
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        (head.to_string(), body.to_string())
    }

    #[test]
    fn serves_both_formats_and_404s() {
        let mut b = Schema::builder();
        let n = b.event("requests", Unit::Count);
        let stats = HierStats::new(b.build().unwrap(), Config::preset(Preset::Hierstat)).unwrap();
        let g = stats.create(&stats.root(), "web").unwrap();
        stats.add(&g, n, 5).unwrap();
        let server =
            MetricsServer::bind("127.0.0.1:0", Exporter::builder(stats).build().unwrap()).unwrap();
        let addr = server.local_addr();
        let (head, body) = get(
            addr,
            "/metrics",
            Some("application/openmetrics-text;version=1.0.0"),
        );
        assert!(
            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
            "{head}"
        );
        assert!(head.contains("application/openmetrics-text"), "{head}");
        assert!(
            body.contains("hierstat_requests_total{path=\"/web\"} 5\n"),
            "{body}"
        );
        assert!(body.ends_with("# EOF\n"));
        let (head, body) = get(addr, "/metrics?x=1", None);
        assert!(head.contains("text/plain; version=0.0.4"), "{head}");
        assert!(!body.contains("# EOF"));
        let (head, _) = get(addr, "/nope", None);
        assert!(head.contains(" 404"), "{head}");
        let st = server.stats();
        assert_eq!((st.openmetrics, st.prometheus, st.errors), (1, 1, 0));
        assert!(st.last_bytes > 0);
        server.shutdown();
    }
}
