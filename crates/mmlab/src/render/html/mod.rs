//! The HTML report: one self-contained file (inline CSS and hand-written
//! inline SVG; no script, no network, no external asset) that reads on a
//! phone and on a desktop (fluid grid, `viewBox` SVGs, scrollable tables).
//!
//! Per report: the scenario's facts, the comparison table across policies
//! (as in the text output; or the kind's own tables instead,
//! [`tables_html`]) and the plots of [`plots`], then the kind's own
//! figures ([`plots::figure_plot`]); plots whose data is absent are left
//! out. The kind's tables and figures come from the scenario stored with
//! the report ([`crate::pipeline::stored_scenario`]). Every plot is an
//! `<svg class="plot" data-plot="KIND">`. Output is deterministic: same
//! input, same bytes.

pub mod plots;
pub mod sweep;

use crate::analysis::compare::{compare_runs, ComparedRun, Comparison};
use crate::analysis::stats::Significance;
use crate::analysis::table::{robot_numbers, ComparisonTable};
use lab::report::{Claim, Mode, RunReport, Table};
use runstore::HostFacts;
use runstore::{format_utc, StoredRun};
use std::fmt::Write as _;
use svgplot::esc;

/// The page's stylesheet: light and dark schemes, fluid plot grid.
const CSS: &str = r#"
:root{--bg:#fff;--fg:#1d2125;--muted:#5f6b76;--grid:#e3e7eb;--axis:#77818a;--card:#f6f8fa;--border:#d8dee4;
--good:#1a7f37;--bad:#c62828;--s0:#0072b2;--s1:#d55e00;--s2:#009e73;--s3:#cc79a7;--s4:#e69f00;--s5:#56b4e9;--s6:#7f5f00;--s7:#000000;
--s8:#7b3294;--s9:#a6611a;--s10:#008080;--s11:#b2182b}
@media (prefers-color-scheme:dark){:root{--bg:#0f1216;--fg:#e6e9ec;--muted:#9aa5b1;--grid:#2a3038;--axis:#7d8894;--card:#171b21;--border:#2c333b;
--good:#4ac26b;--bad:#ff6b6b;--s7:#e6e9ec;--s8:#c2a5cf;--s9:#dfc27d;--s10:#80cdc1;--s11:#f4a582}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
header,main{max-width:1240px;margin:0 auto;padding:0 16px}
header{padding-top:18px}
h1{font-size:1.5rem;margin:0 0 4px}
h2{font-size:1.25rem;margin:28px 0 4px;padding-top:8px;border-top:1px solid var(--border)}
h3{font-size:1.02rem;margin:18px 0 8px}
.meta{color:var(--muted);margin:0 0 8px}
nav{display:flex;flex-wrap:wrap;gap:6px 14px;margin:8px 0 4px}
nav a{color:var(--s0);text-decoration:none}
.tablewrap{overflow-x:auto;-webkit-overflow-scrolling:touch;border:1px solid var(--border);border-radius:6px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:.88rem;width:100%}
th,td{padding:4px 10px;text-align:right;white-space:nowrap;border-bottom:1px solid var(--grid)}
th{background:var(--card);position:sticky;top:0}
td.m,th.m{text-align:left;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.84rem;position:sticky;left:0;background:var(--bg);z-index:1}
th.m{background:var(--card);z-index:2}
@media (max-width:600px){body{font-size:14px}td.m,th.m{font-size:.74rem;white-space:normal;min-width:8em;max-width:11em}td.m .sd{display:block;margin:0}th,td{padding:4px 6px}}
.sd{color:var(--muted);font-size:.8rem;margin-left:4px}
.chg{display:block;font-size:.8rem}
.chg.good{color:var(--good);font-weight:600}.chg.bad{color:var(--bad);font-weight:600}
.chg.noise,.chg.untested{color:var(--muted)}
.v-ok{color:var(--good);font-weight:600}.v-miss{color:var(--bad);font-weight:600}.v-info{color:var(--muted)}
table.claims td{white-space:normal}
.legend-note{color:var(--muted);font-size:.82rem;margin:6px 0 0}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,380px),1fr));gap:14px}
figure{margin:0;padding:10px 10px 6px;background:var(--card);border:1px solid var(--border);border-radius:8px;min-width:0}
figcaption{font-weight:600;font-size:.9rem;margin-bottom:4px}
svg.plot{display:block;width:100%;height:auto}
.legend{display:flex;flex-wrap:wrap;gap:2px 12px;margin:4px 0 0;padding:0;list-style:none;font-size:.82rem}
.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.grid{stroke:var(--grid);stroke-width:1}
.cellbg{fill:var(--grid)}
.axis{stroke:var(--axis);fill:none;stroke-width:1.2}
.tick{fill:var(--muted);font-size:12.5px}
.label{fill:var(--fg);font-size:13px}
.ptlabel{fill:var(--fg);font-size:13px;font-weight:600}
.line{fill:none;stroke-width:2.2;stroke-linejoin:round}
.err{stroke-width:1.3;opacity:.7}
.dot{stroke:var(--bg);stroke-width:1}
.dot.big{stroke-width:2}
pre{background:var(--card);border:1px solid var(--border);border-radius:6px;padding:8px;overflow-x:auto;font-size:.8rem}
details{margin:10px 0}
footer{max-width:1240px;margin:24px auto;padding:0 16px;color:var(--muted);font-size:.8rem}
"#;

