"""CollagePartition from Python: placement by measurement among backends and the host, in the
form relax.build takes, computing what the host computes; the cost cache; errors."""
import numpy as np
import pytest

import partita
from partita import relax

SE_BLOCK = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 16, 14, 14), dtype="float32"), w: R.Tensor((16, 16, 3, 3), dtype="float32"), w1: R.Tensor((4, 16, 1, 1), dtype="float32"), w2: R.Tensor((16, 4, 1, 1), dtype="float32")) -> R.Tensor((1, 16, 14, 14), dtype="float32"):
        with R.dataflow():
            lv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            lv1 = R.nn.relu(lv)
            lv2 = R.mean(lv1, axis=[2, 3], keepdims=True)
            lv3 = R.nn.conv2d(lv2, w1)
            lv4 = R.nn.relu(lv3)
            lv5 = R.nn.conv2d(lv4, w2)
            lv6 = R.sigmoid(lv5)
            lv7 = R.multiply(lv1, lv6)
            R.output(lv7)
        return lv7
"""


def _inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype("float32") * 0.3
            for s in [(1, 16, 14, 14), (16, 16, 3, 3), (4, 16, 1, 1), (16, 4, 1, 1)]]


def _run(mod, inputs):
    out = relax.VirtualMachine(relax.build(mod), partita.cpu())["main"](*inputs)
    return np.asarray(out.numpy() if hasattr(out, "numpy") else out)


def test_collage_places_and_matches_the_host(tmp_path):
    mod = partita.script.from_source(SE_BLOCK)
    cache = str(tmp_path / "costs.json")
    placed, parts, stats = relax.transform.collage_partition(mod, ["dnnl"], cost_cache=cache)
    assert relax.analysis.well_formed(placed)
    assert stats["measured"] > 0 and stats["candidates"] >= 8
    assert {p["backend"] for p in parts} <= {"dnnl", "host"}
    assert all(p["cost_us"] >= 0 for p in parts)
    assert "predicted" in stats["summary"]
    np.testing.assert_allclose(_run(placed, _inputs()), _run(mod, _inputs()), rtol=1e-4, atol=1e-4)
    # The pass form, reading every cost from the cache this time.
    again = relax.transform.CollagePartition(["dnnl"], cost_cache=cache)(mod)
    assert partita.ir.structural_equal(again, placed)
    _, _, stats2 = relax.transform.collage_partition(mod, ["dnnl"], cost_cache=cache)
    assert stats2["measured"] == 0 and stats2["cached"] > 0


def test_collage_validates_against_the_fixed_configuration(tmp_path):
    mod = partita.script.from_source(SE_BLOCK)
    cache = str(tmp_path / "costs.json")
    placed, _, stats = relax.transform.collage_partition(mod, ["dnnl"], cost_cache=cache)
    runs = {p["name"]: p for p in stats["placements"]}
    # The search's, dnnl alone's and, when the fitted partition cost changed the search's answer, the
    # new one's (run against the fastest before it).
    assert {"collage", "dnnl"} <= set(runs) <= {"collage", "dnnl", "collage-refit"} and stats["chosen"] in runs
    assert all(p["measured_us"] > 0 and not p["cached"] for p in runs.values())
    if "collage-refit" not in runs:
        assert runs[stats["chosen"]]["measured_us"] == min(p["measured_us"] for p in runs.values())
    assert stats["boundary_us"]["dnnl"] >= 0 and "validation" in stats["summary"]
    np.testing.assert_allclose(_run(placed, _inputs()), _run(mod, _inputs()), rtol=1e-4, atol=1e-4)
    _, _, again = relax.transform.collage_partition(mod, ["dnnl"], cost_cache=cache)
    assert again["chosen"] == stats["chosen"] and all(p["cached"] for p in again["placements"])
    _, _, off = relax.transform.collage_partition(mod, ["dnnl"], cost_cache=cache, validate=False)
    assert off["chosen"] == "collage" and all(p["measured_us"] == 0 for p in off["placements"])


def test_collage_errors():
    mod = partita.script.from_source(SE_BLOCK)
    with pytest.raises(ValueError, match="no_such_backend"):  # not a target kind
        relax.transform.collage_partition(mod, ["no_such_backend"], cost_cache="none")
    with pytest.raises(ValueError, match="no backends"):
        relax.transform.collage_partition(mod, [], cost_cache="none")
