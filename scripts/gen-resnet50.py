#!/usr/bin/env python3
"""Generate models/resnet50.graph: torchvision's ResNet-50 in the .graph format.

Prints the full ResNet-50 topology (torchvision v1.5: the stride-2 sits on the
3x3 conv of each Bottleneck that downsamples) as a `.graph` text file, the
format specified in docs/graph-format.md. Every operator result carries its
shape annotation, computed here with the formulas of that document.

Weights are named after torchvision's state-dict keys (`conv1.w`,
`bn1.scale`, `bn1.bias`, `bn1.mean`, `bn1.var`, `layer1.0.conv1.w`,
`layer1.0.downsample.0.w`, `layer1.0.downsample.1.scale`, `fc.w`, `fc.b`);
`fc.w` is stored as [2048,1000] (the transpose of torchvision's [1000,2048])
because matmul takes its right-hand side as [K,N].

Usage (Python 3 standard library only):

    python3 scripts/gen-resnet50.py > models/resnet50.graph
    python3 scripts/gen-resnet50.py -o models/resnet50.graph
    python3 scripts/gen-resnet50.py --batch 8 -o /tmp/resnet50-b8.graph
    python3 scripts/gen-resnet50.py --check    # print and assert the op and
                                               # parameter counts; no graph

`--batch N` sets the batch size (default 1); the input is x: [N,3,224,224]
and the output logits: [N,1000].
"""

import argparse
import collections
import sys

# torchvision ResNet-50: blocks per layer and bottleneck widths.
LAYERS = [3, 4, 6, 3]
WIDTHS = [64, 128, 256, 512]
EXPANSION = 4
NUM_CLASSES = 1000

# Expected values for --check (torchvision.models.resnet50()).
EXPECTED_OPS = {
    "conv2d": 53,
    "batchnorm": 53,
    "relu": 49,
    "ewadd": 16,
    "maxpool": 1,
    "global_avgpool": 1,
    "reshape": 1,
    "matmul": 1,
}
EXPECTED_PARAMS = 25557032


def fmt_list(values):
    return "[" + ",".join(str(v) for v in values) + "]"