/// Per-palette-slot colour rules (`.s0` … `.s7` for lines, bars, dots, swatches).
fn palette_css() -> String {
    let mut s = String::new();
    for i in 0..svgplot::PALETTE {
        let _ = write!(
            s,
            ".line.s{i},.err.s{i}{{stroke:var(--s{i})}}.bar.s{i},.dot.s{i},i.s{i}{{fill:var(--s{i});background:var(--s{i})}}"
        );
    }
    s
}

/// The HTML report of `reports` (one section each), titled "mmlab report".
pub fn render_html(reports: &[RunReport]) -> String {
    render_html_with("mmlab report", reports, &[])
}

/// The HTML report of a run or a suite: the host it ran on, then one
/// section per report, each with its claims' verdicts (`[ok]`,
/// `[MISS]`, `[info]`) above its tables and plots; a summary of the
/// verdicts heads the page.
pub fn render_html_checked(
    title: &str,
    reports: &[RunReport],
    claims: &[Claim],
    host: Option<&HostFacts>,
) -> String {
    let sections: Vec<Section<'_>> = plain_sections(reports)
        .into_iter()
        .map(|mut s| {
            s.claims = claims
                .iter()
                .filter(|c| c.scenario == s.report.scenario)
                .collect();
            s
        })
        .collect();
    let mut intro = String::new();
    if let Some(h) = host {
        let _ = write!(
            intro,
            r#"<p class="meta" data-host>host: {} CPUs, {} · kernel {} · mmlab {}{}</p>"#,
            h.cpus,
            esc(&h.cpu_model),
            esc(&h.kernel),
            esc(&h.mmlab_version),
            h.commit_label()
                .map(|c| format!(" ({})", esc(&c)))
                .unwrap_or_default()
        );
    }
    intro.push_str(&verdicts_line(claims.iter()));
    page_with(title, &sections, &[], &intro)
}

/// The page's summary of the claims' verdicts (`data-verdicts`), empty
/// when no claim is counted.
fn verdicts_line<'a>(claims: impl Iterator<Item = &'a Claim>) -> String {
    let counted: Vec<&Claim> = claims.filter(|c| !c.info).collect();
    if counted.is_empty() {
        return String::new();
    }
    let ok = counted.iter().filter(|c| c.pass).count();
    format!(
        r#"<p class="meta" data-verdicts>claims: <b class="v-ok">{ok} [ok]</b> · <b class="v-miss">{} [MISS]</b> of {} ([info] lines are references)</p>"#,
        counted.len() - ok,
        counted.len()
    )
}

/// One section per report, headed by its scenario, with no run facts.
fn plain_sections(reports: &[RunReport]) -> Vec<Section<'_>> {
    reports
        .iter()
        .map(|r| Section {
            heading: r.scenario.clone(),
            facts: None,
            report: r,
            claims: Vec::new(),
        })
        .collect()
}

