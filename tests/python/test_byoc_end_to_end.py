"""Issue 4 end to end: partitioned models built, exported, reloaded and run agree with the host.

The differential test generates random graphs and random ``ccompiler`` pattern tables; each
partitioned model (path 1 or path 2 at random) is built, exported to one file, loaded back and
compared with the unpartitioned model run on the host VM.
"""
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import partita
from partita import relax, tir
from partita.relax.backend import has_leaking_intermediate_variables
from partita.relax.dpl.pattern import is_op, wildcard

ELEMENTWISE = ["add", "subtract", "multiply", "divide"]


def _random_graph(rng):
    """A random DAG of ccompiler-friendly ops (and host-only ones) over 2-D float32 tensors."""
    m, k = rng.choice([1, 3, 8]), rng.choice([2, 5, 16])
    symbolic = rng.random() < 0.25
    rows = tir.Var("n", "int64") if symbolic else m
    x = relax.Var("x", relax.TensorStructInfo([rows, k], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([rows, k], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            values = [x, y]
            for _ in range(rng.randint(2, 8)):
                kind = rng.random()
                a = rng.choice(values)
                if kind < 0.45:
                    op = rng.choice(ELEMENTWISE)
                    b = rng.choice(values + [relax.const(np.float32(rng.uniform(0.5, 2.0)))])
                    if op == "divide":  # keep denominators away from zero
                        b = relax.const(np.full((k,), rng.uniform(0.5, 2.0), "float32"))
                    values.append(bb.emit(getattr(relax.op, op)(a, b)))
                elif kind < 0.65:
                    values.append(bb.emit(relax.op.nn.relu(a)))
                elif kind < 0.85:
                    w = relax.const(np.random.default_rng(rng.randint(0, 1 << 30)).standard_normal((k, k)).astype("float32") * 0.3)
                    values.append(bb.emit(relax.op.matmul(a, w)))
                else:  # host-only operators between offloaded regions
                    values.append(bb.emit(relax.op.tanh(a)))
            out = bb.emit_output(values[-1] if len(values) > 2 else relax.op.add(x, y))
        bb.emit_func_output(out)
    return bb.get(), rows, k


def _random_patterns(rng):
    """A random ccompiler pattern table: single ops and short fused chains, in random order."""
    singles = [(f"ccompiler.{op}", is_op(f"relax.{op}")(wildcard(), wildcard())) for op in ELEMENTWISE]
    singles += [("ccompiler.relu", is_op("relax.nn.relu")(wildcard())),
                ("ccompiler.matmul", is_op("relax.matmul")(wildcard(), wildcard()))]
    # ccompiler composites return one tensor, so chains reject matches whose intermediate
    # values are used outside them, as TVM backends do.
    def check(ctx):
        return not has_leaking_intermediate_variables(ctx)

    chains = [
        ("ccompiler.matmul_relu", is_op("relax.nn.relu")(is_op("relax.matmul")(wildcard(), wildcard())), check),
        ("ccompiler.add_relu", is_op("relax.nn.relu")(is_op("relax.add")(wildcard(), wildcard())), check),
        ("ccompiler.matmul_add", is_op("relax.add")(is_op("relax.matmul")(wildcard(), wildcard()), wildcard()), check),
    ]
    table = rng.sample(chains, rng.randint(0, len(chains))) + rng.sample(singles, rng.randint(1, len(singles)))
    return table


def _run(mod, inputs):
    vm = relax.VirtualMachine(relax.build(mod), partita.cpu())
    return vm["main"](*inputs)


def test_differential_random_graphs(tmp_path):
    rng = random.Random(20261129)
    offloaded = 0
    for case in range(300):
        mod, rows, k = _random_graph(rng)
        n = rng.choice([1, 4]) if not isinstance(rows, int) else rows
        data = np.random.default_rng(case)
        inputs = [data.standard_normal((n, k)).astype("float32") for _ in range(2)]
        expected = _run(mod, inputs)

        fuse = relax.transform.FuseOpsByPattern(_random_patterns(rng), annotate_codegen=rng.random() < 0.5)
        part = fuse(mod)
        if "Codegen" not in part.script():
            part = relax.transform.MergeCompositeFunctions()(part)
        assert relax.analysis.well_formed(part), part.script()
        offloaded += "Codegen" in part.script()

        path = str(tmp_path / f"case{case}.partita")
        relax.build(part, ["llvm", "ccompiler"]).export_library(path)
        vm = relax.VirtualMachine(partita.runtime.load_module(path), partita.cpu())
        got = vm["main"](*inputs)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=f"case {case}:\n{part.script()}")
    assert offloaded > 200, f"only {offloaded} of 300 graphs offloaded anything"


def test_large_weight_is_stored_once(tmp_path):
    # A 64 MiB weight used by an offloaded matmul: the artifact holds it once.
    w = np.random.default_rng(0).standard_normal((4096, 4096)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo([2, 4096], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.matmul(x, relax.const(w)))
        bb.emit_func_output(out)
    part = partita.relax.backend.cpu.ccompiler.partition_for_ccompiler(bb.get())
    path = str(tmp_path / "big.partita")
    relax.build(part, "ccompiler").export_library(path)
    size = os.path.getsize(path)
    assert w.nbytes <= size < w.nbytes + (4 << 20), f"artifact is {size} bytes for a {w.nbytes}-byte weight"
    xin = np.random.default_rng(1).standard_normal((2, 4096)).astype("float32")
    got = relax.VirtualMachine(partita.runtime.load_module(path))["main"](xin)
    np.testing.assert_allclose(got, xin @ w, rtol=1e-4, atol=1e-3)


def _exp_offloaded_module():
    x = relax.Var("x", relax.TensorStructInfo([4, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.add(x, x))
            out = bb.emit_output(relax.op.exp(a))
        bb.emit_func_output(out)
    # ccompiler has no exp: a pattern table that offers it anyway makes the codegen refuse.
    patterns = [("ccompiler.exp", is_op("relax.exp")(wildcard())),
                ("ccompiler.add", is_op("relax.add")(wildcard(), wildcard()))]
    return relax.transform.FuseOpsByPattern(patterns, annotate_codegen=True)(bb.get())


def test_fallback_runs_refused_functions_on_the_host(capfd):
    part = _exp_offloaded_module()
    ex = relax.build(part, "ccompiler", fallback=True)
    assert "fused_relax_exp_ccompiler" in capfd.readouterr().err
    xin = np.arange(16, dtype="float32").reshape(4, 4) / 16
    np.testing.assert_allclose(relax.VirtualMachine(ex)["main"](xin), np.exp(xin + xin), rtol=1e-6)


def test_without_fallback_the_error_names_the_function():
    with pytest.raises(Exception, match="fused_relax_exp_ccompiler"):
        relax.build(_exp_offloaded_module(), "ccompiler", fallback=False)


def test_fresh_process_runs_an_exported_model(tmp_path):
    x = relax.Var("x", relax.TensorStructInfo([10, 10], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([10, 10], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.multiply(x, y))
        bb.emit_func_output(out)
    path = str(tmp_path / "seed.partita")
    part = partita.relax.backend.cpu.ccompiler.partition_for_ccompiler(bb.get(), merge=False)
    relax.build(part, "ccompiler").export_library(path)
    code = ("import numpy as np, partita\n"
            f"vm = partita.relax.VirtualMachine(partita.runtime.load_module({path!r}))\n"
            "a = np.full((10, 10), 3, 'float32'); b = np.full((10, 10), 0.5, 'float32')\n"
            "print(float(vm['main'](a, b)[0, 0]))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": os.path.dirname(partita.__path__[0])})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1.5"
