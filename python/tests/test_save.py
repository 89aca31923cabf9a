"""test_save.py: Graph.save of a .graph writes the weight values to the
.safetensors sidecar beside it, as one unit with the graph, and
superopt.load reads them back (docs/reliability.md). Before, save wrote the
graph alone and load ignored the sidecar: the reloaded graph ran on seeded
random weights."""
import numpy as np
import pytest

import superopt

ort = pytest.importorskip("onnxruntime")


def test_save_graph_keeps_weights(small_model, x, tmp_path):
    g = superopt.load_onnx(small_model)
    (want,) = g.run([x])
    path = tmp_path / "m.graph"
    g.save(str(path))
    assert (tmp_path / "m.safetensors").stat().st_size > 0
    (got,) = superopt.load(str(path)).run([x])
    assert np.array_equal(got, want)
    # a device gets the graph only, and is refused when there are values
    with pytest.raises(superopt.SuperoptError, match="device or pipe"):
        g.save("/dev/null")
