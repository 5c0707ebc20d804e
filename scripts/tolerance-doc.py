#!/usr/bin/env python3
"""Writes docs/tolerance.md and one plot per scenario (docs/tolerance-*.svg)
from stored `tolerance-readers`, `tolerance-slices` and `tolerance-refault`
runs (issue 37: reads with an error budget).

    scripts/tolerance-doc.py [--db mmlab.db] [--mmlab target/release/mmlab] RUN...

Each run is read with `mmlab show RUN --json -`; every figure on the page
comes from them (each metric's mean over a run's runs; a percentile's mean
over the runs' percentiles), so the page is regenerated, never edited.
"""
import argparse
import datetime
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORCED = "read=forced"
MODES = {
    "read=forced": "forced flush of the group's subtree",
    "read=0": "read_within, exact (0)",
    "read=0.1%": "read_within, 0.1%",
    "read=1%": "read_within, 1%",
    "read=10%": "read_within, 10%",
    "read=clean": "no flush",
}


def metric(p, name, key="mean"):
    m = p["metrics"].get(name)
    if m is None:
        return None
    return m.get(key)


def us(ns):
    return "—" if ns is None else f"{ns / 1000:,.1f}"


def num(v, fmt="{:,.0f}"):
    return "—" if v is None else fmt.format(v)


