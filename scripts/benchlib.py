"""benchlib.py: the parts of the GPU benchmarks that need no GPU and no
PyTorch (scripts/bench-gpu.py, scripts/bench-transformers.py; tested on the
CPU by tests/bench_half.py): the --dtype list, safetensors files for
`superopt run --inputs/--outputs`, the accuracy metric, geomeans and the
summary lines of the tables.

Accuracy (docs/half.md, "Accuracy against float32"): the largest relative
error of an output a against its float32 reference b is

    err(a, b) = max_i |a_i - b_i| / max_i |b_i|

over all elements of all outputs (so an element near zero does not blow
it up, as |a_i - b_i| / |b_i| would); inf when a has a NaN or infinity
that b has not, 0 when both are all zero. Ours is err(our half output,
our float32 output), PyTorch's err(its half output, its float32 output),
on the same inputs; the issue's target: ours <= 2 x PyTorch's.
"""
import contextlib
import json
import math
import signal
import struct
import sys
import time

import numpy as np

DTYPES = ("f32", "bf16", "f16")
TORCH_NAME = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}
TARGET_GEOMEAN = 0.8  # issue 42: geomean ours-opt / reduce-overhead
TARGET_EACH = 0.95    # and no network above this
ACCURACY_FACTOR = 2.0  # ours no worse than 2x PyTorch's error
COMPILE_TIMEOUT = 300  # seconds for one torch.compile and its first runs


def step(t0, name, batch, dtype, what):
    """A line on stderr as a step of a row starts (both benches): a row
    that never ends shows where it stopped (2026-11-30, NASNet-A bf16
    b16)."""
    print("[%4.0f s] %s b%d %s: %s" % (time.time() - t0, name, batch, dtype,
                                       what), file=sys.stderr, flush=True)


class StepTimeout(Exception):
    """A step of a row ran past its deadline (the row's error)."""


@contextlib.contextmanager
def deadline(seconds, what="step"):
    """Raises StepTimeout in the block after `seconds` (SIGALRM; the main
    thread only, the signal's previous handler restored after): a
    torch.compile that never returns ends its row, not the whole bench
    (2026-11-30: NASNet-A's bf16 row at batch 16 ran 445 s without a word
    until the device call's budget ended it)."""
    def fire(signum, frame):
        raise StepTimeout("%s: over %d s" % (what, seconds))
    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(int(seconds))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def parse_dtypes(s):
    """'bf16,f16' -> ['bf16', 'f16'] (in that order, no repeats); raises
    ValueError on an unknown name or an empty list."""
    out = []
    for t in (x.strip() for x in s.split(",")):
        if t not in DTYPES:
            raise ValueError("bad dtype '%s': expected a comma list of %s"
                             % (t, ", ".join(DTYPES)))
        if t not in out:
            out.append(t)
    if not out:
        raise ValueError("empty dtype list")
    return out


