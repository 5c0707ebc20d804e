#!/usr/bin/env python3
"""Checks what the documentation names against the repository.

Reads README.md, docs/*.md and crates/*/README.md and reports, as
FILE:LINE: message, every

  (a) repository path (`crates/...`, `docs/...`, `scripts/...`,
      `scenarios/...`, `.ci/...`; in a crate's README also `src/...`,
      `tests/...`, `examples/...`, `benches/...` from the crate's folder) in
      backticks, in a shell or plain code block (not a file a command
      writes), or as a relative link target, that does not exist;
  (b) Rust item path in backticks of the form `crate::module::Item` for one
      of the workspace's crates, a segment of which is defined nowhere in
      that crate's sources (grep level: a `fn`, `struct`, `enum`, `trait`,
      `type`, `const`, `static`, `mod` or source file, macro, `use ... as`
      name, enum variant or field);
  (c) `mmlab` subcommand or flag in a `sh` code block, or in an inline span
      that starts with `mmlab `, that `mmlab --help` does not know (only when
      target/debug/mmlab is built and newer than crates/mmlab/src, or given
      with --mmlab; skipped otherwise, with a note on stderr).

Exits 1 when it reports anything, 0 otherwise (2 when its own self-test,
run first on a sample, fails). No dependencies beyond
python3. Usage: scripts/check-docs.py [--mmlab PATH]
"""

import glob
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# The workspace's crates: the names a Rust path starts with -> folder.
CRATES = {
    "hierstat": "hierstat",
    "hierstat_exporter": "hierstat-exporter",
    "hierstat-exporter": "hierstat-exporter",
    "lab": "lab",
    "sim": "sim",
    "simcore": "simcore",
    "models": "models",
    "numab": "numab",
    "hostkernel": "hostkernel",
    "kernelmode": "kernelmode",
    "runstore": "runstore",
    "svgplot": "svgplot",
    "mmlab": "mmlab",
}
PATH_PREFIXES = ("crates/", "docs/", "scripts/", "scenarios/", ".ci/")
# Options whose value a command writes (need not exist yet).
OUTPUT_FLAGS = r"^(-o|--out|--output|--json|--html|--markdown|--reproducer|>+|\d>)$"

violations = []


def report(path, line, msg):
    violations.append(f"{os.path.relpath(path, ROOT)}:{line}: {msg}")


