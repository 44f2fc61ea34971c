"""The `partita` command line: compile, run, show and report on a small conv+relu+gemm ONNX model
built here, checked against a numpy reference; and its error handling."""
import os
import re
import subprocess

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARTITA = os.environ.get("PARTITA_CLI") or os.path.join(
    ROOT, os.environ.get("PARTITA_BUILD_DIR", "build"), "partita")

pytestmark = pytest.mark.skipif(not os.path.exists(PARTITA), reason=f"{PARTITA} is not built")


def weights():
    rng = np.random.default_rng(0)
    return {
        "W": (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32),
        "B": rng.standard_normal(4).astype(np.float32),
        "W2": (rng.standard_normal((256, 10)) * 0.1).astype(np.float32),
        "B2": rng.standard_normal(10).astype(np.float32),
    }


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    w = weights()
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv0", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu0"),
        helper.make_node("Flatten", ["r"], ["f"], name="flat0", axis=1),
        # A negation: an operator neither dnnl nor cblas takes, so the host runs one.
        helper.make_node("Neg", ["f"], ["g"], name="neg0"),
        helper.make_node("Gemm", ["g", "W2", "B2"], ["y"], name="gemm0"),
    ]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(v, k) for k, v in w.items()])
    path = tmp_path_factory.mktemp("cli") / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def reference(x):
    w = weights()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, 4, 8, 8), np.float64)
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 8, j:j + 8], w["W"][:, :, i, j])
    out = np.maximum(out + w["B"].reshape(1, 4, 1, 1), 0)
    return -out.reshape(1, 256) @ w["W2"] + w["B2"]


def cli(*args, env=None):
    return subprocess.run([PARTITA, *map(str, args)], capture_output=True, text=True, timeout=300, env=env)


def check_error(res, *fragments):
    assert res.returncode == 1, res.stdout + res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("partita: error: "), res.stderr
    assert "Traceback" not in res.stderr and "terminate called" not in res.stderr
    for f in fragments:
        assert f in last, last


@pytest.mark.parametrize("backends,path", [(None, 2), ("dnnl,cblas", 2), ("cblas,dnnl", 1), ("cblas", 2),
                                           ("auto:dnnl,cblas", 2)])
