import re, sys
def load(src):
    g = {}
    g["src"] = src; g["sys"] = sys; g["re"] = re; exec(open("/work/main/exp/reorder.py").read().split("if mode ==")[0].replace("src, dst, mode = sys.argv[1:4]", "dst = None; mode = None"), g)
    return g
a = load(sys.argv[1]); b = load(sys.argv[2])
def seq(g):
    return [(g["outs"][i][0], g["nodes"][i].split(" = ")[1].split("(")[0]) for i in g["comp"]]
sa, sb = seq(a), seq(b)
na = {x[0]: k for k, x in enumerate(sa)}; nb = {x[0]: k for k, x in enumerate(sb)}
common = [x for x in na if x in nb]
print("common", len(common), "of", len(sa), len(sb))
# print both sequences side by side, first N
for k in range(int(sys.argv[3]), int(sys.argv[4])):
    x, y = sa[k], sb[k]
    print("%4d %-45s %-8s | %-45s %-8s" % (k, x[0][:45], x[1], y[0][:45], y[1]))
