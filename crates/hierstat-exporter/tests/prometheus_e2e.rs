//! End to end: a real Prometheus server (Debian's `prometheus`) scrapes the
//! `serve_workload` example's service on 127.0.0.1 while writer threads
//! update the tree; through Prometheus's HTTP API, every parent's series
//! must equal the sum of its children's plus its own (`local_`) share.
//! A second test scrapes with a tolerance (`ScrapePolicy::Within`): every
//! sample's `_bound` series must fit its budget (a PromQL query that must
//! return nothing), the "at least" expression an alert would use must
//! evaluate, and once the writers stop, each sample must be within its
//! bound of the exact value.
//!
//! Bounded in time (a 90 s deadline for Prometheus to come up and scrape
//! twice); the Prometheus process is killed and its data directory (a
//! tempdir) removed whatever happens.

mod common;
#[path = "../examples/serve_workload/workload.rs"]
mod workload;

use hierstat::Tolerance;
use hierstat_exporter::{Exporter, Format, MetricsServer, ScrapePolicy};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills and reaps the Prometheus process on every exit path.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A plain HTTP/1.0 GET; returns (status, body).
fn http_get(addr: SocketAddr, target: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_string()))
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `/api/v1/query` at `time` (or now): the result vector.
fn query(prom: SocketAddr, q: &str, time: Option<f64>) -> Option<Vec<Value>> {
    let mut target = format!("/api/v1/query?query={}", urlencode(q));
    if let Some(t) = time {
        target.push_str(&format!("&time={t:.3}"));
    }
    let (status, body) = http_get(prom, &target).ok()?;
    if status != 200 {
        return None;
    }
    let v: Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"].as_array().cloned()
}

