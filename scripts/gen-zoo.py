#!/usr/bin/env python3
"""Generate models/{bert_base,csrnet,inception_v3,nasnet_a,resnet18,
resnet34_l4,resnext50_taso}.graph: the networks of the TASO/PET evaluation
in the .graph format (PET's set: ResNet-18, Inception-v3, BERT-base, CSRNet
and a ResNet with 3x3 convs at 7x7 resolution).

Prints one network as a `.graph` text file, the format specified in
docs/graph-format.md. Every operator result carries its shape annotation,
computed here with the formulas of that document; weights are declared up
front (in order of first use) and only non-default parameters are printed.
The graph builder and the helpers (shape formulas, output, parameter count)
come from scripts/gen-resnet50.py, loaded with importlib (not edited).

bert_base
    The BERT-base encoder as TASO and PET evaluated it: 12 layers, hidden
    768, 12 heads of 64, intermediate 3072, sequence 128. The input
    x: [N,128,768] holds the embeddings (the embedding lookup and the pooler
    are not part of the graph); the output y: [N,128,768] is the last
    layer's hidden state. Per layer (weights `layerL.attn.q.w` [768,768],
    `layerL.attn.q.b` [768], likewise k, v, o; `layerL.attn.scale` [];
    `layerL.ln1.gamma`/`.beta`; `layerL.ffn.fc1.w` [768,3072], `.fc1.b`,
    `.fc2.w` [3072,768], `.fc2.b`; `layerL.ln2.gamma`/`.beta`):
      q/k/v = matmul(x, W, b) -> reshape [N,128,12,64] -> transpose to
      [N,12,128,64] (k to [N,12,64,128]); scores = matmul(q, kT) -> smul by
      the scalar weight scale (1/sqrt(64) in the real model; a seeded random
      scalar under `superopt run`) -> softmax -> matmul with v -> transpose
      and reshape back to [N,128,768] -> matmul(., Wo, bo) -> ewadd x ->
      layernorm -> matmul 768->3072 with act=gelu -> matmul 3072->768 ->
      ewadd -> layernorm. No attention mask (all 128 tokens are valid), no
      dropout (inference).

nasnet_a
    NASNet-A Mobile (4 @ 1056; Zoph et al. 2018), the network of TASO's
    evaluation, with the real cell wiring of TF-slim's nasnet.py /
    nasnet_utils.py (also keras.applications.NASNetMobile): stem conv 3x3
    stride 2 VALID (32 ch) + batchnorm, two stem reduction cells (11 and 22
    filters), then 3 stacks of N=4 normal cells (44, 88, 176 filters) with a
    reduction cell before the 2nd and 3rd stack, relu -> global_avgpool ->
    reshape -> matmul+bias to 1000 classes. Each cell starts with
    relu -> 1x1 conv -> batchnorm on its input and adjusts the previous
    cell's output to the cell's filters (relu -> 1x1 conv -> batchnorm, or,
    where the spatial size halved, TF-slim's factorized reduction: two
    stride-2 1x1 avgpool + 1x1 conv paths, the second shifted by one pixel
    with pad + slice, concat, batchnorm). Separable convs are relu ->
    depthwise conv (groups=C, stride on the depthwise conv, pad=same) ->
    pointwise 1x1 conv -> batchnorm, applied twice; pools are 3x3 pad=same
    count_include_pad=0 (TF's SAME pooling). Normal cell (h0 = this cell's
    input after the 1x1, h1 = the adjusted previous output):
      comb0 = sep5x5(h0) + sep3x3(h1)   comb1 = sep5x5(h1) + sep3x3(h1)
      comb2 = avg3x3(h0) + h1           comb3 = avg3x3(h1) + avg3x3(h1)
      comb4 = sep3x3(h0) + h0           out = concat(h1, comb0..comb4)
    Reduction cell (stride 2 on the ops reading h0 or h1):
      comb0 = sep5x5(h0) + sep7x7(h1)   comb1 = max3x3(h0) + sep7x7(h1)
      comb2 = avg3x3(h0) + sep5x5(h1)   comb3 = comb1 + avg3x3(comb0)
      comb4 = sep3x3(comb0) + max3x3(h0)  out = concat(comb1..comb4)
    Simplified: nothing in the cells; the graph is inference only, so the
    auxiliary head, drop-path and dropout are left out. Weight values are
    seeded random (as for every graph), so NASNet's 1e-3 batch-norm epsilon
    is not carried either (batchnorm keeps its default eps).

resnext50_taso
    ResNeXt-50 32x4d in torchvision's topology (resnext50_32x4d, the model
    of TASO's evaluation, with its batchnorms kept): ResNet-50's stem,
    maxpool, bottlenecks (3, 4, 6, 3), global_avgpool and fc, with the 3x3
    conv of each bottleneck grouped (groups=32) and widths 128, 256, 512,
    1024 (outputs 256, 512, 1024, 2048). Weights are named after
    torchvision's state-dict keys as in models/resnet50.graph.

csrnet
    CSRNet (Li et al., CVPR'18), as in PET's evaluation: VGG-16's first ten
    3x3 convs with three 2x2 max pools, six 3x3 convs with dilation 2
    (512, 512, 512, 256, 128, 64) and a 1x1 density head to one channel;
    every conv has a bias (`frontend.K.weight`/`.bias`, `backend.K.*`,
    `output_layer.*`) and all but the head a fused relu. Input
    x: [N,3,224,224], output [N,1,28,28].

inception_v3
    torchvision's Inception-v3 without the auxiliary head (inference),
    299x299: the stem (five BasicConv2d, two 3x3 stride-2 max pools),
    Mixed_5b-5d (InceptionA, pool features 32, 64, 64), Mixed_6a
    (InceptionB), Mixed_6b-6e (InceptionC, 7x7 factorized into 1x7 and 7x1,
    c7 = 128, 160, 160, 192), Mixed_7a (InceptionD), Mixed_7b-7c
    (InceptionE), global_avgpool, fc. BasicConv2d = conv (no bias, explicit
    padding) + batchnorm + relu; branch pools are 3x3 stride-1 avgpools with
    count_include_pad=1 (PyTorch's default). Weights `NAME.conv.weight`,
    `NAME.bn.*` after torchvision's module names.

resnet18
    torchvision's ResNet-18 (basic blocks 2, 2, 2, 2; widths 64-512; stride
    on the first 3x3 of a stage; 1x1 stride-2 downsample), 224x224.

resnet34_l4
    PET's "ResNet with 3x3 convs at 7x7 resolution": ResNet-34's layer4
    alone, three basic blocks of 512 channels (the first with stride 2 and a
    downsample) on a [N,256,14,14] input (what layer3 hands on), so all six
    3x3 512-channel convs run at 7x7, then avgpool and fc.

Usage (Python 3 standard library only):

    python3 scripts/gen-zoo.py bert_base > models/bert_base.graph
    python3 scripts/gen-zoo.py nasnet_a -o models/nasnet_a.graph
    python3 scripts/gen-zoo.py resnext50_taso --batch 8 -o /tmp/rx-b8.graph
    python3 scripts/gen-zoo.py --all           # writes every one into models/
    python3 scripts/gen-zoo.py --check --all   # print and assert the op and
                                               # parameter counts; no graph

`--batch N` sets the batch size (default 1). The parameter counts asserted by
--check exclude batch-norm running mean/var and are those of the reference
models: torchvision resnext50_32x4d (25028904), inception_v3 without the
auxiliary head (27161264 - 3326696 = 23834568), resnet18 (11689512), resnet34's
layer4 plus fc (13627368), keras NASNetMobile's
trainable parameters (5289978), BERT-base's encoder (85054464) plus the
12 attention scale scalars, CSRNet's 16263489.
"""

