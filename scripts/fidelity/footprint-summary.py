#!/usr/bin/env python3
"""Medians and quartiles of footprint-suite.sh's output, per operation."""
import re
import statistics as st
import sys

rows, refs = {}, {"ref_l1_ns": [], "ref_l2_ns": [], "ref_l3_ns": []}
for line in open(sys.argv[1]):
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    if "op" not in kv:
        continue
    rows.setdefault(kv["op"], []).append(float(kv["left_in_l1"]))
    for k in refs:
        refs[k].append(float(kv[k]))
for op, v in rows.items():
    v.sort()
    print(f"{op:12s} n={len(v)} left_in_l1 median={st.median(v):.3f} "
          f"quartiles={v[len(v) // 4]:.2f}-{v[3 * len(v) // 4]:.2f}")
for k, v in refs.items():
    print(f"{k} median={st.median(v):.2f} range={min(v):.2f}-{max(v):.2f} n={len(v)}")
