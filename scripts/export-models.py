#!/usr/bin/env python3
"""export-models.py: the networks users bring, exported to ONNX as test models.

Runs where PyTorch, torchvision, timm and transformers are (the GPU machine's
python3; no GPU and no network needed: every model is built from its config
with random weights, nothing is downloaded). Each network is exported the way
../shared/models/README.md describes: torch.onnx.export with
export_params=False (weights become graph inputs, the files stay small),
opset 17, batch 1, TorchScript exporter (dynamo=False); when that exporter
fails, the dynamo exporter (opset 18) is tried and the fallback is reported.

  torchvision  mobilenet_v3_large shufflenet_v2_x1_0 vgg16 regnet_y_800mf
               convnext_tiny wide_resnet50_2 swin_t vit_b_16   (1x3x224x224)
  transformers distilbert roberta gpt2   (input_ids int64 1xSEQ; the BERT-like
               ones also attention_mask int64 1xSEQ; GPT-2's causal mask is
               built inside the graph); eager attention
  timm         deit_tiny_patch16_224   (1x3x224x224)
  torchvision, the test models (tests/test_onnx.c, onnx_oracle.py,
               onnx_export.py; imported as models/tv_*.graph): resnet50,
               resnext50 (resnext50_32x4d), squeezenet (squeezenet1_1),
               mobilenet_v2 (1x3x224x224), with torch's own tensor names
               (input.1, no input_names / output_names); this export
               call with torch 2.11.0 and torchvision 0.26.0 on the GPU
               machine gave models/onnx/'s four files byte for byte
               (2026-11-28).

Usage: export-models.py --out DIR [--nets a,b,...] [--seq 128]
A network that fails is reported with its exception and the others go on;
the exit status is 1 when any failed. Prints one line per network: file,
size, node count, op types.
"""
import argparse
import os
import sys
import traceback

TV = ["mobilenet_v3_large", "shufflenet_v2_x1_0", "vgg16", "regnet_y_800mf",
      "convnext_tiny", "wide_resnet50_2", "swin_t", "vit_b_16"]
HF = ["distilbert", "roberta", "gpt2"]
TIMM = ["deit_tiny_patch16_224"]
# file name -> torchvision constructor, exported with torch's tensor names
CLASSIC = {"resnet50": "resnet50", "resnext50": "resnext50_32x4d",
           "squeezenet": "squeezenet1_1", "mobilenet_v2": "mobilenet_v2"}


def build(name, seq):
    import torch
    if name in CLASSIC:
        import torchvision
        m = getattr(torchvision.models, CLASSIC[name])(weights=None).eval()
        return m, (torch.rand(1, 3, 224, 224),), None
    if name in TV:
        import torchvision
        m = getattr(torchvision.models, name)(weights=None).eval()
        return m, (torch.rand(1, 3, 224, 224),), ["x"]
    if name in TIMM:
        import timm
        m = timm.create_model(name, pretrained=False).eval()
        return m, (torch.rand(1, 3, 224, 224),), ["x"]
    import transformers as tf
    ids = torch.randint(0, 1000, (1, seq), dtype=torch.int64)
    mask = torch.ones(1, seq, dtype=torch.int64)
    if name == "distilbert":
        cfg = tf.DistilBertConfig()
        m = tf.DistilBertModel(cfg)
    elif name == "roberta":
        cfg = tf.RobertaConfig()
        m = tf.RobertaModel(cfg)
    elif name == "gpt2":
        cfg = tf.GPT2Config()
        cfg.use_cache = False
        m = tf.GPT2Model(cfg)
    else:
        raise ValueError("unknown network " + name)
    try:
        m.config._attn_implementation = "eager"
    except Exception:
        pass
    m.config.return_dict = False
    m = m.eval()

    class Wrap(torch.nn.Module):
        def __init__(self, inner, with_mask):
            super().__init__()
            self.inner = inner
            self.with_mask = with_mask

        def forward(self, input_ids, attention_mask=None):
            if self.with_mask:
                out = self.inner(input_ids=input_ids,
                                 attention_mask=attention_mask)
            else:
                out = self.inner(input_ids=input_ids)
            return out[0] if isinstance(out, (tuple, list)) else \
                out.last_hidden_state

    if name == "gpt2":
        return Wrap(m, False), (ids,), ["input_ids"]
    return Wrap(m, True), (ids, mask), ["input_ids", "attention_mask"]


def params_to_inputs(path, names):
    """Rewrites path (and drops its external data file) with the
    initializers named in names as graph inputs of the same type and shape;
    the other initializers (constants) stay."""
    import onnx
    from onnx import helper
    model = onnx.load(path)  # loads external data beside it too
    g = model.graph
    keep = []
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
              onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}
    for t in g.initializer:
        numel = 1
        for d in t.dims:
            numel *= d
        # the dynamo exporter renames parameters (vit_b_16 kept all 312 MB
        # of them by name alone): a float tensor of more than 64 values is
        # a weight too; shape constants are int64 and small
        if t.name in names or (t.data_type in floats and numel > 64):
            g.input.append(helper.make_tensor_value_info(
                t.name, t.data_type, list(t.dims)))
        else:
            keep.append(t)
    del g.initializer[:]
    g.initializer.extend(keep)
    for t in g.initializer:  # constants back inline
        if t.data_location == onnx.TensorProto.EXTERNAL:
            t.data_location = onnx.TensorProto.DEFAULT
            del t.external_data[:]
    onnx.save(model, path, save_as_external_data=False)
    data = path + ".data"
    if os.path.exists(data):
        os.remove(data)


def export(name, out, seq):
    import torch
    m, args, names = build(name, seq)
    path = os.path.join(out, name + ".onnx")
    how = "torchscript opset 17"
    # CLASSIC (names None): torch's own tensor names
    named = {} if names is None else {"input_names": names,
                                      "output_names": ["y"]}
    with torch.no_grad():
        try:
            torch.onnx.export(m, args, path, export_params=False,
                              opset_version=17, dynamo=False, **named)
        except Exception as e:
            first = "%s: %s" % (type(e).__name__, str(e)[:300])
            # the dynamo exporter with export_params=False drops every
            # initializer, shape constants included: export with them, then
            # turn the parameters (only) into graph inputs
            torch.onnx.export(m, args, path, opset_version=18,
                              input_names=names, output_names=["y"],
                              dynamo=True)
            params_to_inputs(path, {k for k, _ in m.named_parameters()} |
                             {k for k, _ in m.named_buffers()})
            how = "dynamo opset 18 (torchscript failed: %s)" % first
    import onnx
    g = onnx.load(path)
    ops = sorted({n.op_type for n in g.graph.node})
    print("%s: %s, %d bytes, %d nodes, %s; ops: %s" % (
        name, path, os.path.getsize(path), len(g.graph.node), how,
        " ".join(ops)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--nets",
                    default=",".join(TV + HF + TIMM + list(CLASSIC)))
    ap.add_argument("--seq", type=int, default=128)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    failed = []
    for net in a.nets.split(","):
        try:
            export(net, a.out, a.seq)
        except Exception:
            failed.append(net)
            print("%s: FAILED\n%s" % (net, traceback.format_exc()[-1500:]),
                  flush=True)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
