import re, sys, collections
def sigs(path):
    shape = {}
    lines = open(path).read().split("\n")
    wts = set()
    for l in lines:
        m = re.match(r"(input|weight) (\S+): (\S+)", l)
        if m:
            shape[m.group(2)] = m.group(3)
            if m.group(1) == "weight": wts.add(m.group(2))
    out = []
    prod = {}
    nodes = [l for l in lines if " = " in l and not l.startswith(("input ", "weight "))]
    wonly = set()
    for l in nodes:
        lhs, rhs = l.split(" = ", 1)
        outs = re.findall(r"([^\s,:]+): (\[[^\]]*\])", lhs)
        for n, s in outs: shape[n] = s
        op = rhs.split("(")[0]
        inner = rhs[rhs.index("(")+1:]
        depth, cur = 1, ""
        for ch in inner:
            if ch == "(": depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0: break
            cur += ch
        args = [a.strip() for a in cur.split(",") if a.strip()]
        attrs = rhs[rhs.index("(")+1+len(cur)+1:].strip()
        w = all(a in wts or a in wonly for a in args)
        if w:
            for n, _ in outs: wonly.add(n)
            continue
        argsig = ",".join(("W" if (a in wts or a in wonly) else "") + shape.get(a, "?") for a in args)
        out.append(f"{op}({argsig}) -> {','.join(s for _, s in outs)} {attrs}")
    return collections.Counter(out)
a, b = sigs(sys.argv[1]), sigs(sys.argv[2])
print("only in", sys.argv[1]); [print(" ", k, v) for k, v in (a - b).items()]
print("only in", sys.argv[2]); [print(" ", k, v) for k, v in (b - a).items()]
