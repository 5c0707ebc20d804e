#!/usr/bin/env python3
"""Every non-Relaxed ordering and fence of hierstat's engine, and the
mutants of `scripts/loom-mutants.sh` that reach each.

A *site* is one occurrence, in `crates/hierstat/src` outside test code, of
`Ordering::Acquire`, `Release`, `AcqRel` or `SeqCst`, or a call of the
crate's fence helpers (`fence_seqcst()`, `fence_acquire()`), of
`compiler_fence(..)`, or of the heavy barrier (`.heavy()`). Excluded:

* test code: the item that follows a `#[cfg(test)]` or
  `#[cfg(all(test, ..))]` attribute (the `tests` modules, test-only
  helpers);
* `sync.rs`'s plumbing: the bodies of `fence_seqcst`, `fence_acquire` and
  `Barriers::heavy` (each only forwards to loom's or std's fence; their
  call sites are the sites), and its re-exports. `sync::load_published`
  is a site: its Acquire is a real ordering (std builds).

A mutant (`mutant NAME FILE FROM TO` in the script) *reaches* a site when
the site lies inside the mutant's FROM text in FILE and the mutant weakens
it: in the lines of FROM that TO changes, the site's token (the ordering
name, or the fence call) occurs fewer times in TO. Mutants that change
something else (a load moved, a count dropped, a loop bound) reach no site
and are listed apart. An `unmutated FILE PATTERN REASON` line of the script
accounts for the sites inside PATTERN with the reason why no model can
fail them.

    scripts/orderings.py            # the table, then the counts
    scripts/orderings.py --check    # also fail on a site neither mutated nor justified
    scripts/orderings.py --check --summary   # the counts only (scripts/test.sh)
    scripts/orderings.py --json     # machine-readable

The mutants' catches are not here (they need the loom runs): see
`scripts/loom-mutants.sh`'s output.
"""

import difflib
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CRATE = os.path.join(ROOT, "crates", "hierstat")
SRC = os.path.join(CRATE, "src")
SCRIPT = os.path.join(ROOT, "scripts", "loom-mutants.sh")

TOKEN = re.compile(
    r"Ordering::(?:Acquire|Release|AcqRel|SeqCst)\b"
    r"|(?<!fn )\bfence_seqcst\(\)|(?<!fn )\bfence_acquire\(\)|\bcompiler_fence\(Ordering::\w+\)|\.heavy\(\)"
)
# sync.rs functions whose bodies are plumbing (their callers are the sites).
PLUMBING = {("sync.rs", "fence_seqcst"), ("sync.rs", "fence_acquire"), ("sync.rs", "Barriers::heavy")}
TEST_ATTR = re.compile(r"#\[cfg\((?:all\()?test\b")


