"""Makes the seed corpora of tests/fuzz/corpus (run once; the outputs are committed):
  parser/    the conformance cases' TVMScript (../shared/conformance/cases/*/{before,expected}.py)
  onnx/      the bundled model's first layers (models/mobilenet_v2_small.onnx, cut with
             onnx.utils.extract_model so a seed stays small) and Debian's ONNX node tests
  artifact/  small artifacts: host-only, and the bundled model's first layers partitioned for
             cblas + dnnl and for each CPU backend alone (the demo's artifact, cut to size)
  vm_inputs/ calls of vm_inputs_fuzzer.cc's functions in that harness's byte encoding

    PYTHONPATH=build/python python3 tests/fuzz/make_seeds.py
"""
import glob
import os
import random
import shutil
import sys
import tempfile

import onnx
import onnx.utils

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")


def fresh(name):
    d = os.path.join(CORPUS, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def parser_seeds():
    out = fresh("parser")
    cases = os.path.join(ROOT, "..", "shared", "conformance", "cases")
    for path in sorted(glob.glob(os.path.join(cases, "*", "*.py"))):
        case, file = path.split(os.sep)[-2:]
        if file in ("before.py", "expected.py"):
            shutil.copy(path, os.path.join(out, f"{case}-{file[:-3]}.txt"))


def mobilenet_head(path, nodes):
    """The bundled model up to its `nodes`-th node's output."""
    model = onnx.load(os.path.join(ROOT, "models", "mobilenet_v2_small.onnx"))
    inputs = [i.name for i in model.graph.input]
    outputs = [model.graph.node[nodes - 1].output[0]]
    with tempfile.NamedTemporaryFile(suffix=".onnx") as full:
        onnx.save(model, full.name)
        onnx.utils.extract_model(full.name, path, inputs, outputs)


def onnx_seeds():
    out = fresh("onnx")
    mobilenet_head(os.path.join(out, "mobilenet_v2_small_head.onnx"), 9)
    node_tests = sorted(glob.glob("/usr/share/libonnx-testdata/data/node/*/model.onnx"))
    random.Random(11).shuffle(node_tests)
    for path in node_tests[:60]:
        shutil.copy(path, os.path.join(out, path.split(os.sep)[-2] + ".onnx"))


def artifact_seeds():
    import partita
    from partita import relax
    from partita.relax.frontend.onnx import from_onnx
    from partita.relax.backend.cpu import cblas, dnnl
    from partita.script import from_source
    out = fresh("artifact")
    with tempfile.TemporaryDirectory() as tmp:
        head = os.path.join(tmp, "head.onnx")
        mobilenet_head(head, 9)
        mod = from_onnx(onnx.load(head))
        builds = {"mobilenet_head_host": mod,
                  "mobilenet_head_dnnl": dnnl.partition_for_dnnl(mod),
                  "mobilenet_head_cblas_dnnl": dnnl.partition_for_dnnl(cblas.partition_for_cblas(mod))}
        builds["symbolic_host"] = from_source('''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            z: R.Tensor((n, 4), dtype="float32") = R.add(x, y)
            s: R.Tensor((n, 4), dtype="float32") = R.nn.softmax(z, axis=-1)
            R.output(s)
        return s
''')
        for name, m in builds.items():
            data = relax.build(m).save()
            assert len(data) < 65536, (name, len(data))
            with open(os.path.join(out, name + ".partita"), "wb") as f:
                f.write(data)


def vm_input_seeds():
    """Valid and nearly valid calls: (model, function, count, then per argument kind, dtype,
    rank, dims, bytes) as vm_inputs_fuzzer.cc reads them."""
    out = fresh("vm_inputs")
    rng = random.Random(5)
    for i in range(24):
        b = bytearray([i % 3, rng.randrange(5), 2])
        for _ in range(2):
            b += bytes([0, 0, 2, rng.randrange(1, 9), 8])  # a float32 tensor of (k, 8)
            b += bytes(rng.randrange(256) for _ in range(64))
        with open(os.path.join(out, f"call{i:02d}"), "wb") as f:
            f.write(b)


if __name__ == "__main__":
    parser_seeds()
    onnx_seeds()
    artifact_seeds()
    vm_input_seeds()
    for d in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, d))
        print(d, len(files), "files", sum(os.path.getsize(os.path.join(CORPUS, d, f)) for f in files), "bytes")
    sys.exit(0)