fn sample_value(s: &Value) -> f64 {
    s["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

#[test]
fn prometheus_scrapes_the_service_and_parents_sum_their_children() {
    let Some(prometheus) = common::tool("prometheus") else {
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(90);

    // The example's service: 2 writers on a systemd-like tree of 108 groups,
    // its per-node families on so that the identity is checked per node.
    let work = workload::Workload::start(2, 30, 200, 7);
    let exporter = Exporter::builder(work.stats.clone())
        .prefix("memcg_")
        .per_node(true)
        .local(true)
        .bounds(true)
        .policy(ScrapePolicy::Flush)
        .build()
        .unwrap();
    let expected_samples = exporter
        .render(Format::OpenMetrics, &mut Vec::new())
        .unwrap()
        .samples;
    let server = MetricsServer::bind("127.0.0.1:0", exporter).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: hierstat\n    static_configs:\n      - targets: ['{}']\n",
            server.local_addr()
        ),
    )
    .unwrap();
    let log_path = dir.path().join("prometheus.log");
    let prom_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let child = Command::new(&prometheus)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={prom_addr}"))
        .arg("--log.level=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .expect("start prometheus");
    let mut prom = Killed(child);
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();

    // Wait for two successful scrapes: `up` is 1 only when Prometheus
    // parsed the whole exposition.
    let scraped_at = loop {
        if let Ok(Some(status)) = prom.0.try_wait() {
            panic!("prometheus exited ({status}):\n{}", log());
        }
        assert!(
            Instant::now() < deadline,
            "no two successful scrapes within 90 s; server {:?}\nprometheus log:\n{}",
            server.stats(),
            log()
        );
        let ups = query(
            prom_addr,
            r#"count_over_time(up{job="hierstat"}[5m]) >= 2 and up{job="hierstat"} == 1"#,
            None,
        );
        if ups.is_some_and(|v| !v.is_empty()) {
            let t = query(prom_addr, r#"timestamp(up{job="hierstat"})"#, None).unwrap();
            break sample_value(&t[0]);
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let served = server.stats();
    assert!(
        served.openmetrics >= 2,
        "Prometheus negotiated OpenMetrics: {served:?}"
    );

    // Every sample of the last scrape, read back at its timestamp.
    let scraped = query(
        prom_addr,
        r#"scrape_samples_scraped{job="hierstat"}"#,
        Some(scraped_at),
    )
    .unwrap();
    assert_eq!(sample_value(&scraped[0]) as usize, expected_samples);
    let metrics = [
        "anon_pages",
        "file_pages",
        "kernel_pages",
        "sock_pages",
        "pgfault_total",
        "pgactivate_total",
    ];
    let mut checked = 0;
    for m in metrics {
        let q = format!(r#"{{__name__=~"memcg_(local_)?{m}",job="hierstat"}}"#);
        let series = query(prom_addr, &q, Some(scraped_at)).unwrap();
        // (local?, node) -> path -> value
        let mut values: BTreeMap<(bool, String), BTreeMap<String, f64>> = BTreeMap::new();
        for s in &series {
            let labels = &s["metric"];
            let local = labels["__name__"]
                .as_str()
                .unwrap()
                .starts_with("memcg_local_");
            let node = labels["node"].as_str().unwrap_or("").to_string();
            let path = labels["path"].as_str().unwrap().to_string();
            values
                .entry((local, node))
                .or_default()
                .insert(path, sample_value(s));
        }
        let nodes: Vec<String> = values
            .keys()
            .filter(|(l, _)| !l)
            .map(|(_, n)| n.clone())
            .collect();
        assert!(!nodes.is_empty(), "no series for {m}");
        for node in nodes {
            let hier = &values[&(false, node.clone())];
            let local = &values[&(true, node.clone())];
            assert_eq!(hier.len(), work.stats.len(), "{m}: one series per group");
            assert!(hier["/"] > 0.0, "{m}: the workload ran");
            for (parent, &total) in hier {
                let children: f64 = hier
                    .iter()
                    .filter(|(p, _)| {
                        p.as_str() != "/"
                            && match p.rsplit_once('/') {
                                Some(("", _)) => parent == "/",
                                Some((dir, _)) => dir == parent,
                                None => false,
                            }
                    })
                    .map(|(_, v)| v)
                    .sum();
                assert_eq!(
                    total,
                    children + local[parent],
                    "{m}{{node={node:?}}} at {parent}: {total} != Σ children {children} + own {}",
                    local[parent]
                );
                checked += 1;
            }
        }
    }
    // The metadata Prometheus kept from the OpenMetrics headers.
    let (_, meta) = http_get(prom_addr, "/api/v1/metadata?metric=memcg_pgfault").unwrap();
    assert!(meta.contains(r#""type":"counter""#), "{meta}");
    let (_, meta) = http_get(prom_addr, "/api/v1/metadata?metric=memcg_anon_pages").unwrap();
    assert!(
        meta.contains(r#""type":"gauge""#) && meta.contains(r#""unit":"pages""#),
        "{meta}"
    );

    eprintln!(
        "prometheus e2e: {} groups, {expected_samples} samples per scrape, {} OpenMetrics scrapes, \
         {checked} parent = Σ children + own checks passed, {} updates",
        work.stats.len(),
        served.openmetrics,
        work.updates()
    );
    drop(prom);
    server.shutdown();
    work.stop();
    let data = dir.path().to_path_buf();
    dir.close().unwrap();
    assert!(!data.exists());
}

/// A Prometheus scraping `target` every second, in `dir`.
fn start_prometheus(
    prometheus: &std::path::Path,
    target: SocketAddr,
    dir: &std::path::Path,
) -> (Killed, SocketAddr, std::path::PathBuf) {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: hierstat\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let log_path = dir.join("prometheus.log");
    let prom_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let child = Command::new(prometheus)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={prom_addr}"))
        .arg("--log.level=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .expect("start prometheus");
    (Killed(child), prom_addr, log_path)
}

/// Waits (until `deadline`) for a successful scrape that started after
/// `after` (Unix seconds) and whose predecessor succeeded too; returns its
/// timestamp.
fn scrape_after(
    prom: &mut Killed,
    addr: SocketAddr,
    log: &std::path::Path,
    after: f64,
    deadline: Instant,
) -> f64 {
    loop {
        if let Ok(Some(status)) = prom.0.try_wait() {
            panic!(
                "prometheus exited ({status}):\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < deadline,
            "no successful scrape within the deadline\nprometheus log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        let ups = query(
            addr,
            r#"count_over_time(up{job="hierstat"}[5m]) >= 2 and up{job="hierstat"} == 1"#,
            None,
        );
        if ups.is_some_and(|v| !v.is_empty()) {
            let t = query(addr, r#"timestamp(up{job="hierstat"})"#, None).unwrap();
            let t = sample_value(&t[0]);
            if t > after {
                return t;
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn prometheus_scrapes_within_a_tolerance_and_each_sample_has_its_bound() {
    let Some(prometheus) = common::tool("prometheus") else {
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let work = workload::Workload::start(2, 30, 200, 11);
    // 1% of each sample, or 1 MiB (256 pages; counts: 256).
    let floor = 256;
    let mut builder = Exporter::builder(work.stats.clone())
        .prefix("memcg_")
        .policy(ScrapePolicy::Within);
    for info in work.stats.schema().items() {
        let unit = if info.unit == hierstat::Unit::Bytes {
            4096
        } else {
            1
        };
        builder = builder.item_tolerance(
            &info.name,
            Tolerance::Either {
                relative: 0.01,
                absolute: floor * unit,
            },
        );
    }
    let exporter = builder.build().unwrap();
    let stats = work.stats.clone();
    let server = MetricsServer::bind("127.0.0.1:0", exporter).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (mut prom, prom_addr, log) = start_prometheus(&prometheus, server.local_addr(), dir.path());
    let first = scrape_after(&mut prom, prom_addr, &log, 0.0, deadline);

    // Every value series has its bound, and every bound fits its budget.
    let families = [
        ("anon_pages", "anon_bound_pages", 1.0),
        ("file_pages", "file_bound_pages", 1.0),
        ("pgfault_total", "pgfault_bound", 1.0),
    ];
    for (value, bound, unit) in families {
        let v = query(prom_addr, &format!("memcg_{value}"), Some(first)).unwrap();
        let b = query(prom_addr, &format!("memcg_{bound}"), Some(first)).unwrap();
        assert_eq!(v.len(), stats.len(), "{value}: one series per group");
        assert_eq!(b.len(), v.len(), "{bound}: one per {value} series");
        let over = query(
            prom_addr,
            &format!(
                "memcg_{bound} > on(path) clamp_min(0.01 * memcg_{value}, {})",
                floor as f64 * unit
            ),
            Some(first),
        )
        .unwrap();
        assert!(over.is_empty(), "{bound} over budget: {over:?}");
        // What an alert says: at least this much.
        let at_least = query(
            prom_addr,
            &format!("memcg_{value} - on(path) memcg_{bound}"),
            Some(first),
        )
        .unwrap();
        assert_eq!(at_least.len(), v.len(), "{value} - {bound}");
    }

    // With the writers stopped, a later scrape is within its bounds of the
    // exact values.
    let updates = work.stop();
    let stopped = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let last = scrape_after(&mut prom, prom_addr, &log, stopped + 0.5, deadline);
    stats.flush_forced(&stats.root()).unwrap();
    let ms = models::memcg::MemcgSchema::new(workload::NODES).unwrap();
    let anon = match ms.slot(models::memcg::Stat::Anon) {
        models::memcg::Slot::Node(i) => i,
        models::memcg::Slot::Plain(_) => unreachable!("anon is per node"),
    };
    let values = query(prom_addr, "memcg_anon_pages", Some(last)).unwrap();
    let bounds: BTreeMap<String, f64> = query(prom_addr, "memcg_anon_bound_pages", Some(last))
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["metric"]["path"].as_str().unwrap().to_string(),
                sample_value(s),
            )
        })
        .collect();
    let mut checked = 0;
    for s in &values {
        let path = s["metric"]["path"].as_str().unwrap();
        let g = stats.lookup(path).unwrap();
        let exact = stats.read_node(&g, anon, None).unwrap() as f64;
        let (v, b) = (sample_value(s), bounds[path]);
        assert!(
            (v - exact).abs() <= b,
            "{path}: {v} vs exact {exact}, bound {b}"
        );
        checked += 1;
    }
    assert_eq!(checked, stats.len());
    eprintln!(
        "prometheus e2e within 1% or {floor} pages: {} groups, {updates} updates, \
         budgets held at the first scrape, {checked} samples within their bounds after the writers stopped",
        stats.len()
    );
    drop(prom);
    server.shutdown();
    dir.close().unwrap();
}