def blank_comments_and_strings(text):
    """`text` with comments and string/char contents replaced by spaces
    (newlines kept), so that offsets and line numbers stay valid."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if text[k] != "\n":
                    out[k] = " "
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                if text[k] != "\n":
                    out[k] = " "
            i = j + 1
        elif c == "'" and i + 2 < n and (text[i + 2] == "'" or (text[i + 1] == "\\" and "'" in text[i + 2 : i + 5])):
            # A char literal ('{', '\n', '"'); lifetimes ('a) are left alone.
            j = text.index("'", i + 2)
            for k in range(i + 1, j):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def scan(path):
    """The sites of one file: (line, column, token, enclosing fn)."""
    rel = os.path.relpath(path, SRC)
    text = open(path, encoding="utf-8").read()
    code = blank_comments_and_strings(text)
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_of(off):
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= off:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    # Walk the braces, tracking the enclosing impl/fn and test items.
    events = []  # (offset, kind, payload)
    for m in re.finditer(r"\bimpl\b(?:<[^{;]*?>)?\s+(?:[\w:<>, '&]+?\s+for\s+)?([\w:]+)", code):
        events.append((m.start(), "impl", m.group(1).split("::")[-1]))
    for m in re.finditer(r"\bfn\s+(\w+)", code):
        events.append((m.start(), "fn", m.group(1)))
    for m in TEST_ATTR.finditer(code):
        events.append((m.start(), "test", None))
    for m in re.finditer(r"[{};]", code):
        events.append((m.start(), m.group(0), None))
    for m in TOKEN.finditer(code):
        events.append((m.start(), "site", m.group(0)))
    events.sort(key=lambda e: e[0])

    stack = []  # (kind, name, is_test)
    pending_name = None  # ("impl"|"fn", name) waiting for its `{`
    pending_test = False
    sites = []
    for off, kind, payload in events:
        if kind in ("impl", "fn"):
            pending_name = (kind, payload)
        elif kind == "test":
            pending_test = True
        elif kind == "{":
            in_test = any(t for _, _, t in stack)
            if pending_name:
                stack.append((pending_name[0], pending_name[1], pending_test or in_test))
            else:
                stack.append(("block", None, pending_test or in_test))
            pending_name, pending_test = None, False
        elif kind == "}":
            if stack:
                stack.pop()
        elif kind == ";":
            # A declaration ends (a `fn` in a trait, a `use` under a cfg).
            if pending_name and pending_name[0] == "fn":
                pending_name = None
            pending_test = False
        elif kind == "site":
            if any(t for _, _, t in stack):
                continue
            fns = [name for k, name, _ in stack if k == "fn"]
            impls = [name for k, name, _ in stack if k == "impl"]
            fn = fns[-1] if fns else "?"
            qual = f"{impls[-1]}::{fn}" if impls else fn
            if (rel, qual) in PLUMBING or (rel, fn) in PLUMBING:
                continue
            if rel == "sync.rs" and payload.startswith("compiler_fence"):
                continue
            ln = line_of(off)
            sites.append(
                {
                    "file": rel,
                    "line": ln,
                    "offset": off,
                    "token": payload,
                    "ordering": payload.split("::")[-1] if payload.startswith("Ordering::") else payload.split("(")[0].lstrip(".") + "()",
                    "fn": qual,
                    "text": text[line_starts[ln - 1] : text.find("\n", off)].strip(),
                }
            )
    return sites


def all_sites():
    sites = []
    for dirpath, _, files in os.walk(SRC):
        for f in sorted(files):
            if f.endswith(".rs"):
                sites += scan(os.path.join(dirpath, f))
    sites.sort(key=lambda s: (s["file"], s["line"], s["offset"]))
    return sites


def script_entries():
    """The script's `mutant` and `unmutated` lines, as the shell reads them
    (its LIST mode prints them, NUL-separated)."""
    out = subprocess.run(
        ["bash", SCRIPT], env=dict(os.environ, LIST="1"), capture_output=True, check=True
    ).stdout.decode()
    fields = out.split("\0")
    entries = []
    i = 0
    while i + 4 < len(fields):
        kind, name, file, a, b = fields[i : i + 5]
        i += 5
        entries.append({"kind": kind, "name": name, "file": os.path.normpath(file), "from": a, "to": b})
    return entries


def weakened_ranges(a, b):
    """Character ranges of `a` in lines that `b` changes, with the tokens
    those lines lose."""
    al, bl = a.splitlines(keepends=True), b.splitlines(keepends=True)
    starts = [0]
    for line in al:
        starts.append(starts[-1] + len(line))
    ranges = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=al, b=bl, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        old, new = "".join(al[i1:i2]), "".join(bl[j1:j2])
        lost = {}
        for t in set(TOKEN.findall(old)):
            k = old.count(t) - new.count(t)
            if k > 0:
                lost[t] = k
        if lost:
            ranges.append((starts[i1], starts[i2], lost))
    return ranges


def match(sites, entries):
    by_file = {}
    for s in sites:
        s["mutants"], s["unmutated"] = [], []
        by_file.setdefault(s["file"], []).append(s)
    problems, other = [], []
    for e in entries:
        rel = os.path.relpath(os.path.join(CRATE, e["file"]), SRC)
        path = os.path.join(SRC, rel)
        text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if text.count(e["from"]) != 1:
            problems.append(f"PATTERN ERROR  {e['name'] or e['to']}: {text.count(e['from'])} matches in {rel}")
            continue
        base = text.index(e["from"])
        inside = [s for s in by_file.get(rel, []) if base <= s["offset"] < base + len(e["from"])]
        if e["kind"] == "unmutated":
            if not inside:
                problems.append(f"unmutated entry names no site: {rel}: {e['from']!r}")
            for s in inside:
                s["unmutated"].append(e["to"])
            continue
        reached = []
        for lo, hi, lost in weakened_ranges(e["from"], e["to"]):
            for s in inside:
                if base + lo <= s["offset"] < base + hi and s["token"] in lost:
                    reached.append(s)
        for s in reached:
            s["mutants"].append(e["name"])
        if not reached:
            other.append(e["name"])
    return problems, other


def main():
    check = "--check" in sys.argv
    sites = all_sites()
    entries = script_entries()
    problems, other = match(sites, entries)
    mutants = [e for e in entries if e["kind"] == "mutant"]
    mutated = [s for s in sites if s["mutants"]]
    justified = [s for s in sites if not s["mutants"] and s["unmutated"]]
    missing = [s for s in sites if not s["mutants"] and not s["unmutated"]]
    if "--json" in sys.argv:
        json.dump({"sites": sites, "other_mutants": other, "problems": problems}, sys.stdout, indent=1)
        print()
    else:
        for s in [] if "--summary" in sys.argv else sites:
            where = f"{s['file']}:{s['line']}"
            how = "; ".join(s["mutants"]) or ("not mutated: " + "; ".join(s["unmutated"]) if s["unmutated"] else "NO MUTANT")
            print(f"{where:<24} {s['ordering']:<16} {s['fn']:<34} {how}")
        if "--summary" not in sys.argv:
            print()
        if other and "--summary" not in sys.argv:
            print("mutants of something else than one ordering (a load moved, a barrier call, a check):")
            for name in other:
                print(f"  {name}")
            print()
        print(
            f"{len(sites)} sites: {len(mutated)} mutated ({len(mutants)} mutants, "
            f"{len(mutants) - len(other)} of them weakening a site), "
            f"{len(justified)} not mutated with a reason, {len(missing)} without either"
        )
    for p in problems:
        print(p, file=sys.stderr)
    if problems or (check and missing):
        for s in missing:
            print(f"no mutant and no reason: {s['file']}:{s['line']} {s['ordering']} in {s['fn']}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