def conv_out(size, k, stride, pad, dilation=1):
    """One spatial dimension of a conv/pool output (docs/graph-format.md).

    pad is 'same', 'valid' or a (before, after) pair.
    """
    if pad == "same":
        return -(-size // stride)  # ceil(in / stride)
    if pad == "valid":
        before, after = 0, 0
    else:
        before, after = pad
    out = (size + before + after - dilation * (k - 1) - 1) // stride + 1
    assert out >= 1, (size, k, stride, pad)
    return out


class Graph:
    def __init__(self, name):
        self.name = name
        self.inputs = []  # (name, shape)
        self.weights = []  # (name, shape)
        self.ops = []  # text lines
        self.op_counts = collections.Counter()
        self.shapes = {}

    def _define(self, name, shape):
        assert name not in self.shapes, "duplicate name " + name
        self.shapes[name] = list(shape)

    def input(self, name, shape):
        self._define(name, shape)
        self.inputs.append((name, list(shape)))
        return name

    def weight(self, name, shape):
        self._define(name, shape)
        self.weights.append((name, list(shape)))
        return name

    def op(self, result, shape, opname, args, params=()):
        for a in args:
            assert a in self.shapes, "undefined name " + a
        self._define(result, shape)
        line = "%s: %s = %s(%s)" % (result, fmt_list(shape), opname,
                                    ", ".join(args))
        for key, value in params:
            line += " %s=%s" % (key, value)
        self.ops.append(line)
        self.op_counts[opname] += 1
        return result

    # -- operators ---------------------------------------------------------

    def conv2d(self, result, x, wname, out_ch, k, stride=1, pad="same"):
        """conv2d without bias; pad is 'same', 'valid' or an int p (=[p,p,p,p])."""
        n, c, h, w = self.shapes[x]
        self.weight(wname, [out_ch, c, k, k])
        if isinstance(pad, int):
            pair = (pad, pad)
            pad_text = fmt_list([pad] * 4)
        else:
            pair = pad
            pad_text = pad
        oh = conv_out(h, k, stride, pair)
        ow = conv_out(w, k, stride, pair)
        params = []
        # Parameters in the table order of the doc: stride, pad, ...
        if stride != 1:
            params.append(("stride", fmt_list([stride, stride])))
        if pad_text != "same":
            params.append(("pad", pad_text))
        return self.op(result, [n, out_ch, oh, ow], "conv2d", [x, wname],
                       params)

    def batchnorm(self, result, x, prefix):
        c = self.shapes[x][1]
        names = [self.weight(prefix + "." + s, [c])
                 for s in ("scale", "bias", "mean", "var")]
        return self.op(result, self.shapes[x], "batchnorm", [x] + names)

    def relu(self, result, x):
        return self.op(result, self.shapes[x], "relu", [x])

    def ewadd(self, result, a, b):
        assert self.shapes[a] == self.shapes[b], (a, b)
        return self.op(result, self.shapes[a], "ewadd", [a, b])

    def maxpool(self, result, x, k, stride, pad):
        n, c, h, w = self.shapes[x]
        oh = conv_out(h, k, stride, (pad, pad))
        ow = conv_out(w, k, stride, (pad, pad))
        params = [("kernel", fmt_list([k, k])),
                  ("stride", fmt_list([stride, stride])),
                  ("pad", fmt_list([pad] * 4))]
        return self.op(result, [n, c, oh, ow], "maxpool", [x], params)

    def global_avgpool(self, result, x):
        n, c, _, _ = self.shapes[x]
        return self.op(result, [n, c, 1, 1], "global_avgpool", [x])

    def reshape(self, result, x, shape):
        count = 1
        for d in self.shapes[x]:
            count *= d
        check = 1
        for d in shape:
            check *= d
        assert count == check, (self.shapes[x], shape)
        return self.op(result, shape, "reshape", [x],
                       [("shape", fmt_list(shape))])

    def matmul(self, result, a, wname, bname, n_out):
        m, k = self.shapes[a]
        self.weight(wname, [k, n_out])
        self.weight(bname, [n_out])
        return self.op(result, [m, n_out], "matmul", [a, wname, bname])

    # -- output ------------------------------------------------------------

    def text(self, header):
        lines = ["# " + h if h else "#" for h in header]
        lines.append("graph " + self.name)
        lines += ["input %s: %s" % (n, fmt_list(s)) for n, s in self.inputs]
        lines += ["weight %s: %s" % (n, fmt_list(s)) for n, s in self.weights]
        lines += self.ops
        lines.append("output " + ", ".join(self.outputs))
        return "\n".join(lines) + "\n"


def bottleneck(g, x, prefix, width, stride, downsample):
    """torchvision Bottleneck (v1.5: stride on conv2)."""
    out_ch = width * EXPANSION
    p = prefix + "."
    t = g.conv2d(p + "c1", x, p + "conv1.w", width, 1)  # 1x1: same == valid
    t = g.batchnorm(p + "b1", t, p + "bn1")
    t = g.relu(p + "r1", t)
    t = g.conv2d(p + "c2", t, p + "conv2.w", width, 3, stride=stride, pad=1)
    t = g.batchnorm(p + "b2", t, p + "bn2")
    t = g.relu(p + "r2", t)
    t = g.conv2d(p + "c3", t, p + "conv3.w", out_ch, 1)
    t = g.batchnorm(p + "b3", t, p + "bn3")
    if downsample:
        if stride == 1:
            s = g.conv2d(p + "dsc", x, p + "downsample.0.w", out_ch, 1)
        else:
            s = g.conv2d(p + "dsc", x, p + "downsample.0.w", out_ch, 1,
                         stride=stride, pad="valid")
        identity = g.batchnorm(p + "dsb", s, p + "downsample.1")
    else:
        identity = x
    t = g.ewadd(p + "add", t, identity)
    return g.relu(p + "out", t)


def build(batch):
    g = Graph("resnet50")
    x = g.input("x", [batch, 3, 224, 224])
    t = g.conv2d("stem.c", x, "conv1.w", 64, 7, stride=2, pad=3)
    t = g.batchnorm("stem.b", t, "bn1")
    t = g.relu("stem.r", t)
    t = g.maxpool("stem.pool", t, 3, 2, 1)
    in_ch = 64
    for li, (blocks, width) in enumerate(zip(LAYERS, WIDTHS)):
        layer_stride = 1 if li == 0 else 2
        for bi in range(blocks):
            stride = layer_stride if bi == 0 else 1
            ds = bi == 0 and (stride != 1 or in_ch != width * EXPANSION)
            t = bottleneck(g, t, "layer%d.%d" % (li + 1, bi), width, stride,
                           ds)
            in_ch = width * EXPANSION
    t = g.global_avgpool("avgpool", t)
    t = g.reshape("flatten", t, [batch, in_ch])
    t = g.matmul("logits", t, "fc.w", "fc.b", NUM_CLASSES)
    g.outputs = [t]
    return g


def param_count(g):
    total = 0
    for name, shape in g.weights:
        if name.endswith(".mean") or name.endswith(".var"):
            continue
        n = 1
        for d in shape:
            n *= d
        total += n
    return total


def check(g):
    for op in sorted(EXPECTED_OPS):
        print("%-15s %d" % (op, g.op_counts[op]))
    print("%-15s %d" % ("operators", sum(g.op_counts.values())))
    print("%-15s %d" % ("weights", len(g.weights)))
    params = param_count(g)
    print("%-15s %d (excluding *.mean, *.var)" % ("parameters", params))
    print("%-15s %s" % ("logits", fmt_list(g.shapes["logits"])))
    assert dict(g.op_counts) == EXPECTED_OPS, dict(g.op_counts)
    assert params == EXPECTED_PARAMS, params
    print("ok")


def main():
    ap = argparse.ArgumentParser(
        description="Print torchvision's ResNet-50 as a .graph file.")
    ap.add_argument("-o", "--output", metavar="PATH",
                    help="write to PATH instead of standard output")
    ap.add_argument("--batch", type=int, default=1, metavar="N",
                    help="batch size (default 1)")
    ap.add_argument("--check", action="store_true",
                    help="print and assert operator and parameter counts")
    args = ap.parse_args()
    if args.batch < 1:
        ap.error("--batch must be positive")

    g = build(args.batch)
    if args.check:
        check(g)
        return

    # The header depends only on --batch, so -o and '>' give identical files.
    if args.batch == 1:
        cmd = "python3 scripts/gen-resnet50.py > models/resnet50.graph"
    else:
        cmd = "python3 scripts/gen-resnet50.py --batch %d" % args.batch
    header = [
        "Generated by scripts/gen-resnet50.py; do not edit. Regenerate with:",
        "  " + cmd,
        "torchvision ResNet-50 (v1.5, stride 2 on the 3x3 conv), batch %d,"
        % args.batch,
        "%d parameters (excluding batch-norm running mean/var)."
        % param_count(g),
    ]
    text = g.text(header)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
