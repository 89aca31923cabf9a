#!/usr/bin/env python3
"""export-transformers.py: the transformer networks people export today, as
ONNX test models, through both torch exporters.

Runs where PyTorch, torchvision and transformers are (the GPU machine's
python3; no network: every model is built from its config with random
weights). For each network and exporter:

  dynamo   torch.onnx.export(..., dynamo=True), the default of current
           PyTorch: opset 18, weights in an external data file beside the
           model (model.onnx.data) as it writes them
  legacy   torch.onnx.export(..., dynamo=False), opset 17, weights inline

Hugging Face models use small configs (the test-data size; --full for the
benchmark sizes of issue 41) with their default attention implementation
(SDPA), inputs input_ids [and attention_mask] int64 of batch 1 and --seq
tokens, and batch and sequence exported as dynamic axes (dynamic=True /
dynamic_axes). The torchvision ones (vit_b_16, swin_t, maxvit_t; 1x3x224x224)
are full size: their weights are turned into graph inputs after export so
the files stay small (unless --keep-weights: the files as torch writes them).

Usage: export-transformers.py --out DIR [--nets a,b] [--seq 16] [--full]
                              [--keep-weights]
One line per network and exporter: file, size, nodes, op types (or the
exception); a JSON summary in DIR/summary.json; exit 1 when any failed.
"""
import argparse
import json
import os
import sys
import traceback

HF = ["bert", "distilbert", "t5_encoder", "llama"]
TV = ["vit_b_16", "swin_t", "maxvit_t"]


def hf_model(name, full):
    import transformers as tf
    if name == "bert":
        cfg = tf.BertConfig() if full else tf.BertConfig(
            vocab_size=1000, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=2, intermediate_size=128,
            max_position_embeddings=128)
        return tf.BertModel(cfg), True
    if name == "distilbert":
        cfg = tf.DistilBertConfig() if full else tf.DistilBertConfig(
            vocab_size=1000, dim=64, n_layers=2, n_heads=2, hidden_dim=128,
            max_position_embeddings=128)
        return tf.DistilBertModel(cfg), True
    if name == "t5_encoder":
        cfg = tf.T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048,
                          num_layers=6, num_heads=8) if full else tf.T5Config(
            vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2,
            num_heads=4)
        return tf.T5EncoderModel(cfg), True
    if name == "llama":
        cfg = tf.LlamaConfig(
            vocab_size=32000 if full else 1000,
            hidden_size=512 if full else 64,
            intermediate_size=1376 if full else 128,
            num_hidden_layers=4 if full else 2,
            num_attention_heads=8 if full else 4,
            num_key_value_heads=8 if full else 2,
            max_position_embeddings=512)
        return tf.LlamaModel(cfg), False  # prefill, causal: no padding mask
    raise ValueError(name)


class Outputs0:
    """Wraps a model so that the exported graph has one output: the first
    (last_hidden_state)."""

    def __new__(cls, m):
        import torch

        class W(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = m

            def forward(self, input_ids, attention_mask=None):
                if attention_mask is None:
                    o = self.m(input_ids=input_ids)
                else:
                    o = self.m(input_ids=input_ids, attention_mask=attention_mask)
                return o[0] if isinstance(o, (tuple, list)) else o.last_hidden_state

        return W().eval()


def no_zero_weights(m):
    """Weight matrices left all zero by the module's initialisation drawn
    from N(0, 0.02) instead (torchvision's ViT zeroes its classifier head,
    so without this its output, and the accuracy measured on it, is all
    zero); the names of those redrawn."""
    import torch
    out = []
    with torch.no_grad():
        for name, p in m.named_parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0.0, 0.02)
                out.append(name)
    return out


def tv_model(name):
    """The torchvision module (eval, CPU) with no all-zero weight matrix
    and nn.MultiheadAttention's fast path off: ViT's exports as an operator
    the legacy exporter lacks (aten::_native_multi_head_attention)."""
    import torch
    import torchvision
    torch.backends.mha.set_fastpath_enabled(False)
    m = getattr(torchvision.models, name)(weights=None).eval()
    no_zero_weights(m)
    return m


def export(name, how, out, seq, full):
    import torch
    torch.manual_seed(0)
    if name in TV:
        m = tv_model(name)
        args, names, dyn = (torch.rand(1, 3, 224, 224),), ["x"], None
    else:
        base, with_mask = hf_model(name, full)
        m = Outputs0(base.eval())
        ids = torch.randint(0, 1000, (1, seq), dtype=torch.int64)
        args, names = (ids,), ["input_ids"]
        if with_mask:
            args += (torch.ones(1, seq, dtype=torch.int64),)
            names.append("attention_mask")
        dyn = {n: {0: "batch", 1: "seq"} for n in names}
    path = os.path.join(out, f"{name}.{how}.onnx")
    with torch.no_grad():
        if how == "dynamo":
            kw = {"dynamic_shapes": tuple(
                {0: torch.export.Dim("batch", max=64), 1: torch.export.Dim("seq", max=512)}
                for _ in names)} if dyn else {}
            torch.onnx.export(m, args, path, dynamo=True, input_names=names,
                              output_names=["y"], external_data=True, **kw)
        else:
            torch.onnx.export(m, args, path, dynamo=False, opset_version=17,
                              input_names=names, output_names=["y"],
                              dynamic_axes=dyn)
    return path


def strip_weights(path):
    """The model with every float initializer of more than 64 values (the
    weights) made a graph input, its external data file removed: the
    structure, small. Integer initializers (index tables such as Swin's
    relative positions) stay: they are constants, not weights; so do float
    ones a ScatterND writes with (the dynamo export's Swin-T builds its
    shifted windows' masks so)."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    masks = {x for n in m.graph.node if n.op_type == "ScatterND" for x in n.input}
    keep = []
    for t in m.graph.initializer:
        n = 1
        for d in t.dims:
            n *= d
        if t.data_type != onnx.TensorProto.FLOAT or n <= 64 or t.name in masks:
            if t.data_location == onnx.TensorProto.EXTERNAL:
                onnx.external_data_helper.load_external_data_for_tensor(
                    t, os.path.dirname(path))
                t.data_location = onnx.TensorProto.DEFAULT
                del t.external_data[:]
            keep.append(t)
            continue
        m.graph.input.append(onnx.helper.make_tensor_value_info(
            t.name, t.data_type, list(t.dims)))
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    data = path + ".data"
    onnx.save(m, path)
    if os.path.exists(data):
        os.remove(data)


def describe(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    ops = {}
    for n in m.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    size = os.path.getsize(path) + (os.path.getsize(path + ".data")
                                     if os.path.exists(path + ".data") else 0)
    return {"file": os.path.basename(path), "bytes": size,
            "opset": m.opset_import[0].version, "nodes": len(m.graph.node),
            "ops": dict(sorted(ops.items()))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--nets", default=",".join(HF + TV))
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--keep-weights", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    summary, failed = {}, 0
    for name in a.nets.split(","):
        for how in ("dynamo", "legacy"):
            key = f"{name}.{how}"
            try:
                p = export(name, how, a.out, a.seq, a.full)
                if name in TV and not a.keep_weights:
                    strip_weights(p)
                summary[key] = describe(p)
                d = summary[key]
                print(f"{key}: {d['bytes']} bytes, opset {d['opset']}, "
                      f"{d['nodes']} nodes, {' '.join(d['ops'])}", flush=True)
            except Exception as e:  # report and go on
                failed += 1
                summary[key] = {"error": f"{type(e).__name__}: {e}"[:2000]}
                print(f"{key}: FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
                traceback.print_exc(limit=2)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