def dtype_arg(s):
    """argparse type of --dtype."""
    import argparse
    try:
        return parse_dtypes(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def run_dtype_args(dtype):
    """superopt run/optimize arguments for a dtype ([] for f32)."""
    return [] if dtype == "f32" else ["--dtype", dtype]


def dir_for(template, dtype):
    """A folder option that may name the dtype: 'opt/{dtype}' -> 'opt/bf16'.
    A template without {dtype} serves f32 only (None for a half type: the
    float32 graphs there are not the half ones)."""
    if template is None:
        return None
    if "{dtype}" in template:
        return template.replace("{dtype}", dtype)
    return template if dtype == "f32" else None


# ---- safetensors -------------------------------------------------------------

_ST = {"F32": np.float32, "I64": np.int64, "BOOL": np.bool_, "F16": np.float16}


def bf16_bits(x):
    """float32 array -> uint16 bfloat16 bits, rounded to nearest even (as
    superopt's ir_bf16_bits; NaN stays a quiet NaN)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def bf16_value(bits):
    """uint16 bfloat16 bits -> float32 values."""
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors):
    """tensors: name -> numpy array (float32, float16, int64, bool), or
    (\"BF16\", float32 array) for bfloat16. Written in the given order."""
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        if isinstance(t, tuple) and t[0] == "BF16":
            arr, dt, raw = np.asarray(t[1]), "BF16", bf16_bits(t[1]).tobytes()
        else:
            arr = np.ascontiguousarray(t)
            dt = {np.dtype(v): k for k, v in _ST.items()}.get(arr.dtype)
            if dt is None:
                raise ValueError("tensor '%s': unsupported dtype %s"
                                 % (name, arr.dtype))
            raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
    """name -> numpy array (BF16 and F16 as float32), in file order."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = data[8 + n + b:8 + n + end]
        if e["dtype"] == "BF16":
            a = bf16_value(np.frombuffer(raw, dtype="<u2"))
        else:
            a = np.frombuffer(raw, dtype=np.dtype(_ST[e["dtype"]])
                              .newbyteorder("<")).astype(_ST[e["dtype"]])
            if e["dtype"] == "F16":
                a = a.astype(np.float32)
        out[name] = a.reshape(e["shape"])
    return out


# ---- accuracy ----------------------------------------------------------------

def rel_err(a, b):
    """max|a - b| / max|b| over every element (lists of arrays, or arrays
    of the same shapes); see the module's docstring."""
    if not isinstance(a, (list, tuple)):
        a, b = [a], [b]
    if len(a) != len(b):
        raise ValueError("%d outputs against %d" % (len(a), len(b)))
    num = den = 0.0
    for x, y in zip(a, b):
        x = np.asarray(x, dtype=np.float64).ravel()
        y = np.asarray(y, dtype=np.float64).ravel()
        if x.shape != y.shape:
            raise ValueError("output of %d elements against %d"
                             % (x.size, y.size))
        if x.size == 0:
            continue
        bad = ~np.isfinite(x) & np.isfinite(y)
        if bad.any():
            return math.inf
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.any():
            num = max(num, float(np.max(np.abs(x[ok] - y[ok]))))
            den = max(den, float(np.max(np.abs(y[ok]))))
    if den == 0:
        if num == 0:  # nothing measured: never trust a run on zeros
            raise ValueError("the float32 reference output is all zero: "
                             "no accuracy measured")
        return math.inf
    return num / den


def accuracy_verdict(ours, torch_err):
    """'ok' when ours <= ACCURACY_FACTOR x PyTorch's, else 'MISS'; '' when
    either is missing."""
    if not isinstance(ours, float) or not isinstance(torch_err, float):
        return ""
    return "ok" if ours <= ACCURACY_FACTOR * torch_err else "MISS"


def fill_accuracy(row, ours, theirs):
    """Sets acc-ours, acc-torch and acc of a half row. ours() and theirs()
    each return (half outputs, float32 outputs): superopt's, and PyTorch's,
    which runs with TF32 off (its float32 the reference; both flags as they
    were afterwards). A step that raises leaves its error in its field and
    the rest goes on. PyTorch is imported here only: the module imports
    without it."""
    try:
        half, ref = ours()
        row["acc-ours"] = rel_err(half, ref)
    except Exception as e:  # report and go on
        row["acc-ours"] = "error: " + str(e).splitlines()[-1][:200]
    import torch
    tf32 = (torch.backends.cuda.matmul.allow_tf32,
            torch.backends.cudnn.allow_tf32)
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        half, ref = theirs()
        row["acc-torch"] = rel_err(half, ref)
    except Exception as e:  # report and go on
        row["acc-torch"] = "error: %s" % str(e).splitlines()[0][:200]
    finally:
        (torch.backends.cuda.matmul.allow_tf32,
         torch.backends.cudnn.allow_tf32) = tf32
    row["acc"] = accuracy_verdict(row.get("acc-ours"), row.get("acc-torch"))


def add_accuracy_args(ap):
    """--accuracy and --accuracy-batch of an argparse parser."""
    ap.add_argument("--accuracy", action="store_true",
                    help="half rows: our and PyTorch's error against "
                    "float32 on the same inputs (at --accuracy-batch)")
    ap.add_argument("--accuracy-batch", type=int, default=1)


# ---- ratios and summaries ----------------------------------------------------

def geomean(xs):
    xs = [x for x in xs if isinstance(x, float) and x > 0 and
          math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def ratio(num, den):
    """num / den when both are positive floats, else None."""
    if isinstance(num, float) and isinstance(den, float) and num > 0 and \
            den > 0:
        return num / den
    return None


def summary(rows, key="opt/ro", name="graph"):
    """Lines per (dtype, batch): the geomean of rows' key, how many, the
    worst, the networks above TARGET_EACH, and whether the issue's target
    (geomean <= TARGET_GEOMEAN, none above TARGET_EACH) is met; then the
    rows with no ratio."""
    lines = []
    groups = sorted({(r.get("dtype", "f32"), r["batch"]) for r in rows},
                    key=lambda k: (DTYPES.index(k[0]), k[1]))
    for dt, b in groups:
        rs = [r for r in rows if r.get("dtype", "f32") == dt
              and r["batch"] == b]
        v = [r[key] for r in rs if isinstance(r.get(key), float)]
        miss = [r[name] for r in rs if not isinstance(r.get(key), float)]
        if v:
            gm = geomean(v)
            above = [r[name] for r in rs if isinstance(r.get(key), float)
                     and r[key] > TARGET_EACH]
            met = gm <= TARGET_GEOMEAN and not above
            lines.append(
                "%s batch %d: geomean %s = %.3f over %d networks (worst "
                "%.3f); above %.2f: %s; target (<= %.2f, none above "
                "%.2f): %s" % (dt, b, key, gm, len(v), max(v), TARGET_EACH,
                               ", ".join(above) or "none", TARGET_GEOMEAN,
                               TARGET_EACH, "met" if met else "missed"))
        if miss:
            lines.append("%s batch %d: no %s (a step failed or was skipped):"
                         " %s" % (dt, b, key, ", ".join(miss)))
    return lines


def accuracy_lines(rows, name="graph"):
    """Lines on the accuracy columns (acc-ours, acc-torch, acc)."""
    rs = [r for r in rows if "acc" in r and r["acc"]]
    if not rs:
        return []
    bad = ["%s/%s/b%d" % (r[name], r.get("dtype", "f32"), r["batch"])
           for r in rs if r["acc"] != "ok"]
    return ["accuracy: %d of %d rows within %gx PyTorch's error; beyond: %s"
            % (len(rs) - len(bad), len(rs), ACCURACY_FACTOR,
               ", ".join(bad) or "none")]


def work_order(dtypes, items, batches):
    """(dtype, item, batch) in the order run: dtype by dtype (the first
    named first: bf16 before f16 when a budget ends the run), then item,
    then batch. batches: '1,16' or a list of ints."""
    if isinstance(batches, str):
        batches = [int(b) for b in batches.split(",")]
    return [(d, x, b) for d in dtypes for x in items for b in batches]


def fmt(v):
    if isinstance(v, float):
        return "%.3g" % v if v and abs(v) < 1e-2 else "%.3f" % v
    return str(v)


def md_table(rows, cols):
    out = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |")
    return out