def plot(rows, path, what="read"):
    """p99 read (or refault) latency (x, log) against the mean read error (y, log1p)."""
    w, h, ml, mr, mt, mb = 720, 420, 70, 150, 20, 50
    pts = [(r["name"], r["p99"], r["err"]) for r in rows if r["p99"] and r["err"] is not None]
    xs = [math.log10(max(p[1], 1)) for p in pts]
    ys = [math.log10(1 + p[2]) for p in pts]
    x0, x1 = math.floor(min(xs)), math.ceil(max(xs) + 1e-9)
    y0, y1 = 0.0, max(1.0, math.ceil(max(ys) + 1e-9))
    sx = lambda v: ml + (v - x0) / (x1 - x0) * (w - ml - mr)
    sy = lambda v: h - mb - (v - y0) / (y1 - y0) * (h - mt - mb)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<line x1="{ml}" y1="{h - mb}" x2="{w - mr}" y2="{h - mb}" stroke="black"/>',
        f'<line x1="{ml}" y1="{mt}" x2="{ml}" y2="{h - mb}" stroke="black"/>',
    ]
    for e in range(x0, x1 + 1):
        x = sx(e)
        out.append(f'<line x1="{x:.1f}" y1="{h - mb}" x2="{x:.1f}" y2="{h - mb + 5}" stroke="black"/>')
        out.append(f'<text x="{x:.1f}" y="{h - mb + 18}" text-anchor="middle">{10 ** e / 1000:g} µs</text>')
    for e in range(0, int(y1) + 1):
        y = sy(e)
        out.append(f'<line x1="{ml - 5}" y1="{y:.1f}" x2="{ml}" y2="{y:.1f}" stroke="black"/>')
        out.append(f'<text x="{ml - 8}" y="{y + 4:.1f}" text-anchor="end">{10 ** e - 1:g}</text>')
    out.append(f'<text x="{(ml + w - mr) / 2}" y="{h - 10}" text-anchor="middle">p99 {what} latency (log)</text>')
    out.append(
        f'<text x="15" y="{(mt + h - mb) / 2}" text-anchor="middle" '
        f'transform="rotate(-90 15 {(mt + h - mb) / 2})">mean read error, pages (log 1+x)</text>'
    )
    for (name, _, _), xv, yv in zip(pts, xs, ys):
        colour = "#1f77b4" if name.startswith("read=") else "#d62728"
        out.append(f'<circle cx="{sx(xv):.1f}" cy="{sy(yv):.1f}" r="4" fill="{colour}"/>')
        out.append(f'<text x="{sx(xv) + 7:.1f}" y="{sy(yv) - 5:.1f}">{name}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


SCENARIOS = {
    "tolerance-readers": "20,000 readers of every group (stat-readers' mix: 5,000 of the 5,010 groups are leaves)",
    "tolerance-slices": "2,000 readers of the ten slices (500 leaves each)",
    "tolerance-refault": "refault-storm's refaults, each a read of the eviction lruvec's sizes "
    "(workload.service, a leaf), the read= policies on hierstat's knobs; latencies are whole "
    "refaults (`workingset_refault`), *flush* the refault's flush (wait and duration); *p99 bound* "
    "is — where no read had one (the leaf's count above the threshold: no bound certified); "
    "*decisions off exact*: activations that differ from the exact list sizes'",
}
# The refault kind: a refault is the read; the presets read through their hot path.
REFAULT = "tolerance-refault"


def section(a, run):
    text = subprocess.run(
        [a.mmlab, "show", run, "--json", "-", "--db", a.db],
        check=True, capture_output=True, text=True,
    ).stdout
    d = json.loads(text)
    r = d.get("report", d)
    sc = r["scenario"]
    if sc not in SCENARIOS:
        sys.exit(f"run {run} is of {sc}, not of {', '.join(SCENARIOS)}")
    pol = r["policies"]
    refault = sc == REFAULT
    lat = "refault_latency_ns" if refault else "read_latency_ns"
    forced = {
        m: metric(pol[FORCED], m, "p99") if FORCED in pol else None
        for m in (lat, "read_flush_ns")
    }
    rows = []
    for name in r["policy_order"]:
        p = pol[name]
        reads = metric(p, "reads") or 1
        preset = "the preset's hot-path flush" if refault else "the preset's threshold-guarded read"
        rows.append({
            "name": name,
            "mode": MODES.get(name, preset),
            "p50": metric(p, lat, "p50"),
            "p99": metric(p, lat, "p99"),
            "p999": metric(p, lat, "p999"),
            "mismatch": metric(p, "decision_mismatch_rate"),
            "f99": metric(p, "read_flush_ns", "p99"),
            "fmean": metric(p, "read_flush_ns"),
            "flushed": (metric(p, "reads_flushed") or 0) / reads * 1000,
            "partial": metric(p, "partial_flushes"),
            "counters": metric(p, "read_counters_aggregated"),
            "err": metric(p, "read_error_pages"),
            "err99": metric(p, "read_error_pages", "p99"),
            # No read with a bound (the refault kind says how many had one).
            "bound99": None if metric(p, "reads_bounded") == 0 else metric(p, "read_bound_pages", "p99"),
            "stale": metric(p, "stale_reads"),
            "unmet": metric(p, "unmet_reads"),
        })
    svg = f"{sc}.svg"
    plot(rows, Path(a.out) / svg, "refault" if refault else "read")
    host = d.get("host", {})
    started = d.get("started_unix_s")
    when = (
        datetime.datetime.fromtimestamp(started, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        if started else "?"
    )
    commit = (host.get("git_commit") or "?")[:12] + ("-dirty" if host.get("git_dirty") else "")
    ratio = lambda v, f: f"{v / f:.3f}" if f and v is not None else "—"
    mm = refault
    lines = [
        f"## {sc}",
        "",
        f"{SCENARIOS[sc]}. Run #{d.get('id', run)} ({r['mode']} mode, {r['runs']} run(s) per policy, "
        f"seed {r['seed']}), {when}, commit {commit}, mmlab {host.get('mmlab_version', '?')}; "
        f"host: {host.get('cpus', '?')} CPUs, {host.get('cpu_model', '?')}.",
        "",
        "| policy | read | p50 µs | p99 µs | p99.9 µs | p99 / forced | flush p99 µs | flush p99 / forced | flush mean / forced | flushes per 1000 reads | partial | counters per read | mean error (pages) | p99 error | p99 bound | out of bound | over budget |"
        + (" decisions off exact |" if mm else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if mm else ""),
    ]
    fmean_forced = metric(pol[FORCED], "read_flush_ns") if FORCED in pol else None
    for x in rows:
        lines.append(
            f"| {x['name']} | {x['mode']} | {us(x['p50'])} | {us(x['p99'])} | {us(x['p999'])} "
            f"| {ratio(x['p99'], forced[lat])} | {us(x['f99'])} "
            f"| {ratio(x['f99'], forced['read_flush_ns'])} | {ratio(x['fmean'], fmean_forced)} "
            f"| {x['flushed']:,.1f} | {num(x['partial'])} | {num(x['counters'], '{:,.1f}')} "
            f"| {num(x['err'], '{:,.2f}')} | {num(x['err99'])} | {num(x['bound99'])} "
            f"| {num(x['stale'])} | {num(x['unmet'])} |"
            + (f" {num(x['mismatch'] * 100 if x['mismatch'] is not None else None, '{:.3f}%')} |" if mm else "")
        )
    what = "refault" if refault else "read"
    lines += ["", f"![{sc}: p99 {what} latency against the mean read error]({svg})", ""]
    claims = [c for c in r.get("claims", []) if "tolerance" in c.get("claim", "") or c.get("claim", "").startswith("read=")]
    if claims:
        lines += ["| | claim | measured | target |", "|---|---|---|---|"]
        for c in claims:
            mark = "info" if c.get("info") else ("ok" if c.get("pass") else "MISS")
            lines.append(f"| {mark} | {c['claim']} | {c['measured']} | {c['published']} |")
        lines.append("")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default="mmlab.db")
    ap.add_argument("--mmlab", default=str(ROOT / "target/release/mmlab"))
    ap.add_argument("--out", default=str(ROOT / "docs"))
    ap.add_argument("runs", nargs="+", help="stored runs of tolerance-readers / -slices / -refault")
    a = ap.parse_args()
    lines = [
        "# Reads with an error budget: the trade-off",
        "",
        "Generated by `scripts/tolerance-doc.py` from stored runs (below, each with its run); "
        "do not edit: run the scenarios and the script again (see [How to regenerate](#how-to-regenerate)).",
        "",
        "Issue 37: a reader states how far from the exact value it accepts each "
        "`memory.stat` item to be, and hierstat's `read_within` flushes only the "
        "subtrees whose pending error could break that budget. "
        "`scenarios/tolerance-readers.toml` runs stat-readers' tree, writers and readers "
        "(5,010 groups, 384 CPUs, readers every 100 ms, leaves of 256 MiB) with each "
        "`read=` policy's readers reading one way (hierstat's knobs otherwise); the era presets "
        "read as their kernels do. `scenarios/tolerance-slices.toml` reads only the slices. "
        "`scenarios/tolerance-refault.toml` is refault-storm (source 003's storm, 96 CPUs, 120 "
        "busy services) with each `read=` policy's refaults reading the eviction lruvec's sizes "
        "one way: the lists the workingset size sums (`models::workingset::workingset_lists`), "
        "each within its budget (`MemcgTree::lruvec_within`), a forced flush of the eviction "
        "group every refault, or no flush; the presets flush as their hot paths do.",
        "",
        "Columns: latencies are the simulator's priced read: its flush (*flush*: the read's cost "
        "beyond the syscalls and the formatting of the file, which every read pays, 24 µs here), "
        "then those. *error* is, per read, the largest distance of an item from the exact value "
        "(for a tolerance or clean read at its engine call, for the others the smaller of those at "
        "its flush and at its return); *bound* the largest bound the engine reported (reads with "
        "an item without one left out); *out of bound* counts reads with an item further from the "
        "exact value than its bound, *over budget* tolerance reads whose bound missed the budget. "
        "*partial*: tolerance reads that flushed part of the subtree.",
        "",
        "How to read them: a leaf has no subtree to leave, so a tolerance read of a leaf "
        "flushes it whole or not at all; where more than 1% of the reads find their group's bound "
        "over budget, the p99 read is a whole flush at any tolerance, and the tolerance shows in "
        "the mean and the p99.9 (the reads of large subtrees) instead. The target of issue 37 "
        "(at 1%, a p99 read flush at most 0.1x a forced one's) is checked on each scenario "
        "(the claims under each table).",
        "",
        "A partial flush resets the groups it opens (the read group and the ancestors of the "
        "subtrees it leaves) by what it carried: their counts and reservations less the left "
        "groups' (`crates/hierstat/src/flush.rs`, \"A partial flush's opened groups\"), so a group "
        "read again finds a bound of about what was left and flushes no more until that grows "
        "over its budget; a pass visits an opened group only where it has something to "
        "aggregate; and the planner keeps what it leaves within the policy's threshold (hierstat "
        "at 384 CPUs: 64 x 384 = 24,576 pages), since a count above it bounds nothing. "
        "Each tolerance read, planning included, does no more work than a forced flush of the "
        "group from the same state (`crates/hierstat/tests/within.rs`, counter by counter; "
        "`crates/sim/tests/it/tolerance.rs`, priced). Amortized, a read that flushes carries "
        "what accumulated since the last flush of its group, so its flush costs more than a "
        "forced one read every time (the flush p99 column), while the mean (flush mean / forced) "
        "falls with the tolerance.",
        "",
        "Why the 1% target is missed on all three, for reasons of structure, not of tuning: the "
        "target needs fewer than 1% of the reads to flush (the flushes per 1000 reads column "
        "under 10). *tolerance-readers*: 5,000 of the 5,010 groups read are leaves, which have "
        "no subtree to leave; a leaf's bound is its folded count plus a reservation of 31 pages "
        "(hierstat's residue batch of 32, less 1) per CPU with its row queued, and 1% of a "
        "leaf's item is about 80 pages (8,192 pages at the start): a leaf written on three CPUs "
        "since its last flush is over budget and its read flushes it whole, as a forced read "
        "would. *tolerance-slices*: each slice is read every 0.5 ms (2,000 readers every 100 ms "
        "over ten slices); the engine reports no bound for a group whose count passed the "
        "threshold (owners skip folds above it), and the slices' counts pass it between "
        "flushes: at 10%, where the budget is never what stops a read, a read still flushes "
        "each time the count passes the threshold (the read=10% row's flushes per 1000 reads), "
        "more often than 1 in 100; at 1% the budget is reached sooner. Fewer flushes at these "
        "read rates would need a larger threshold (slices) or a smaller residue batch (leaves): "
        "knobs of the policy, not of the tolerance read. *tolerance-refault*: the eviction "
        "group is workload.service, a leaf written on its 16 CPUs by every access, miss and "
        "eviction, and the refault counts itself in it before it reads, so its bound is never 0 "
        "(read=0 and read=0.1% flush every refault, as read=forced does); a file refault with "
        "swap reads active_file and both anon lists, and the budget of the smallest (1% of the "
        "inactive anon list) is below the leaf's bound on most refaults: at 1% about three "
        "refaults in four flush, at 10% about one in thirty, which still exceeds the target's one "
        "in a hundred, and a refault that flushes carries what accumulated since the last one "
        "(the flush p99 column: above a forced flush's). The tolerance shows in the flush mean "
        "(about a fifth of the forced reads' at 10%) and in the decisions: at 10% none differs "
        "from exact, where clean reads and the ratelimited kernel get about 6% wrong and "
        "hierstat's hot path (which hands the flush to its background flusher and never flushes "
        "in the refault) about 0.05%, at a p99 refault of a tenth of read=10%'s.",
        "",
    ]
    for run in a.runs:
        lines += section(a, run)
    lines += [
        "## How to regenerate",
        "",
        "```sh",
        "cargo build --release -p mmlab",
        "target/release/mmlab run tolerance-readers --db out/tolerance.db",
        "target/release/mmlab run tolerance-slices --db out/tolerance.db",
        "target/release/mmlab run tolerance-refault --db out/tolerance.db",
        "scripts/tolerance-doc.py --db out/tolerance.db last~2 last~1 last   # or the runs' ids",
        "# the sweeps of the same levels, with their trade-off plots:",
        "target/release/mmlab sweep scenarios/sweeps/read-tolerance.toml --db out/tolerance.db "
        "--html out/sweep-read-tolerance.html",
        "target/release/mmlab sweep scenarios/sweeps/read-tolerance-refault.toml --db out/tolerance.db "
        "--html out/sweep-read-tolerance-refault.html",
        "```",
        "",
    ]
    out = Path(a.out) / "tolerance.md"
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