import argparse
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _load_resnet():
    spec = importlib.util.spec_from_file_location(
        "gen_resnet50", os.path.join(HERE, "gen-resnet50.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


resnet = _load_resnet()
fmt_list = resnet.fmt_list
conv_out = resnet.conv_out
param_count = resnet.param_count


class Graph(resnet.Graph):
    """gen-resnet50's Graph plus the operators the zoo needs."""

    def conv2d(self, result, x, wname, out_ch, k, stride=1, pad="same",
               groups=1):
        """conv2d without bias; pad is 'same', 'valid', an int p
        (=[p,p,p,p]) or [top,left,bottom,right]."""
        n, c, h, w = self.shapes[x]
        assert c % groups == 0 and out_ch % groups == 0, (x, c, out_ch)
        self.weight(wname, [out_ch, c // groups, k, k])
        if isinstance(pad, int):
            pad = [pad] * 4
        if isinstance(pad, str):
            hpad = wpad = pad
            pad_text = pad
        else:
            hpad, wpad = (pad[0], pad[2]), (pad[1], pad[3])
            pad_text = fmt_list(pad)
        oh = conv_out(h, k, stride, hpad)
        ow = conv_out(w, k, stride, wpad)
        params = []
        # Parameters in the table order of the doc: stride, pad, dilation,
        # groups, act.
        if stride != 1:
            params.append(("stride", fmt_list([stride, stride])))
        if pad_text != "same":
            params.append(("pad", pad_text))
        if groups != 1:
            params.append(("groups", str(groups)))
        return self.op(result, [n, out_ch, oh, ow], "conv2d", [x, wname],
                       params)

    def _pool(self, opname, result, x, k, stride, pad, count_include_pad):
        """pad is 'same', 'valid' or an int p (=[p,p,p,p])."""
        n, c, h, w = self.shapes[x]
        if isinstance(pad, int):
            assert pad < k
            pair, pad_text = (pad, pad), fmt_list([pad] * 4)
        else:
            pair = pad_text = pad
        oh = conv_out(h, k, stride, pair)
        ow = conv_out(w, k, stride, pair)
        if pad == "same":  # each side's padding must be below the kernel
            for size, out in ((h, oh), (w, ow)):
                total = max((out - 1) * stride + k - size, 0)
                assert total - total // 2 < k, (x, k, stride)
        params = [("kernel", fmt_list([k, k]))]
        if stride != 1:
            params.append(("stride", fmt_list([stride, stride])))
        if pad_text != "valid":
            params.append(("pad", pad_text))
        if count_include_pad is not None:
            params.append(("count_include_pad", str(count_include_pad)))
        return self.op(result, [n, c, oh, ow], opname, [x], params)

    def maxpool(self, result, x, k, stride, pad):
        return self._pool("maxpool", result, x, k, stride, pad, None)

    def avgpool(self, result, x, k, stride, pad, count_include_pad=0):
        return self._pool("avgpool", result, x, k, stride, pad,
                          count_include_pad)

    def concat(self, result, xs, axis):
        shape = list(self.shapes[xs[0]])
        for x in xs[1:]:
            s = self.shapes[x]
            assert len(s) == len(shape), xs
            assert all(a == b for i, (a, b) in enumerate(zip(s, shape))
                       if i != axis), xs
            shape[axis] += s[axis]
        return self.op(result, shape, "concat", xs, [("axis", str(axis))])

    def pad(self, result, x, pads):
        """Constant zero padding, pads in ONNX order [b0..b(r-1), e0..]."""
        s = self.shapes[x]
        r = len(s)
        assert len(pads) == 2 * r and min(pads) >= 0
        shape = [s[i] + pads[i] + pads[r + i] for i in range(r)]
        return self.op(result, shape, "pad", [x], [("pads", fmt_list(pads))])

    def slice(self, result, x, starts, ends):
        s = self.shapes[x]
        assert len(starts) == len(ends) == len(s)
        for b, e, d in zip(starts, ends, s):
            assert 0 <= b < e <= d, (x, starts, ends)
        shape = [e - b for b, e in zip(starts, ends)]
        return self.op(result, shape, "slice", [x],
                       [("starts", fmt_list(starts)),
                        ("ends", fmt_list(ends))])

    def transpose(self, result, x, perm):
        s = self.shapes[x]
        assert sorted(perm) == list(range(len(s)))
        return self.op(result, [s[p] for p in perm], "transpose", [x],
                       [("perm", fmt_list(perm))])

    def matmul(self, result, a, b, bias=None, act="none"):
        """a [...,M,K] times b [K,N] (shared) or [...,K,N] (same batch)."""
        sa, sb = self.shapes[a], self.shapes[b]
        assert 2 <= len(sa) <= 5, a
        if len(sb) != 2:
            assert len(sa) >= 3 and sb[:-2] == sa[:-2], (a, b)
        assert sb[-2] == sa[-1], (a, b)
        shape = sa[:-1] + [sb[-1]]
        args = [a, b]
        if bias is not None:
            assert self.shapes[bias] == [sb[-1]], bias
            args.append(bias)
        params = [("act", act)] if act != "none" else []
        return self.op(result, shape, "matmul", args, params)

    def linear(self, result, a, prefix, n_out, act="none"):
        """matmul with weight prefix.w [K,n_out] and bias prefix.b [n_out]."""
        k = self.shapes[a][-1]
        w = self.weight(prefix + ".w", [k, n_out])
        b = self.weight(prefix + ".b", [n_out])
        return self.matmul(result, a, w, b, act)

    def smul(self, result, a, s):
        assert self.shapes[s] == [], s
        return self.op(result, self.shapes[a], "smul", [a, s])

    def softmax(self, result, x):
        return self.op(result, self.shapes[x], "softmax", [x])

    def layernorm(self, result, x, prefix):
        """layernorm over the last axis, gamma/beta prefix.gamma/.beta."""
        c = self.shapes[x][-1]
        gamma = self.weight(prefix + ".gamma", [c])
        beta = self.weight(prefix + ".beta", [c])
        return self.op(result, self.shapes[x], "layernorm", [x, gamma, beta])


# -- BERT-base ---------------------------------------------------------------

BERT_LAYERS = 12
BERT_HIDDEN = 768
BERT_HEADS = 12
BERT_INTERMEDIATE = 3072
BERT_SEQ = 128


def bert_layer(g, x, prefix, batch, out=None):
    """One encoder layer; its result is named out (default prefix.ln2)."""
    p = prefix + "."
    s, d, nh = BERT_SEQ, BERT_HIDDEN, BERT_HEADS
    hd = d // nh
    heads = {}
    for name in ("q", "k", "v"):
        t = g.linear(p + name, x, p + "attn." + name, d)
        t = g.reshape(p + name + ".split", t, [batch, s, nh, hd])
        # [N,S,H,D] -> [N,H,S,D]; k -> [N,H,D,S] (k transposed).
        perm = [0, 2, 3, 1] if name == "k" else [0, 2, 1, 3]
        heads[name] = g.transpose(p + name + ".heads", t, perm)
    t = g.matmul(p + "scores", heads["q"], heads["k"])
    scale = g.weight(p + "attn.scale", [])
    t = g.smul(p + "scaled", t, scale)
    t = g.softmax(p + "probs", t)
    t = g.matmul(p + "ctx", t, heads["v"])
    t = g.transpose(p + "ctx.t", t, [0, 2, 1, 3])
    t = g.reshape(p + "ctx.merge", t, [batch, s, d])
    t = g.linear(p + "attn_out", t, p + "attn.o", d)
    t = g.ewadd(p + "res1", t, x)
    h = g.layernorm(p + "ln1", t, p + "ln1")
    t = g.linear(p + "ffn1", h, p + "ffn.fc1", BERT_INTERMEDIATE, "gelu")
    t = g.linear(p + "ffn2", t, p + "ffn.fc2", d)
    t = g.ewadd(p + "res2", t, h)
    return g.layernorm(out or p + "ln2", t, p + "ln2")


def build_bert_base(batch):
    g = Graph("bert_base")
    t = g.input("x", [batch, BERT_SEQ, BERT_HIDDEN])
    for li in range(BERT_LAYERS):
        last = li == BERT_LAYERS - 1
        t = bert_layer(g, t, "layer%d" % li, batch, "y" if last else None)
    g.outputs = [t]
    return g


# -- NASNet-A Mobile ---------------------------------------------------------

NAS_STEM_FILTERS = 32
NAS_FILTERS = 44  # penultimate 1056 = 6 * 44 * 2^2
NAS_CELLS_PER_STACK = 4
NAS_STACKS = 3
NAS_CLASSES = 1000

# (operation, hidden-state index) for left and right of each combination,
# from TF-slim's NasNetANormalCell / NasNetAReductionCell.
NAS_NORMAL = {
    "ops": ["sep5", "sep3", "sep5", "sep3", "avg3", "none", "avg3", "avg3",
            "sep3", "none"],
    "inputs": [0, 1, 1, 1, 0, 1, 1, 1, 0, 0],
    "used": [1, 0, 0, 0, 0, 0, 0],
}
NAS_REDUCTION = {
    "ops": ["sep5", "sep7", "max3", "sep7", "avg3", "sep5", "none", "avg3",
            "sep3", "max3"],
    "inputs": [0, 1, 0, 1, 0, 1, 3, 2, 2, 0],
    "used": [1, 1, 1, 0, 0, 0, 0],
}


def nas_conv_bn(g, x, prefix, filters, stride=1, relu=True):
    """[relu ->] 1x1 conv -> batchnorm (prefix.relu, .conv, .bn)."""
    if relu:
        x = g.relu(prefix + ".relu", x)
    pad = "valid" if stride != 1 else "same"
    t = g.conv2d(prefix + ".conv", x, prefix + ".conv.w", filters, 1,
                 stride=stride, pad=pad)
    return g.batchnorm(prefix + ".bn", t, prefix + ".bn")


def nas_factorized_reduction(g, x, prefix, filters):
    """relu, then TF-slim's factorized_reduction with stride 2."""
    n, c, h, w = g.shapes[x]
    x = g.relu(prefix + ".relu", x)
    p1 = g.avgpool(prefix + ".path1.pool", x, 1, 2, "valid")
    p1 = g.conv2d(prefix + ".path1.conv", p1, prefix + ".path1.conv.w",
                  filters // 2, 1)
    # Shift by one pixel: pad one zero row/column at the bottom/right,
    # drop the first row/column.
    p2 = g.pad(prefix + ".path2.pad", x, [0, 0, 0, 0, 0, 0, 1, 1])
    p2 = g.slice(prefix + ".path2.shift", p2, [0, 0, 1, 1],
                 [n, c, h + 1, w + 1])
    p2 = g.avgpool(prefix + ".path2.pool", p2, 1, 2, "valid")
    p2 = g.conv2d(prefix + ".path2.conv", p2, prefix + ".path2.conv.w",
                  filters // 2 + filters % 2, 1)
    t = g.concat(prefix + ".concat", [p1, p2], 1)
    return g.batchnorm(prefix + ".bn", t, prefix + ".bn")


def nas_separable(g, x, prefix, filters, k, stride):
    """Two stacked (relu, depthwise kxk, pointwise 1x1, batchnorm)."""
    t = x
    for i in (1, 2):
        p = "%s.sep%d" % (prefix, i)
        c = g.shapes[t][1]
        t = g.relu(p + ".relu", t)
        t = g.conv2d(p + ".dw", t, p + ".dw.w", c, k, stride=stride,
                     groups=c)
        t = g.conv2d(p + ".pw", t, p + ".pw.w", filters, 1)
        t = g.batchnorm(p + ".bn", t, p + ".bn")
        stride = 1
    return t


def nas_operation(g, x, prefix, op, filters, stride):
    c = g.shapes[x][1]
    if op.startswith("sep"):
        return nas_separable(g, x, prefix, filters, int(op[3:]), stride)
    if op == "none":
        if stride > 1 or c != filters:
            return nas_conv_bn(g, x, prefix, filters, stride)
        return x
    pool = {"avg": g.avgpool, "max": g.maxpool}[op[:3]]
    t = pool(prefix + "." + op[:3] + "pool", x, int(op[3:]), stride, "same")
    if c != filters:
        t = nas_conv_bn(g, t, prefix, filters, relu=False)
    return t


def nas_cell(g, spec, name, x, prev, filters, stride):
    """One NASNet-A cell (TF-slim NasNetABaseCell.__call__)."""
    # _reduce_prev_layer: match the previous output to this cell.
    if prev is None:
        prev = x
    elif g.shapes[prev][2] != g.shapes[x][2]:
        prev = nas_factorized_reduction(g, prev, name + ".prev", filters)
    elif g.shapes[prev][1] != filters:
        prev = nas_conv_bn(g, prev, name + ".prev", filters)
    # _cell_base: relu -> 1x1 -> batchnorm on the cell input.
    hidden = [nas_conv_bn(g, x, name + ".base", filters), prev]
    ops, inputs = spec["ops"], spec["inputs"]
    for j in range(5):
        sides = []
        for side, i in (("left", 2 * j), ("right", 2 * j + 1)):
            idx = inputs[i]
            s = stride if idx < 2 else 1  # only original inputs stride
            sides.append(nas_operation(
                g, hidden[idx], "%s.comb%d.%s" % (name, j, side), ops[i],
                filters, s))
        hidden.append(g.ewadd("%s.comb%d" % (name, j), sides[0], sides[1]))
    # _combine_unused_states: every unused state has the final shape here.
    final = g.shapes[hidden[-1]]
    unused = [h for h, used in zip(hidden, spec["used"]) if not used]
    for h in unused:
        assert g.shapes[h] == final, (name, h)
    return g.concat(name + ".out", unused, 1)


def build_nasnet_a(batch):
    g = Graph("nasnet_a")
    x = g.input("x", [batch, 3, 224, 224])
    t = g.conv2d("stem.conv", x, "stem.conv.w", NAS_STEM_FILTERS, 3,
                 stride=2, pad="valid")
    t = g.batchnorm("stem.bn", t, "stem.bn")
    # Two stem reduction cells with 1/4 and 1/2 of the filters.
    outputs = [None, t]
    for i, filters in enumerate((NAS_FILTERS // 4, NAS_FILTERS // 2)):
        t = nas_cell(g, NAS_REDUCTION, "stem_cell%d" % i, t, outputs[-2],
                     filters, 2)
        outputs.append(t)
    filters = NAS_FILTERS
    cell = 0
    for stack in range(NAS_STACKS):
        if stack > 0:
            filters *= 2
            t = nas_cell(g, NAS_REDUCTION, "reduction_cell%d" % (stack - 1),
                         t, outputs[-2], filters, 2)
            outputs.append(t)
        for _ in range(NAS_CELLS_PER_STACK):
            t = nas_cell(g, NAS_NORMAL, "cell%d" % cell, t, outputs[-2],
                         filters, 1)
            outputs.append(t)
            cell += 1
    t = g.relu("final.relu", t)
    t = g.global_avgpool("avgpool", t)
    t = g.reshape("flatten", t, [batch, g.shapes[t][1]])
    t = g.linear("logits", t, "fc", NAS_CLASSES)
    g.outputs = [t]
    return g


# -- ResNeXt-50 32x4d --------------------------------------------------------

RESNEXT_GROUPS = 32
RESNEXT_WIDTH_PER_GROUP = 4


def resnext_bottleneck(g, x, prefix, planes, stride, downsample):
    """torchvision Bottleneck with groups=32, base_width=4 (stride on
    conv2)."""
    width = planes * RESNEXT_WIDTH_PER_GROUP // 64 * RESNEXT_GROUPS
    out_ch = planes * resnet.EXPANSION
    p = prefix + "."
    t = g.conv2d(p + "c1", x, p + "conv1.w", width, 1)  # 1x1: same == valid
    t = g.batchnorm(p + "b1", t, p + "bn1")
    t = g.relu(p + "r1", t)
    t = g.conv2d(p + "c2", t, p + "conv2.w", width, 3, stride=stride, pad=1,
                 groups=RESNEXT_GROUPS)
    t = g.batchnorm(p + "b2", t, p + "bn2")
    t = g.relu(p + "r2", t)
    t = g.conv2d(p + "c3", t, p + "conv3.w", out_ch, 1)
    t = g.batchnorm(p + "b3", t, p + "bn3")
    if downsample:
        s = g.conv2d(p + "dsc", x, p + "downsample.0.w", out_ch, 1,
                     stride=stride, pad="valid" if stride != 1 else "same")
        identity = g.batchnorm(p + "dsb", s, p + "downsample.1")
    else:
        identity = x
    t = g.ewadd(p + "add", t, identity)
    return g.relu(p + "out", t)


def build_resnext50_taso(batch):
    g = Graph("resnext50_taso")
    x = g.input("x", [batch, 3, 224, 224])
    t = g.conv2d("stem.c", x, "conv1.w", 64, 7, stride=2, pad=3)
    t = g.batchnorm("stem.b", t, "bn1")
    t = g.relu("stem.r", t)
    t = g.maxpool("stem.pool", t, 3, 2, 1)
    in_ch = 64
    for li, (blocks, planes) in enumerate(zip(resnet.LAYERS, resnet.WIDTHS)):
        layer_stride = 1 if li == 0 else 2
        for bi in range(blocks):
            stride = layer_stride if bi == 0 else 1
            out_ch = planes * resnet.EXPANSION
            ds = bi == 0 and (stride != 1 or in_ch != out_ch)
            t = resnext_bottleneck(g, t, "layer%d.%d" % (li + 1, bi), planes,
                                   stride, ds)
            in_ch = out_ch
    t = g.global_avgpool("avgpool", t)
    t = g.reshape("flatten", t, [batch, in_ch])
    t = g.linear("logits", t, "fc", resnet.NUM_CLASSES)
    g.outputs = [t]
    return g


# -- CSRNet -----------------------------------------------------------------

# CSRNet (Li et al., CVPR'18; PET's evaluation): VGG-16's first ten 3x3
# convs and three max pools, then six 3x3 convs with dilation 2 and a 1x1
# density head; every conv has a bias, all but the head a relu.
CSR_FRONT = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512]
CSR_BACK = [512, 512, 512, 256, 128, 64]


def csr_conv(g, x, name, out_ch, k=3, dilation=1, relu=True):
    n, c, h, w = g.shapes[x]
    wname = g.weight(name + ".weight", [out_ch, c, k, k])
    bname = g.weight(name + ".bias", [out_ch])
    params = []
    if dilation != 1:
        params.append(("dilation", fmt_list([dilation, dilation])))
    if relu:
        params.append(("act", "relu"))
    return g.op(name, [n, out_ch, h, w], "conv2d", [x, wname, bname], params)


def build_csrnet(batch):
    g = Graph("csrnet")
    t = g.input("x", [batch, 3, 224, 224])
    conv = pool = 0
    for v in CSR_FRONT:
        if v == "M":
            t = g.maxpool("frontend.pool%d" % pool, t, 2, 2, "valid")
            pool += 1
        else:
            t = csr_conv(g, t, "frontend.%d" % conv, v)
            conv += 1
    for i, v in enumerate(CSR_BACK):
        t = csr_conv(g, t, "backend.%d" % i, v, dilation=2)
    t = csr_conv(g, t, "output_layer", 1, k=1, relu=False)
    g.outputs = [t]
    return g



# -- ResNet-18 and a stage-4 (7x7) ResNet -----------------------------------

RESNET18_LAYERS = [2, 2, 2, 2]
RESNET_BASIC_WIDTHS = [64, 128, 256, 512]


def basic_block(g, x, prefix, width, stride, downsample):
    """torchvision BasicBlock: 3x3 (stride) + bn + relu, 3x3 + bn, plus the
    identity or a 1x1 (stride) + bn downsample, relu."""
    p = prefix + "."
    t = g.conv2d(p + "c1", x, p + "conv1.w", width, 3, stride=stride, pad=1)
    t = g.batchnorm(p + "b1", t, p + "bn1")
    t = g.relu(p + "r1", t)
    t = g.conv2d(p + "c2", t, p + "conv2.w", width, 3, pad=1)
    t = g.batchnorm(p + "b2", t, p + "bn2")
    if downsample:
        s = g.conv2d(p + "dsc", x, p + "downsample.0.w", width, 1,
                     stride=stride, pad="valid" if stride != 1 else "same")
        identity = g.batchnorm(p + "dsb", s, p + "downsample.1")
    else:
        identity = x
    t = g.ewadd(p + "add", t, identity)
    return g.relu(p + "out", t)


def resnet_head(g, t, batch, in_ch):
    t = g.global_avgpool("avgpool", t)
    t = g.reshape("flatten", t, [batch, in_ch])
    t = g.linear("logits", t, "fc", resnet.NUM_CLASSES)
    g.outputs = [t]
    return g


def build_resnet18(batch):
    g = Graph("resnet18")
    x = g.input("x", [batch, 3, 224, 224])
    t = g.conv2d("stem.c", x, "conv1.w", 64, 7, stride=2, pad=3)
    t = g.batchnorm("stem.b", t, "bn1")
    t = g.relu("stem.r", t)
    t = g.maxpool("stem.pool", t, 3, 2, 1)
    in_ch = 64
    for li, (blocks, width) in enumerate(zip(RESNET18_LAYERS,
                                             RESNET_BASIC_WIDTHS)):
        for bi in range(blocks):
            stride = 2 if li > 0 and bi == 0 else 1
            ds = bi == 0 and (stride != 1 or in_ch != width)
            t = basic_block(g, t, "layer%d.%d" % (li + 1, bi), width, stride,
                            ds)
            in_ch = width
    return resnet_head(g, t, batch, in_ch)


def build_resnet34_l4(batch):
    """ResNet-34's last stage alone (PET's 'ResNet with 3x3 convs at 7x7'):
    input [N,256,14,14] (what layer3 hands on), three basic blocks of 512
    channels (the first with stride 2 and a 1x1 downsample), so every 3x3
    conv runs at 7x7, then avgpool and fc."""
    g = Graph("resnet34_l4")
    t = g.input("x", [batch, 256, 14, 14])
    in_ch = 256
    for bi in range(3):
        stride = 2 if bi == 0 else 1
        t = basic_block(g, t, "layer4.%d" % bi, 512, stride, bi == 0)
        in_ch = 512
    return resnet_head(g, t, batch, in_ch)


# -- Inception-v3 ------------------------------------------------------------


def inc_conv(g, x, name, out_ch, kh, kw=None, stride=1, pad=None):
    """torchvision BasicConv2d: conv (no bias, kernel kh x kw) + batchnorm +
    relu; pad (top, left) mirrored to the bottom and right, default none."""
    kw = kh if kw is None else kw
    ph, pw = pad if pad is not None else (0, 0)
    n, c, h, w = g.shapes[x]
    wname = g.weight(name + ".conv.weight", [out_ch, c, kh, kw])
    oh = (h + 2 * ph - kh) // stride + 1
    ow = (w + 2 * pw - kw) // stride + 1
    params = []
    if stride != 1:
        params.append(("stride", fmt_list([stride, stride])))
    params.append(("pad", fmt_list([ph, pw, ph, pw])))
    t = g.op(name + ".conv", [n, out_ch, oh, ow], "conv2d", [x, wname],
             params)
    t = g.batchnorm(name + ".bn", t, name + ".bn")
    return g.relu(name + ".relu", t)


def inception_a(g, x, p, pool_features):
    b1 = inc_conv(g, x, p + ".branch1x1", 64, 1)
    b5 = inc_conv(g, x, p + ".branch5x5_1", 48, 1)
    b5 = inc_conv(g, b5, p + ".branch5x5_2", 64, 5, pad=(2, 2))
    b3 = inc_conv(g, x, p + ".branch3x3dbl_1", 64, 1)
    b3 = inc_conv(g, b3, p + ".branch3x3dbl_2", 96, 3, pad=(1, 1))
    b3 = inc_conv(g, b3, p + ".branch3x3dbl_3", 96, 3, pad=(1, 1))
    bp = g.avgpool(p + ".pool", x, 3, 1, 1, count_include_pad=1)
    bp = inc_conv(g, bp, p + ".branch_pool", pool_features, 1)
    return g.concat(p, [b1, b5, b3, bp], 1)


def inception_b(g, x, p):
    b3 = inc_conv(g, x, p + ".branch3x3", 384, 3, stride=2)
    bd = inc_conv(g, x, p + ".branch3x3dbl_1", 64, 1)
    bd = inc_conv(g, bd, p + ".branch3x3dbl_2", 96, 3, pad=(1, 1))
    bd = inc_conv(g, bd, p + ".branch3x3dbl_3", 96, 3, stride=2)
    bp = g.maxpool(p + ".pool", x, 3, 2, "valid")
    return g.concat(p, [b3, bd, bp], 1)


def inception_c(g, x, p, c7):
    b1 = inc_conv(g, x, p + ".branch1x1", 192, 1)
    b7 = inc_conv(g, x, p + ".branch7x7_1", c7, 1)
    b7 = inc_conv(g, b7, p + ".branch7x7_2", c7, 1, 7, pad=(0, 3))
    b7 = inc_conv(g, b7, p + ".branch7x7_3", 192, 7, 1, pad=(3, 0))
    bd = inc_conv(g, x, p + ".branch7x7dbl_1", c7, 1)
    bd = inc_conv(g, bd, p + ".branch7x7dbl_2", c7, 7, 1, pad=(3, 0))
    bd = inc_conv(g, bd, p + ".branch7x7dbl_3", c7, 1, 7, pad=(0, 3))
    bd = inc_conv(g, bd, p + ".branch7x7dbl_4", c7, 7, 1, pad=(3, 0))
    bd = inc_conv(g, bd, p + ".branch7x7dbl_5", 192, 1, 7, pad=(0, 3))
    bp = g.avgpool(p + ".pool", x, 3, 1, 1, count_include_pad=1)
    bp = inc_conv(g, bp, p + ".branch_pool", 192, 1)
    return g.concat(p, [b1, b7, bd, bp], 1)


def inception_d(g, x, p):
    b3 = inc_conv(g, x, p + ".branch3x3_1", 192, 1)
    b3 = inc_conv(g, b3, p + ".branch3x3_2", 320, 3, stride=2)
    b7 = inc_conv(g, x, p + ".branch7x7x3_1", 192, 1)
    b7 = inc_conv(g, b7, p + ".branch7x7x3_2", 192, 1, 7, pad=(0, 3))
    b7 = inc_conv(g, b7, p + ".branch7x7x3_3", 192, 7, 1, pad=(3, 0))
    b7 = inc_conv(g, b7, p + ".branch7x7x3_4", 192, 3, stride=2)
    bp = g.maxpool(p + ".pool", x, 3, 2, "valid")
    return g.concat(p, [b3, b7, bp], 1)


def inception_e(g, x, p):
    b1 = inc_conv(g, x, p + ".branch1x1", 320, 1)
    b3 = inc_conv(g, x, p + ".branch3x3_1", 384, 1)
    b3a = inc_conv(g, b3, p + ".branch3x3_2a", 384, 1, 3, pad=(0, 1))
    b3b = inc_conv(g, b3, p + ".branch3x3_2b", 384, 3, 1, pad=(1, 0))
    b3 = g.concat(p + ".branch3x3", [b3a, b3b], 1)
    bd = inc_conv(g, x, p + ".branch3x3dbl_1", 448, 1)
    bd = inc_conv(g, bd, p + ".branch3x3dbl_2", 384, 3, pad=(1, 1))
    bda = inc_conv(g, bd, p + ".branch3x3dbl_3a", 384, 1, 3, pad=(0, 1))
    bdb = inc_conv(g, bd, p + ".branch3x3dbl_3b", 384, 3, 1, pad=(1, 0))
    bd = g.concat(p + ".branch3x3dbl", [bda, bdb], 1)
    bp = g.avgpool(p + ".pool", x, 3, 1, 1, count_include_pad=1)
    bp = inc_conv(g, bp, p + ".branch_pool", 192, 1)
    return g.concat(p, [b1, b3, bd, bp], 1)


def build_inception_v3(batch):
    g = Graph("inception_v3")
    t = g.input("x", [batch, 3, 299, 299])
    t = inc_conv(g, t, "Conv2d_1a_3x3", 32, 3, stride=2)
    t = inc_conv(g, t, "Conv2d_2a_3x3", 32, 3)
    t = inc_conv(g, t, "Conv2d_2b_3x3", 64, 3, pad=(1, 1))
    t = g.maxpool("maxpool1", t, 3, 2, "valid")
    t = inc_conv(g, t, "Conv2d_3b_1x1", 80, 1)
    t = inc_conv(g, t, "Conv2d_4a_3x3", 192, 3)
    t = g.maxpool("maxpool2", t, 3, 2, "valid")
    t = inception_a(g, t, "Mixed_5b", 32)
    t = inception_a(g, t, "Mixed_5c", 64)
    t = inception_a(g, t, "Mixed_5d", 64)
    t = inception_b(g, t, "Mixed_6a")
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160),
                     ("Mixed_6e", 192)):
        t = inception_c(g, t, name, c7)
    t = inception_d(g, t, "Mixed_7a")
    t = inception_e(g, t, "Mixed_7b")
    t = inception_e(g, t, "Mixed_7c")
    return resnet_head(g, t, batch, 2048)


# -- driver ------------------------------------------------------------------

MODELS = {
    "bert_base": {
        "build": build_bert_base,
        "describe": "BERT-base encoder (12 layers, hidden 768, 12 heads, "
                    "FFN 3072), sequence 128,",
        "ops": {"matmul": 96, "reshape": 48, "transpose": 48, "smul": 12,
                "softmax": 12, "ewadd": 24, "layernorm": 24},
        "params": 85054464 + BERT_LAYERS,
    },
    "csrnet": {
        "build": build_csrnet,
        "describe": "CSRNet (VGG-16 front end, dilation-2 back end), "
                    "224x224,",
        "ops": {"conv2d": 17, "maxpool": 3},
        "params": 16263489,
    },
    "inception_v3": {
        "build": build_inception_v3,
        "describe": "torchvision Inception-v3 (no auxiliary head), "
                    "299x299,",
        # 94 BasicConv2d (conv + batchnorm + relu), 11 mixed blocks.
        "ops": {"conv2d": 94, "batchnorm": 94, "relu": 94, "maxpool": 4,
                "avgpool": 9, "concat": 15, "global_avgpool": 1,
                "reshape": 1, "matmul": 1},
        "params": 23834568,
    },
    "nasnet_a": {
        "build": build_nasnet_a,
        "describe": "NASNet-A Mobile (4 @ 1056, TF-slim cells, no aux "
                    "head),",
        # 16 cells (4 reduction): 10 separable layers, 1x1 base and 5
        # ewadd each; 11 1x1 and 4 factorized previous-output adjustments.
        "ops": {"conv2d": 356, "batchnorm": 192, "relu": 192, "ewadd": 80,
                "avgpool": 52, "maxpool": 8, "concat": 20, "pad": 4,
                "slice": 4, "global_avgpool": 1, "reshape": 1, "matmul": 1},
        "params": 5289978,
    },
    "resnet18": {
        "build": build_resnet18,
        "describe": "torchvision ResNet-18, 224x224,",
        "ops": {"conv2d": 20, "batchnorm": 20, "relu": 17, "maxpool": 1,
                "ewadd": 8, "global_avgpool": 1, "reshape": 1, "matmul": 1},
        "params": 11689512,
    },
    "resnet34_l4": {
        "build": build_resnet34_l4,
        "describe": "ResNet-34's last stage (3 basic blocks, 512 channels, "
                    "3x3 convs at 7x7) on a [N,256,14,14] input, with "
                    "avgpool and fc,",
        "ops": {"conv2d": 7, "batchnorm": 7, "relu": 6, "ewadd": 3,
                "global_avgpool": 1, "reshape": 1, "matmul": 1},
        "params": 13627368,
    },
    "resnext50_taso": {
        "build": build_resnext50_taso,
        "describe": "torchvision ResNeXt-50 32x4d (stride 2 on the grouped "
                    "3x3 conv),",
        "ops": dict(resnet.EXPECTED_OPS),
        "params": 25028904,
    },
}


def check(name, g):
    expected = MODELS[name]
    print("%s:" % name)
    for op in sorted(g.op_counts):
        print("  %-15s %d" % (op, g.op_counts[op]))
    print("  %-15s %d" % ("operators", sum(g.op_counts.values())))
    print("  %-15s %d" % ("weights", len(g.weights)))
    params = param_count(g)
    print("  %-15s %d (excluding *.mean, *.var)" % ("parameters", params))
    for out in g.outputs:
        print("  %-15s %s" % (out, fmt_list(g.shapes[out])))
    assert dict(g.op_counts) == expected["ops"], dict(g.op_counts)
    assert params == expected["params"], params
    print("  ok")


def render(name, g, batch):
    # The header depends only on NAME and --batch, so -o, --all and '>' give
    # identical files.
    if batch == 1:
        cmd = "python3 scripts/gen-zoo.py %s > models/%s.graph" % (name, name)
    else:
        cmd = "python3 scripts/gen-zoo.py %s --batch %d" % (name, batch)
    header = [
        "Generated by scripts/gen-zoo.py; do not edit. Regenerate with:",
        "  " + cmd,
        "%s batch %d," % (MODELS[name]["describe"], batch),
        "%d parameters (excluding batch-norm running mean/var)."
        % param_count(g),
    ]
    return g.text(header)


def main():
    ap = argparse.ArgumentParser(
        description="Print a network of the TASO/PET evaluation as a .graph "
                    "file.")
    ap.add_argument("name", nargs="?", choices=sorted(MODELS),
                    help="the network to print")
    ap.add_argument("-o", "--output", metavar="PATH",
                    help="write to PATH instead of standard output")
    ap.add_argument("--batch", type=int, default=1, metavar="N",
                    help="batch size (default 1)")
    ap.add_argument("--all", action="store_true",
                    help="write every network to models/NAME.graph")
    ap.add_argument("--check", action="store_true",
                    help="print and assert operator and parameter counts")
    args = ap.parse_args()
    if args.batch < 1:
        ap.error("--batch must be positive")
    if args.all == (args.name is not None):
        ap.error("give either NAME or --all")
    if args.all and args.output:
        ap.error("--all writes into models/; -o takes a single NAME")

    names = sorted(MODELS) if args.all else [args.name]
    for name in names:
        g = MODELS[name]["build"](args.batch)
        if args.check:
            check(name, g)
            continue
        text = render(name, g, args.batch)
        if args.all:
            path = os.path.join(ROOT, "models", name + ".graph")
        else:
            path = args.output
        if path:
            with open(path, "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text)


if __name__ == "__main__":
    main()
