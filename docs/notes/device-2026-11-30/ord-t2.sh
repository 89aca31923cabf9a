#!/bin/bash
# each graph of exp/ord: 3 rounds, iters 200
for r in 1 2 3; do
  for g in ${GRAPHS}; do
    ms=$($SO run exp/ord/$g.graph --device cuda --iters 200 2>&1 | sed -n 's/^time: \([0-9.]*\) ms.*/\1/p')
    echo "$r $g $ms"
  done
done > $OUT/ord.txt 2>&1
python3 - $OUT/ord.txt <<'PY'
import sys, statistics as st
d = {}
for l in open(sys.argv[1]):
    p = l.split()
    if len(p) == 3: d.setdefault(p[1], []).append(float(p[2]))
for k, v in sorted(d.items(), key=lambda kv: st.median(kv[1])): print(k, "%.4f" % st.median(v), v)
PY
