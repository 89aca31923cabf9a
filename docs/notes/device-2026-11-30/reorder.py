#!/usr/bin/env python3
"""reorder.py IN OUT MODE: the graph's compute nodes in another topological
order (weight-only nodes first, as they were). MODE: asap (by depth from the
inputs, ties by the old order), cp (critical path first: a ready node with
the longest chain of nodes after it first; ties by the old order)."""
import heapq, re, sys
src, dst, mode = sys.argv[1:4]
lines = open(src).read().split("\n")
head, nodes, tail = [], [], []
for l in lines:
    if " = " in l and not l.startswith(("input ", "weight ")):
        nodes.append(l)
    elif nodes:
        tail.append(l)
    else:
        head.append(l)
leaves = set()
for l in head:
    m = re.match(r"(input|weight) (\S+):", l)
    if m:
        leaves.add(m.group(2))
wts = {re.match(r"weight (\S+):", l).group(1) for l in head if l.startswith("weight ")}
outs, ins = [], []
for l in nodes:
    lhs, rhs = l.split(" = ", 1)
    o = [p.split(":")[0].strip() for p in re.split(r", (?=[^\[\]]*(?:\[|$))", lhs)]
    o = [x for x in re.findall(r"([^\s,:]+): \[", lhs)]
    call = rhs[rhs.index("(") + 1:]
    depth, args, cur = 1, [], ""
    for ch in call:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                break
        cur += ch
    args = [a.strip() for a in cur.split(",") if a.strip()]
    outs.append(o); ins.append(args)
prod = {}
for i, o in enumerate(outs):
    for x in o:
        prod[x] = i
n = len(nodes)
wonly = [False] * n
for i in range(n):
    wonly[i] = all(a in wts or (a in prod and wonly[prod[a]]) for a in ins[i]) and all(a in wts or a in prod for a in ins[i])
deps = [[prod[a] for a in ins[i] if a in prod and not wonly[prod[a]]] for i in range(n)]
users = [[] for _ in range(n)]
for i in range(n):
    for d in set(deps[i]):
        users[d].append(i)
comp = [i for i in range(n) if not wonly[i]]
if mode == "asap":
    lvl = {}
    for i in comp:
        lvl[i] = 1 + max((lvl[d] for d in deps[i]), default=0)
    order = sorted(comp, key=lambda i: (lvl[i], i))
elif mode.startswith("orig="):
    ref = open(mode[5:]).read().split("\n")
    rpos = {}
    for l in ref:
        if " = " in l and not l.startswith(("input ", "weight ")):
            for x in re.findall(r"([^\s,:]+): \[", l.split(" = ", 1)[0]):
                rpos.setdefault(x, len(rpos))
    key = {}
    for i in reversed(comp):  # a new node: just before its first reader
        ks = [rpos[x] for x in outs[i] if x in rpos]
        key[i] = min(ks) if ks else min((key[u] - 0.5 for u in users[i]), default=1e9)
    indeg = {i: len(set(deps[i])) for i in comp}
    ready = [(key[i], i) for i in comp if indeg[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, (key[u], u))
    assert len(order) == len(comp)
elif mode.startswith("rand="):
    import random
    rng = random.Random(int(mode[5:]))
    indeg = {i: len(set(deps[i])) for i in comp}
    ready = [i for i in comp if indeg[i] == 0]
    order = []
    while ready:
        i = ready.pop(rng.randrange(len(ready)))
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                ready.append(u)
    assert len(order) == len(comp)
elif mode == "alap":
    below = {}
    for i in reversed(comp):
        below[i] = 1 + max((below[u] for u in users[i]), default=0)
    top = max(below.values())
    order = sorted(comp, key=lambda i: (top - below[i], i))
elif mode == "dfs":
    sys.setrecursionlimit(100000)
    seen, order = set(), []
    def visit(i):
        if i in seen:
            return
        seen.add(i)
        for d in deps[i]:
            visit(d)
        order.append(i)
    sinks = [i for i in comp if not users[i]]
    for i in sinks:
        visit(i)
    for i in comp:
        visit(i)
else:
    below = {}
    for i in reversed(comp):
        below[i] = 1 + max((below[u] for u in users[i]), default=0)
    indeg = {i: len(set(deps[i])) for i in comp}
    ready = [(-below[i], i) for i in comp if indeg[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, (-below[u], u))
    assert len(order) == len(comp)
with open(dst, "w") as f:
    f.write("\n".join(head + [nodes[i] for i in range(n) if wonly[i]] + [nodes[i] for i in order] + tail))
