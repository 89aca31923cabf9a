import re, sys
sys.argv = [sys.argv[0]] + sys.argv[1:]
exec(open("/work/main/exp/reorder.py").read().split("if mode ==")[0].replace("src, dst, mode = sys.argv[1:4]", "src = sys.argv[1]; dst = None; mode = None"))
lvl = {}
for i in comp:
    lvl[i] = 1 + max((lvl[d] for d in deps[i]), default=0)
seq = [lvl[i] for i in comp]
down = sum(1 for a, b in zip(seq, seq[1:]) if b < a)
jump = sum(abs(b - a) for a, b in zip(seq, seq[1:])) / len(seq)
# distance from producer: mean index gap between a node and its deps
pos = {i: k for k, i in enumerate(comp)}
gap = [pos[i] - pos[d] for i in comp for d in deps[i]]
print(sys.argv[1].split("/")[-1], "nodes", len(comp), "maxlvl", max(seq), "down", down, "meanjump %.2f" % jump, "mean dep gap %.1f" % (sum(gap) / len(gap)), "conv/fused first 30 ops:", " ".join(nodes[i].split(" = ")[1].split("(")[0] for i in comp[:0]))