def test_compile_run_matches_numpy(model, tmp_path, backends, path):
    art = tmp_path / "m.partita"
    args = ["compile", model, "-o", art, "--path", path]
    if backends:
        args += ["--backends", backends, "--target", "dnnl -num_threads=1"]
    # Collage's cost cache goes into the test's own directory.
    res = cli(*args, env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache")))
    if backends and backends.startswith("auto"):
        assert "predicted" in res.stdout and (tmp_path / "cache" / "partita" / "collage_costs.json").exists()
    assert res.returncode == 0, res.stderr
    assert "compiled" in res.stdout and art.exists()
    assert "build" in res.stderr and "export" in res.stderr  # progress lines (not a TTY)
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    res = cli("run", art, "--input", f"x={tmp_path / 'x.npy'}", "--repeat", 3, "--output-dir", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    y = np.load(tmp_path / "out" / "output_0.npy")
    assert y.shape == (1, 10) and y.dtype == np.float32
    np.testing.assert_allclose(y, reference(x), rtol=1e-4, atol=1e-4)
    m = re.search(r"checksum (\S+)", res.stdout)
    assert m and abs(float(m.group(1)) - float(y.astype(np.float64).sum())) < 1e-4
    lat = re.search(r"latency over 3 runs .*mean (\S+) ms\s+median (\S+) ms\s+p90 (\S+) ms\s+min (\S+) ms", res.stdout)
    assert lat, res.stdout
    mean, median, p90, mn = map(float, lat.groups())
    assert 0 <= mn <= median <= p90 and mn <= mean
    # the first (untimed) run is reported with the load it completes, and is not one of the timed runs
    first = re.search(r"load and first run: (\S+) ms", res.stdout)
    assert first and float(first.group(1)) > 0, res.stdout


def test_collage_backend_spec_errors(model, tmp_path):
    check_error(cli("compile", model, "--backends", "automatic", "-o", tmp_path / "a.partita"),
                "expected 'auto' or 'auto:NAME,...'")
    check_error(cli("compile", model, "--backends", "auto:nosuch", "-o", tmp_path / "a.partita"),
                "unknown backend 'nosuch'")


def test_compile_summary_counts_partitions(model, tmp_path):
    res = cli("compile", model, "--backends", "cblas,dnnl", "-o", tmp_path / "a.partita")
    assert res.returncode == 0, res.stderr
    assert "cblas: 1 partition, dnnl: 1 partition, host: 1 ops" in res.stdout  # the negation


def test_compile_summary_counts_what_runs_where_for_cuda(model, tmp_path):
    """With --target cuda, the summary is counted after build's fusion by kind: the generated
    kernels' calls on cuda:0, nothing left on the host, one copy (the input's, skipped at run
    time when the input is already on the GPU). NVRTC compiles here; no GPU is needed."""
    res = cli("compile", model, "--target", "cuda", "-o", tmp_path / "c.partita", "-q")
    if res.returncode != 0 and "cuda" in res.stderr and "unknown" in res.stderr.lower():
        pytest.skip("this build has no cuda target: " + res.stderr.strip())
    assert res.returncode == 0, res.stderr
    m = re.search(r"cuda on cuda:0: (\d+) calls?, host: 0 ops, device copies: 1", res.stdout)
    assert m and int(m.group(1)) >= 1, res.stdout


BOOL_ADD_MODULE = """@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32"), m: R.Tensor((4,), "bool")):
        with R.dataflow():
            a = R.add(m, m)
            y = R.multiply(x, x)
            R.output(a, y)
        return (a, y)
"""


def test_compile_summary_names_operators_left_on_the_host(tmp_path):
    """With a device target, the summary names the operators the host still runs (bool
    arithmetic has no cuda kernel), so a user sees what breaks the GPU run."""
    src = tmp_path / "bool_add.py"
    src.write_text(BOOL_ADD_MODULE)
    res = cli("compile", src, "--target", "cuda", "-o", tmp_path / "b.partita", "-q")
    if res.returncode != 0 and "cuda" in res.stderr and "unknown" in res.stderr.lower():
        pytest.skip("this build has no cuda target: " + res.stderr.strip())
    assert res.returncode == 0, res.stderr
    assert "cuda on cuda:0: 1 call, host: 1 ops (relax.add)" in res.stdout, res.stdout


def test_run_random_inputs_are_seeded(model, tmp_path):
    art = tmp_path / "m.partita"
    assert cli("compile", model, "-o", art, "-q").returncode == 0
    runs = [cli("run", art, "--seed", s, "--repeat", 1) for s in (7, 7, 8)]
    for r in runs:
        assert r.returncode == 0, r.stderr
        assert "input  x            float32[1, 3, 8, 8]  random" in r.stdout
        assert "float32[1, 10]" in r.stdout
    out = [re.search(r"checksum (\S+)", r.stdout).group(1) for r in runs]
    assert out[0] == out[1] and out[0] != out[2]


def test_show(model, tmp_path):
    res = cli("show", model)
    assert res.returncode == 0, res.stderr
    assert "@I.ir_module" in res.stdout and "R.nn.conv2d" in res.stdout and "Codegen" not in res.stdout
    res = cli("show", model, "--backends", "dnnl")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count('"Codegen": "dnnl"') == 2 and "dnnl.conv2d_bias_relu" in res.stdout
    # A TVMScript module (with its constants) is accepted too, and partitions the same way.
    text = cli("show", model, "--metadata").stdout
    (tmp_path / "module.py").write_text(text)
    res = cli("show", tmp_path / "module.py", "--backends", "cblas")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count('"Codegen": "cblas"') == 1


def report_rows(text):
    rows = {}
    for line in text.splitlines():
        m = re.match(r"(\w+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)%\s+(.*)", line)
        if m and m.group(1) != "backend":
            rows[m.group(1)] = dict(partitions=m.group(2), ops=int(m.group(3)), mflops=float(m.group(4)),
                                    mb=float(m.group(5)), share=float(m.group(6)), operators=m.group(7))
    return rows


def test_report_placement_explains_collage(model, tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    res = cli("report", model, "--backends", "auto:dnnl,cblas", "--placement", env=env)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "placement by measurement (Collage)" in out
    table = out[out.index("binding "):]
    conv = [line for line in table.splitlines() if "relax.nn.conv2d" in line]
    assert conv and "dnnl.conv2d" in conv[0]  # its dnnl alternative, with a cost
    m = re.search(r"predicted (\S+) us, measured (\S+) us", out)
    assert m and float(m.group(1)) > 0 and float(m.group(2)) > 0
    # Validation: the search's placement against each fixed configuration, run end to end.
    assert re.search(r"validation \(.*\): chosen (\S+), measured (\S+) us", out)
    for name in ["collage (search)", "dnnl", "cblas", "dnnl,cblas", "cblas,dnnl"]:
        assert re.search(rf"^{re.escape(name)}\s+\d+\s+\S+\s+\S+", out, re.M), name
    # The placement graph: every operator annotated with its alternatives' costs.
    dot = tmp_path / "p.dot"
    res = cli("report", model, "--backends", "auto:dnnl,cblas", "--placement", "--dot", dot, env=env)
    assert res.returncode == 0, res.stderr
    text = dot.read_text()
    assert re.search(r'label="nn\.conv2d\\non \w+; host [\d.]+, dnnl [\d.]+', text), text
    assert 'tooltip="lv = relax.nn.conv2d: placed on' in text
    check_error(cli("report", model, "--backends", "cblas", "--placement"), "use it with --backends auto")


def test_report_counts(model):
    res = cli("report", model, "--backends", "cblas,dnnl")
    assert res.returncode == 0, res.stderr
    rows = report_rows(res.stdout)
    assert list(rows) == ["cblas", "dnnl", "host"]
    assert rows["cblas"]["partitions"] == "1" and rows["cblas"]["operators"] == "add x1, matmul x1"
    assert rows["dnnl"]["partitions"] == "1" and rows["dnnl"]["operators"] == "add x1, nn.conv2d x1, nn.relu x1, reshape x1"
    assert rows["host"]["operators"] == "negative x1"  # the conv bias reshape is folded at import
    # conv 2*256*27 per output pixel... : 13824 + bias/relu 512; gemm 2*10*256 + bias 10.
    # The negation: one per element.
    conv, gemm, neg = 2 * 256 * 27 + 256 + 256, 2 * 10 * 256 + 10, 256
    assert rows["cblas"]["share"] == pytest.approx(100 * gemm / (conv + gemm + neg), abs=0.05)
    assert rows["dnnl"]["share"] == pytest.approx(100 * conv / (conv + gemm + neg), abs=0.05)
    assert f"total: {(conv + gemm + neg) / 1e6:.3f} MFLOPs" in res.stdout
    # Bytes moved (float32): the matmul reads (1, 256) and (256, 10) and writes (1, 10); the bias
    # add reads (1, 10) and (10,) and writes (1, 10).
    assert rows["cblas"]["mb"] == pytest.approx((256 + 2560 + 10 + 3 * 10) * 4 / 1e6, abs=5e-4)
    # dnnl alone takes both and the flatten (the negation between them keeps two partitions);
    # host only: no partitions.
    rows = report_rows(cli("report", model, "--backends", "dnnl").stdout)
    assert rows["dnnl"]["partitions"] == "2" and rows["dnnl"]["ops"] == 6
    assert rows["dnnl"]["share"] == pytest.approx(100 * (conv + gemm) / (conv + gemm + neg), abs=0.05)
    rows = report_rows(cli("report", model).stdout)
    assert list(rows) == ["host"] and rows["host"]["ops"] == 7


def test_report_svg(model, tmp_path):
    svg, dot = tmp_path / "g.svg", tmp_path / "g.dot"
    res = cli("report", model, "--backends", "cblas,dnnl", "--svg", svg, "--dot", dot)
    assert res.returncode == 0, res.stderr
    text = svg.read_text()
    assert text.lstrip().startswith(("<?xml", "<svg")) and text.rstrip().endswith("</svg>")
    import xml.etree.ElementTree as ET
    ET.fromstring(text.encode())  # well-formed
    assert text.count('class="cluster"') == 3  # two partitions and the legend
    src = dot.read_text()
    assert "cluster_0" in src and "cluster_1" in src
    assert "#7fb3e6" in src and "#f2b36b" in src and "#d9d9d9" in src  # dnnl, cblas, host colours


def test_report_svg_without_graphviz(model, tmp_path):
    res = cli("report", model, "--svg", tmp_path / "g.svg", env={"PATH": str(tmp_path)})
    check_error(res, "Graphviz", "'dot' was not found")
    assert "host" in res.stdout  # the table still came out


def test_errors(model, tmp_path):
    art = tmp_path / "m.partita"
    assert cli("compile", model, "-o", art, "-q").returncode == 0
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(model.read_bytes()[:100])
    (tmp_path / "bad.partita").write_bytes(b"garbage")
    np.save(tmp_path / "small.npy", np.zeros((1, 3, 4, 4), np.float32))
    np.save(tmp_path / "int.npy", np.zeros((1, 3, 8, 8), np.int32))
    (tmp_path / "broken.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'")

    check_error(cli("compile", tmp_path / "missing.onnx", "-o", art), "missing.onnx", "no such file")
    check_error(cli("compile", bad, "-o", art), "bad.onnx")
    check_error(cli("report", bad), "bad.onnx")
    check_error(cli("compile", model, "--backends", "dnnl,foo", "-o", art), "unknown backend 'foo'", "dnnl")
    check_error(cli("show", model, "--backends", "nope"), "unknown backend 'nope'")
    check_error(cli("compile", model, "--target", "dnnl -num_threads=two", "-o", art), "num_threads")
    check_error(cli("run", art, "--input", "x"), "expected NAME=FILE.npy")
    check_error(cli("run", art, "--input", f"y={tmp_path / 'small.npy'}"), "no input 'y'", "inputs: x")
    check_error(cli("run", art, "--input", f"x={tmp_path / 'small.npy'}"), "shape mismatch", "[1, 3, 8, 8]", "[1, 3, 4, 4]")
    check_error(cli("run", art, "--input", f"x={tmp_path / 'int.npy'}"), "shape mismatch", "int32")
    check_error(cli("run", art, "--input", f"x={tmp_path / 'broken.npy'}"), "broken.npy")
    check_error(cli("run", art, "--input", f"x={tmp_path / 'none.npy'}"), "none.npy")
    check_error(cli("run", tmp_path / "bad.partita"), "bad.partita")
    check_error(cli("run", tmp_path / "nothing.partita"), "nothing.partita")
    check_error(cli("run", art, "--repeat", 0), "--repeat")
    check_error(cli("frobnicate"))
    check_error(cli("compile", model))  # -o missing


def test_progress_redraws_in_place_on_a_terminal(model, tmp_path):
    import pty
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([PARTITA, "compile", str(model), "-o", str(tmp_path / "m.partita")],
                              stdout=subprocess.PIPE, stderr=slave, timeout=300)
        os.close(slave)
        slave = None
        chunks = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    assert proc.returncode == 0
    err = b"".join(chunks).decode()
    assert "\r\x1b[K" in err  # lines are redrawn, not appended
    assert re.search(r"\* import m\.onnx\s+\d+\.\d+s\s+done", err) and "build" in err


def test_run_profile_lists_backend_and_host_calls(model, tmp_path):
    art = tmp_path / "p.partita"
    assert cli("compile", model, "--backends", "cblas,dnnl", "-o", art, "-q").returncode == 0
    res = cli("run", art, "--repeat", 1, "--profile")
    assert res.returncode == 0, res.stderr
    table = res.stdout.split("profile of one more run:")[1]
    rows = {line.split()[0]: line.split() for line in table.strip().splitlines()[1:]}
    assert any(n.endswith("_cblas") and r[1] == "extern" and r[2] == "1" for n, r in rows.items()), table
    assert any(n.endswith("_dnnl") and r[1] == "extern" for n, r in rows.items()), table
    assert "(VM:" in rows, table  # the flatten is a view: VM time, no kernel
    assert "total" in rows


def test_run_device_option(model, tmp_path):
    """`run --device`: the CPU runs as before; a device this machine lacks, or a misspelt one, is
    one clear error line (exit 1), never a crash or a silent host run."""
    art = tmp_path / "m.partita"
    assert cli("compile", model, "-o", art).returncode == 0
    res = cli("run", art, "--device", "cpu", "-n", "2")
    assert res.returncode == 0 and "latency over 2 runs" in res.stdout
    res = cli("run", art, "--device", "gpu0")
    assert res.returncode == 1 and res.stderr.startswith("partita: error:") and "gpu0" in res.stderr
    try:
        import partita
        has_gpu = partita.cuda(0).exist
    except Exception:
        has_gpu = False
    if not has_gpu:
        res = cli("run", art, "--device", "cuda")
        assert res.returncode == 1 and "cuda" in res.stderr, res.stderr


def test_run_makes_and_prints_float16_tensors(tmp_path):
    # float16 models (exported with .half()) must run and print: random float16 inputs, outputs
    # printed through float.
    src = tmp_path / "h.py"
    src.write_text('''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float16")) -> R.Tensor((3, 2), dtype="float16"):
        with R.dataflow():
            lv = R.reshape(x, R.shape([3, 2]))
            R.output(lv)
        return lv
''')
    art = tmp_path / "h.partita"
    assert cli("compile", src, "-o", art).returncode == 0
    res = cli("run", art, "--repeat", 1, "--output-dir", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert "float16[3, 2]" in res.stdout
    y = np.load(tmp_path / "out" / "output_0.npy")
    assert y.dtype == np.float16 and y.shape == (3, 2) and np.all(np.abs(y) <= 1)