/// The verdicts of `claims` as a table.
fn claims_html(claims: &[&Claim]) -> String {
    let mut s = String::from(
        r#"<div class="tablewrap"><table class="claims"><tr><th class="m">verdict</th><th class="m">claim</th><th>measured</th><th>published</th></tr>"#,
    );
    for c in claims {
        let mark = c.mark();
        let class = if c.info {
            "v-info"
        } else if c.pass {
            "v-ok"
        } else {
            "v-miss"
        };
        let _ = write!(
            s,
            r#"<tr><td class="m {class}">{mark}</td><td class="m">{}</td><td>{}</td><td>{}</td></tr>"#,
            esc(&c.claim),
            esc(&c.measured),
            esc(&c.published)
        );
        if !c.why.is_empty() {
            let _ = write!(
                s,
                r#"<tr><td class="m"></td><td colspan="3" class="m">why: {}</td></tr>"#,
                esc(&c.why)
            );
        }
    }
    s.push_str("</table></div>");
    s
}

/// The HTML report with a title, one section per report and then one
/// section per comparison of stored runs (`mmlab compare`'s tables).
pub fn render_html_with(title: &str, reports: &[RunReport], comparisons: &[Comparison]) -> String {
    let sections = plain_sections(reports);
    page(title, &sections, comparisons)
}

/// The HTML report of stored runs (`mmlab report RUN… --html`): one
/// section per run, headed by its label and scenario and showing its
/// start time, host and build, with its claims' verdicts (`claims[i]` are
/// run `i`'s, computed from its stored scenario text); with two runs or
/// more, the `compare` tables of the runs follow when they share a policy
/// (see [`crate::analysis::compare`]).
pub fn render_stored_html(title: &str, runs: &[StoredRun], claims: &[Vec<Claim>]) -> String {
    let sections: Vec<Section<'_>> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let h = &r.summary.host;
            Section {
                heading: format!("{} · {}", r.summary.label(), r.report.scenario),
                facts: Some(format!(
                    "started {} UTC · {} CPUs, {} · kernel {} · mmlab {}{}",
                    format_utc(r.summary.started),
                    h.cpus,
                    h.cpu_model,
                    h.kernel,
                    h.mmlab_version,
                    h.commit_label()
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default()
                )),
                report: &r.report,
                claims: claims
                    .get(i)
                    .map(|c| c.iter().collect())
                    .unwrap_or_default(),
            }
        })
        .collect();
    let intro = verdicts_line(claims.iter().flatten());
    let comparison = if runs.len() >= 2 {
        compare_runs(
            runs.iter()
                .map(|r| ComparedRun {
                    label: r.summary.label(),
                    summary: Some(r.summary.clone()),
                    report: r.report.clone(),
                })
                .collect(),
        )
        .ok()
    } else {
        None
    };
    page_with(title, &sections, comparison.as_slice(), &intro)
}

/// One report section: heading, optional run facts, the report and the
/// claims' verdicts on it.
struct Section<'a> {
    heading: String,
    facts: Option<String>,
    report: &'a RunReport,
    claims: Vec<&'a Claim>,
}