def doc_files():
    files = [os.path.join(ROOT, "README.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    files += sorted(glob.glob(os.path.join(ROOT, "crates", "*", "README.md")))
    return [f for f in files if os.path.isfile(f)]


def split_blocks(text):
    """(prose, blocks): the text with fenced code blocks blanked (newlines
    kept, so offsets and lines stay), and the blocks as (info, first line,
    body lines)."""
    prose = []
    blocks = []
    fence = None
    for i, line in enumerate(text.split("\n")):
        m = re.match(r"^\s*(```+|~~~+)\s*([\w+-]*)", line)
        if fence is None and m:
            fence = (m.group(1), m.group(2), i + 2, [])
            prose.append("")
        elif fence is not None and line.strip().startswith(fence[0]):
            blocks.append((fence[1], fence[2], fence[3]))
            fence = None
            prose.append("")
        elif fence is not None:
            fence[3].append(line)
            prose.append("")
        else:
            prose.append(line)
    return "\n".join(prose), blocks


def inline_spans(prose):
    """(offset, content) of every inline code span (may cross lines)."""
    for m in re.finditer(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", prose, re.S):
        yield m.start(2), m.group(2).strip()


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


# ------------------------------------------------------------------ (a) paths


def expand_braces(s):
    m = re.search(r"\{([^{}]*)\}", s)
    if not m:
        return [s]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(s[: m.start()] + alt.strip() + s[m.end():])
    return out


def path_exists(rel):
    """Whether `rel` (from the root; globs and braces allowed) names
    something; None when it is a pattern with a placeholder."""
    for p in expand_braces(rel):
        # NAME, PATH, N, ...: a placeholder segment, not a path to check.
        if any(re.fullmatch(r"[A-Z][A-Z_]*|\.\.\.|…", seg) for seg in p.split("/")):
            return None
        full = os.path.join(ROOT, p)
        if any(c in p for c in "*?["):
            if not glob.glob(full):
                return False
        elif not os.path.exists(full):
            return False
    return True


def check_paths(path, prose, blocks):
    # A crate's README names its own files from the crate's folder.
    crate_dir = os.path.relpath(os.path.dirname(path), ROOT)
    own = ("src/", "tests/", "examples/", "benches/") if crate_dir.startswith("crates/") else ()
    for off, span in inline_spans(prose):
        for tok in span.split():
            if tok.startswith(PATH_PREFIXES):
                rel = tok
            elif own and tok.startswith(own):
                rel = crate_dir + "/" + tok
            else:
                continue
            rel = re.sub(r"[.,;:)]+$", "", rel)
            rel = re.sub(r":\d+(-\d+)?$", "", rel)  # file:line
            if path_exists(rel) is False:
                report(path, line_of(prose, off), f"`{rel}`: no such path in the repository")
    # Paths in shell blocks and plain blocks (a layout listing), except
    # what a command writes.
    for info, first, body in blocks:
        if info not in ("", "sh", "bash", "shell", "console"):
            continue
        for k, raw in enumerate(body):
            toks = re.sub(r"(^|\s)#.*$", "", raw).split()
            for j, tok in enumerate(toks):
                if j and re.match(OUTPUT_FLAGS, toks[j - 1]):
                    continue
                tok = re.sub(r"[.,;:)]+$", "", tok)
                if tok.startswith(PATH_PREFIXES) and path_exists(tok) is False:
                    report(path, first + k, f"`{tok}`: no such path in the repository")
    # Relative Markdown links: [text](target), from the file's folder.
    here = os.path.dirname(path)
    for m in re.finditer(r"\]\(([^)\s]+)\)", prose):
        target = m.group(1).split("#")[0]
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        if not os.path.exists(os.path.normpath(os.path.join(here, target))):
            report(path, line_of(prose, m.start()), f"link `{target}`: no such file")


# ----------------------------------------------------------- (b) item paths

_defined = {}


def defined_names(folder):
    """Every name the crate's sources define, grep level."""
    if folder in _defined:
        return _defined[folder]
    names = set()
    src = os.path.join(ROOT, "crates", folder, "src")
    kw = r"(?:fn|struct|enum|trait|type|const|static|mod|union|macro_rules!)"
    for dirpath, dirnames, filenames in os.walk(src):
        for d in dirnames:
            names.add(d)
        for f in filenames:
            if not f.endswith(".rs"):
                continue
            names.add(f[:-3])
            with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                code = fh.read()
            names.update(re.findall(r"\b" + kw + r"\s+(?:mut\s+)?([A-Za-z_]\w*)", code))
            names.update(re.findall(r"\bas\s+([A-Za-z_]\w*)\s*[;,}]", code))
            names.update(re.findall(r"#\[macro_export\][^\n]*\n\s*macro_rules!\s*(\w+)", code))
            names.update(members(code))
    _defined[folder] = names
    return names


def members(code):
    """Enum variants and struct or union fields: the names that start a
    line inside the braces of an `enum`, `struct` or `union` definition."""
    code = re.sub(r"//[^\n]*", "", code)
    for m in re.finditer(r"\b(?:enum|struct|union)\s+\w+[^;{(]*\{", code):
        depth, i = 1, m.end()
        while depth and i < len(code):
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        body = code[m.end() : i - 1]
        yield from re.findall(
            r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?([A-Za-z_]\w*)\s*(?:[,({=]|:(?!:)|$)", body
        )


def item_paths(span):
    """Rust paths in a span: `a::b::{C, D}` expands, `()` and `!` drop."""
    for m in re.finditer(r"\b([A-Za-z_][\w-]*(?:::(?:[A-Za-z_]\w*|\{[^}]*\}))+)", span):
        for p in expand_braces(m.group(1)):
            yield [s for s in p.split("::") if s]


def check_items(path, prose):
    for off, span in inline_spans(prose):
        for segs in item_paths(span):
            folder = CRATES.get(segs[0])
            if folder is None or len(segs) < 2:
                continue
            names = defined_names(folder)
            missing = [s for s in segs[1:] if s not in names]
            if missing:
                report(
                    path,
                    line_of(prose, off),
                    f"`{'::'.join(segs)}`: `{missing[0]}` is defined nowhere in crates/{folder}/src",
                )


# ----------------------------------------------------- (c) mmlab's command line

_help = {}


def help_of(mmlab, words):
    """(subcommands, {flag: takes a value}) of `mmlab WORDS --help`."""
    key = tuple(words)
    if key not in _help:
        out = subprocess.run(
            [mmlab, *words, "--help"], capture_output=True, text=True, timeout=30
        ).stdout
        subs, flags, section = set(), {}, None
        for line in out.split("\n"):
            if re.match(r"^\S.*:$", line):
                section = line[:-1]
                continue
            if section == "Commands":
                m = re.match(r"^\s+([a-z][\w-]*)", line)
                if m:
                    subs.add(m.group(1))
            m = re.match(r"^\s+(-\w)?(?:,\s*)?(--[\w-]+)?(?:[ =]<([^>]*)>)?", line)
            if m and (m.group(1) or m.group(2)):
                value = m.group(3) is not None
                for f in (m.group(1), m.group(2)):
                    if f:
                        flags[f] = value
        _help[key] = (subs, flags)
    return _help[key]


def mmlab_invocations(line):
    """The argument lists of the mmlab commands on one shell line."""
    line = re.sub(r"(^|\s)#.*$", "", line)
    for part in re.split(r"\|\||&&|[|;]|\$\(|`", line):
        toks = part.split()
        while toks and (toks[0] in ("sudo", "env", "$") or re.match(r"^\w+=", toks[0])):
            toks = toks[1:]
        if toks and toks[0] in ("time", "/usr/bin/time"):
            # Its own options first: the command is the first mmlab word.
            names = [os.path.basename(t) for t in toks]
            toks = toks[names.index("mmlab"):] if "mmlab" in names else []
        if not toks:
            continue
        if os.path.basename(toks[0]) == "mmlab":
            args = toks[1:]
        elif toks[:2] == ["cargo", "run"] and "--" in toks:
            opts = toks[2 : toks.index("--")]
            if any(o in ("-p", "--package", "--bin", "--example") for o in opts) and "mmlab" not in opts:
                continue
            args = toks[toks.index("--") + 1 :]
        else:
            continue
        out = []
        for t in args:
            if re.match(r"^\d*[<>]", t):
                break
            out.append(t.strip("[]"))
        yield out


def check_args(mmlab, path, line, args):
    words = []
    subs, flags = help_of(mmlab, words)
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("", "...", "…") or a.startswith(("$", '"', "'", "<")):
            i += 1
            continue
        if a.startswith("-") and a != "-":
            name = a.split("=")[0]
            known = flags.get(name)
            if known is None:
                shown = " ".join(["mmlab", *words])
                report(path, line, f"`{shown}` has no option `{name}`")
            elif known and "=" not in a:
                i += 1  # its value
        elif subs:
            if a not in subs:
                shown = " ".join(["mmlab", *words])
                report(path, line, f"`{shown}` has no subcommand `{a}`")
                return
            words.append(a)
            subs, flags = help_of(mmlab, words)
        i += 1


def check_commands(mmlab, path, prose, blocks):
    for info, first, body in blocks:
        if info not in ("sh", "bash", "shell", "console"):
            continue
        for k, raw in enumerate(body):
            if info == "console":
                if not raw.startswith("$ "):
                    continue  # output, not a command
                raw = raw[2:]
            for args in mmlab_invocations(raw):
                check_args(mmlab, path, first + k, args)
    for off, span in inline_spans(prose):
        if span.startswith("mmlab "):
            for args in mmlab_invocations(span.replace("\n", " ")):
                check_args(mmlab, path, line_of(prose, off), args)


def self_test():
    """The checks find what they must on a sample (so that a broken check
    cannot pass every doc), at the lines they must."""
    sample = (
        "`crates/sim/src/kinds/` `crates/nope/x.rs`\n"
        "```sh\nmmlab run x\nls scripts/nope.sh\n```\n"
        "[ok](docs/design.md) [bad](docs/nope.md) `lab::Kind` `sim::report::RunReport`\n"
        "`lab::ranges::{HEADER, NOPE}`\n"
    )
    prose, blocks = split_blocks(sample)
    at = os.path.join(ROOT, "README.md")
    check_paths(at, prose, blocks)
    check_items(at, prose)
    found = [v.split(": ", 1)[0] + " " + v.split("`")[1] for v in violations]
    violations.clear()
    want = [
        "README.md:1 crates/nope/x.rs",
        "README.md:4 scripts/nope.sh",
        "README.md:6 docs/nope.md",
        "README.md:6 sim::report::RunReport",
        "README.md:7 lab::ranges::NOPE",
    ]
    if sorted(found) != sorted(want):
        print(f"check-docs: self-test failed: found {found}, want {want}", file=sys.stderr)
        sys.exit(2)


def main():
    self_test()
    mmlab = os.path.join(ROOT, "target", "debug", "mmlab")
    if "--mmlab" in sys.argv:
        mmlab = sys.argv[sys.argv.index("--mmlab") + 1]
    have_mmlab = os.access(mmlab, os.X_OK)
    why_not = f"{os.path.relpath(mmlab, ROOT)} not built"
    if have_mmlab and "--mmlab" not in sys.argv:
        # An older binary than the command line's sources would judge the
        # docs by yesterday's flags.
        built = os.path.getmtime(mmlab)
        srcs = glob.glob(os.path.join(ROOT, "crates", "mmlab", "src", "**", "*.rs"), recursive=True)
        if any(os.path.getmtime(f) > built for f in srcs):
            have_mmlab, why_not = False, f"{os.path.relpath(mmlab, ROOT)} older than crates/mmlab/src"
    for f in doc_files():
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        prose, blocks = split_blocks(text)
        check_paths(f, prose, blocks)
        check_items(f, prose)
        if have_mmlab:
            check_commands(mmlab, f, prose, blocks)
    if not have_mmlab:
        print(f"check-docs: {why_not}: command lines not checked", file=sys.stderr)
    for v in violations:
        print(v)
    if violations:
        print(f"check-docs: {len(violations)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
