"""graphtext.py: what scripts/micro/bert-graph.py and llama-graph.py share
to write a .graph text without torch: the weights' and operators' lines
as they are declared, and the file with its safetensors sidecar of the
weights that have values (the ones the passes read; the others get seeded
random values when run).
"""
import json
import struct

import numpy as np


class Graph:
    """Lines of a .graph being written: weight() declares a weight (with an
    optional value for the sidecar), op() an operator; both return the
    name."""

    def __init__(self):
        self.w, self.lines, self.vals = [], [], {}

    def weight(self, name, shape, value=None, dtype=""):
        self.w.append("weight %s: %s[%s]" %
                      (name, dtype, ",".join(map(str, shape))))
        if value is not None:
            self.vals[name] = np.asarray(value, np.float32).reshape(shape)
        return name

    def op(self, name, text):
        self.lines.append("%s = %s" % (name, text))
        return name

    def write(self, out, head, outputs):
        """out: the .graph path; head: the lines before the weights (comment,
        graph name, inputs); outputs: the output tensors' names."""
        text = head + self.w + self.lines + ["output " + ", ".join(outputs)]
        with open(out, "w") as f:
            f.write("\n".join(text) + "\n")
        write_sidecar(out, self.vals, [l.split()[1][:-1] for l in self.w])


def write_sidecar(graph, vals, order):
    side = graph[:-6] if graph.endswith(".graph") else graph
    side += ".safetensors"
    head, blobs, off = {}, [], 0
    for name in order:
        if name not in vals:
            continue
        b = np.ascontiguousarray(vals[name], "<f4").tobytes()
        head[name] = {"dtype": "F32", "shape": list(vals[name].shape),
                      "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(head).encode()
    h += b" " * (-len(h) % 8)
    with open(side, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