fn page(title: &str, sections: &[Section<'_>], comparisons: &[Comparison]) -> String {
    page_with(title, sections, comparisons, "")
}

fn page_with(
    title: &str,
    sections: &[Section<'_>],
    comparisons: &[Comparison],
    intro: &str,
) -> String {
    let mut body = String::new();
    let mut nav = String::new();
    for (i, sec) in sections.iter().enumerate() {
        let id = format!("r{i}-{}", slug(&sec.report.scenario));
        let _ = write!(nav, r##"<a href="#{id}">{}</a>"##, esc(&sec.heading));
        body.push_str(&report_section(&id, sec, &sec.claims));
    }
    for (i, c) in comparisons.iter().enumerate() {
        let id = format!("cmp{i}");
        let _ = write!(nav, r##"<a href="#{id}">compare {}</a>"##, i + 1);
        body.push_str(&comparison_section(&id, c, &[]));
    }
    page_body(title, intro, &nav, &body, sections.len(), comparisons.len())
}

/// The page around a body of sections: head, stylesheet, title, intro,
/// navigation, footer.
fn page_body(
    title: &str,
    intro: &str,
    nav: &str,
    body: &str,
    sections: usize,
    comparisons: usize,
) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>{t}</title><style>{CSS}{pal}</style></head>
<body><header><h1>{t}</h1><p class="meta">{n} report{s}{c}. Tables: mean over runs, ± standard deviation, change against the first column; bold green/red changes are significant (Welch's t-test, p &lt; 0.05).</p>{intro}<nav>{nav}</nav></header>
<main>{body}</main><footer>Generated by mmlab. Self-contained: no scripts, no external resources.</footer></body></html>
"#,
        t = esc(title),
        pal = palette_css(),
        n = sections,
        s = if sections == 1 { "" } else { "s" },
        c = if comparisons == 0 {
            String::new()
        } else {
            format!(
                ", {} comparison{}",
                comparisons,
                if comparisons == 1 { "" } else { "s" }
            )
        },
    );
    out
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

fn report_section(id: &str, sec: &Section<'_>, claims: &[&Claim]) -> String {
    let r = sec.report;
    let mode = match r.mode {
        Mode::Sim => "simulated",
        Mode::Real => "real threads",
        Mode::Kernel => "host kernel",
    };
    let mut s = String::new();
    let _ = write!(s, r#"<section id="{id}"><h2>{}</h2>"#, esc(&sec.heading));
    if let Some(f) = &sec.facts {
        let _ = write!(s, r#"<p class="meta">{}</p>"#, esc(f));
    }
    let _ = write!(
        s,
        r#"<p class="meta">{mode} · {} run{} per policy · seed {} · policies: {}</p>"#,
        r.runs,
        if r.runs == 1 { "" } else { "s" },
        r.seed,
        esc(&r.policy_order.join(", "))
    );
    if !r.facts.is_empty() {
        let facts: Vec<String> = r.facts.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = write!(
            s,
            r#"<p class="meta">run facts: {}</p>"#,
            esc(&facts.join(" · "))
        );
    }
    if !claims.is_empty() {
        s.push_str("<h3>Claims</h3>");
        s.push_str(&claims_html(claims));
    }
    let table = ComparisonTable::for_report(r);
    let kind = crate::pipeline::stored_scenario(r, &r.scenario).ok();
    let tables = kind.as_ref().map(|sc| sc.tables(r)).unwrap_or_default();
    if !tables.is_empty() {
        s.push_str(&tables_html(&tables));
    } else if !table.rows.is_empty() {
        s.push_str("<h3>Comparison across policies</h3>");
        s.push_str(&table_html(&table));
    }
    let mut plots = plots::plots(r);
    let figures = kind.as_ref().map(|sc| sc.figures(r)).unwrap_or_default();
    plots.extend(figures.iter().filter_map(plots::figure_plot));
    if !plots.is_empty() {
        s.push_str(r#"<h3>Plots</h3><div class="plots">"#);
        for p in plots {
            let _ = write!(
                s,
                r#"<figure data-kind="{}"><figcaption>{}</figcaption>{}<ul class="legend">"#,
                p.kind,
                esc(&p.title),
                p.svg
            );
            for (name, c) in &p.legend {
                let _ = write!(
                    s,
                    r#"<li><i class="s{}"></i>{}</li>"#,
                    c % svgplot::PALETTE,
                    esc(name)
                );
            }
            s.push_str("</ul></figure>");
        }
        s.push_str("</div>");
    }
    if !r.scenario_toml.trim().is_empty() {
        let _ = write!(
            s,
            "<details><summary>Scenario file</summary><pre>{}</pre></details>",
            esc(&r.scenario_toml)
        );
    }
    s.push_str("</section>");
    s
}

fn comparison_section(id: &str, c: &Comparison, claims: &[Vec<Claim>]) -> String {
    let mut s = String::new();
    let labels: Vec<String> = c.runs.iter().map(|r| r.label.clone()).collect();
    let _ = write!(
        s,
        r#"<section id="{id}"><h2>Comparison of runs {}</h2>"#,
        esc(&labels.join(", "))
    );
    for t in &c.tables {
        let _ = write!(s, "<h3>policy {}</h3>", esc(&t.policy));
        s.push_str(&table_html(&t.table));
    }
    for n in &c.notes {
        let _ = write!(s, r#"<p class="legend-note">note: {}</p>"#, esc(n));
    }
    for (run, cs) in c.runs.iter().zip(claims).filter(|(_, cs)| !cs.is_empty()) {
        let _ = write!(s, "<h3>Claims on run {}</h3>", esc(&run.label));
        s.push_str(&claims_html(&cs.iter().collect::<Vec<_>>()));
    }
    s.push_str("</section>");
    s
}

/// The HTML of `mmlab compare --html`: the comparison of stored runs,
/// then the claims' verdicts on each run (`claims[i]` are run `i`'s).
pub fn render_compare_html(title: &str, c: &Comparison, claims: &[Vec<Claim>]) -> String {
    let intro = verdicts_line(claims.iter().flatten());
    let body = comparison_section("cmp0", c, claims);
    page_body(
        title,
        &intro,
        r##"<a href="#cmp0">compare 1</a>"##,
        &body,
        0,
        1,
    )
}

/// A kind's own tables ([`lab::Spec::tables`]) as HTML: each one's title
/// as a heading, then its cells.
pub fn tables_html(tables: &[Table]) -> String {
    let mut s = String::new();
    for t in tables {
        let _ = write!(s, "<h3>{}</h3><table><thead><tr>", esc(&t.title));
        for h in &t.header {
            let _ = write!(s, "<th>{}</th>", esc(h));
        }
        s.push_str("</tr></thead><tbody>");
        for row in &t.rows {
            s.push_str("<tr>");
            for c in row {
                let _ = write!(s, "<td>{}</td>", esc(c));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
    }
    s
}

/// A comparison table as HTML: metric, then per column the mean with its
/// `±%` and (after the first column) the change, coloured when it is
/// significant (green: better, red: worse given the metric's direction).
pub fn table_html(t: &ComparisonTable) -> String {
    let mut s =
        String::from(r#"<div class="tablewrap"><table><thead><tr><th class="m">metric</th>"#);
    for c in &t.columns {
        let _ = write!(s, "<th>{}</th>", esc(c));
    }
    s.push_str("</tr></thead><tbody>");
    let (mut noise, mut untested) = (false, false);
    for row in &t.rows {
        let unit = if row.unit.is_empty() {
            String::new()
        } else {
            format!(" <span class=\"sd\">{}</span>", esc(&row.unit))
        };
        // Break opportunities after `_` and `.` so long names wrap on phones.
        let name = esc(&row.metric)
            .replace('_', "_<wbr>")
            .replace('.', ".<wbr>");
        let _ = write!(s, r#"<tr><td class="m">{name}{unit}</td>"#);
        let means: Vec<Option<f64>> = row.cells.iter().map(|c| c.mean).collect();
        let shown = robot_numbers(&means);
        for (cell, text) in row.cells.iter().zip(&shown) {
            s.push_str("<td>");
            if cell.mean.is_some() {
                let _ = write!(s, "{}", esc(text));
                if cell.pct_stddev.round() >= 1.0 {
                    let _ = write!(s, r#"<span class="sd">±{:.0}%</span>"#, cell.pct_stddev);
                }
            } else {
                s.push('–');
            }
            if let Some(ch) = cell.change {
                let text = if ch.absolute {
                    format!("{:+.1}", ch.value)
                } else {
                    format!("{:+.1}%", ch.value)
                };
                let (class, mark) = match ch.significance {
                    Significance::Significant(_) if ch.value == 0.0 => ("noise", ""),
                    Significance::Significant(_) => {
                        if ch.is_improvement(row.higher_is_better) {
                            ("good", "")
                        } else {
                            ("bad", "")
                        }
                    }
                    Significance::WithinNoise(_) => {
                        noise = true;
                        ("noise", "~")
                    }
                    Significance::Untested => {
                        untested = true;
                        ("untested", "?")
                    }
                };
                let _ = write!(s, r#"<span class="chg {class}">{mark}{text}</span>"#);
            }
            s.push_str("</td>");
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
    if noise || untested {
        let mut parts = Vec::new();
        if noise {
            parts.push("~ within noise (Welch's t-test, p ≥ 0.05)");
        }
        if untested {
            parts.push("? not tested (fewer than 2 runs)");
        }
        let _ = write!(s, r#"<p class="legend-note">{}</p>"#, parts.join("; "));
    }
    s
}
