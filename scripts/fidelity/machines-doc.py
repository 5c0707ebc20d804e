#!/usr/bin/env python3
"""The constants tables of docs/machines.md, from crates/sim/src/machines/*.toml.

    scripts/fidelity/machines-doc.py > /tmp/tables.md   # then paste below the marker
"""
import pathlib
import tomllib

ORDER = ["host", "ixion-44", "ixion-72", "amd-256", "amd-384", "lkp-skl-fpga01"]
root = pathlib.Path(__file__).resolve().parents[2] / "crates/sim/src/machines"
for name in ORDER:
    m = tomllib.loads((root / f"{name}.toml").read_text())
    print(f"### `{name}`: {m['name']}\n")
    if m.get("cpu_model"):
        assumed = " (assumed)" if m.get("cpu_model_assumed") else ""
        print(f"CPU: {m['cpu_model']}{assumed}. {m.get('cpu_model_source', '')}\n")
    if m.get("notes"):
        print(f"{m['notes']}\n")
    print("| constant | value | source |")
    print("|---|---|---|")
    for k, v in m.items():
        if k.endswith("_source") or isinstance(v, (str, bool)):
            continue
        src = m.get(f"{k}_source", "").replace("|", "/")
        print(f"| `{k}` | {v} | {src} |")
    print()
