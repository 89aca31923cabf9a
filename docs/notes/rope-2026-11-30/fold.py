#!/usr/bin/env python3
# fold.py IN OUT B MERGED: the --passes none Llama graph with rotate_half
# folded into the q/k weights by hand (what the rule chain would reach),
# the rotated projections separate (MERGED=0) or in the QKV matmul (1).
import re, sys
src = open(sys.argv[1]).read().split('\n'); B = int(sys.argv[3]); merged = sys.argv[4] == '1'
def wrot(name, w, h):
    return [f"{name}.w3: [64,{h},16] = reshape({w}) shape=[64,{h},16]",
            f"{name}.hi: [64,{h},8] = slice({name}.w3) starts=[0,0,8] ends=[64,{h},16]",
            f"{name}.lo: [64,{h},8] = slice({name}.w3) starts=[0,0,0] ends=[64,{h},8]",
            f"{name}.ng: [64,{h},8] = neg({name}.hi)",
            f"{name}.cat: [64,{h},16] = concat({name}.ng, {name}.lo) axis=2",
            f"{name}: [64,{h*16}] = reshape({name}.cat) shape=[64,{h*16}]"]
drop = {'slice_2','neg','slice_1','cat_1','slice_4','neg_1','slice_3','cat_2',
        'slice_6','neg_2','slice_5','cat_5','slice_8','neg_3','slice_7','cat_6'}
out = []
def proj(tag, x, w, n, h, cat):
    r = [] if merged else [f"{tag}: [{B},16,{n}] = matmul({x}, {w})"]
    return r + [f"{tag}.v: [{B},16,{h},16] = reshape({tag}) shape=[{B},16,{h},16]",
                f"{cat}: [{B},{h},16,16] = transpose({tag}.v) perm=[0,2,1,3]"]
for l in src:
    m = re.match(r'^([\w.]+):', l); name = m.group(1) if m else None
    if name in drop: continue
    if name == 'embedding':
        out += wrot('wq0','val_32',4) + wrot('wk0','val_39',2) + wrot('wq1','val_167',4) + wrot('wk1','val_174',2)
        if merged:
            out += ["t3.57r: [64,224] = concat(t3.57, wq0, wk0) axis=1", "t3.47r: [64,224] = concat(t3.47, wq1, wk1) axis=1"]
    if merged and name in ('t4.58', 't4.48'):
        x, w = ('mul_76', 't3.57r') if name == 't4.58' else ('mul_315', 't3.47r')
        out.append(f"{name}: [{B},16,224] = matmul({x}, {w})"); continue
    if merged and name in ('linear', 'linear_7'):
        o = ('linear','linear_1','linear_2','rq0','rk0') if name == 'linear' else ('linear_7','linear_9','linear_8','rq1','rk1')
        src_t = 't4.58' if name == 'linear' else 't4.48'
        out.append(f"{o[0]}: [{B},16,64], {o[1]}: [{B},16,32], {o[2]}: [{B},16,32], {o[3]}: [{B},16,64], {o[4]}: [{B},16,32] = split({src_t}) axis=2 sizes=[64,32,32,64,32]"); continue
    out.append(l)
    if name == 'transpose_1': out += proj('rq0','mul_76','wq0',64,4,'cat_1')
    if name == 'transpose_2': out += proj('rk0','mul_76','wk0',32,2,'cat_2')
    if name == 'transpose_5': out += proj('rq1','mul_315','wq1',64,4,'cat_5')
    if name == 'transpose_6': out += proj('rk1','mul_315','wk1',32,2,'cat_6')
open(sys.argv[2], 'w').write('\n'.join(out))
