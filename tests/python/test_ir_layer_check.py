"""scripts/check_layers.sh (run by ctest as check_layers), its ir-layer rule on the sources alone:
passes on this tree and catches an ir file that includes a header of a layer above it, in either
include spelling."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check_layers.sh")


def run(root):
    return subprocess.run(["bash", SCRIPT, "-", str(root)], capture_output=True, text=True, timeout=60)


def test_this_tree_passes():
    res = run(ROOT)
    assert res.returncode == 0, res.stderr


def test_includes_of_upper_layers_are_caught(tmp_path):
    (tmp_path / "src" / "ir").mkdir(parents=True)
    (tmp_path / "include" / "partita" / "ir").mkdir(parents=True)
    good = tmp_path / "src" / "ir" / "good.cc"
    good.write_text('#include "partita/ir/expr.h"\n#include "partita/runtime/tensor.h"\n#include <optional>\n')
    assert run(tmp_path).returncode == 0
    (tmp_path / "src" / "ir" / "bad.cc").write_text('#include "partita/ir/expr.h"\n#  include "partita/op/registry.h"\n')
    (tmp_path / "include" / "partita" / "ir" / "bad.h").write_text("#include <../transform/pass.h>\n")
    res = run(tmp_path)
    assert res.returncode == 1
    assert "bad.cc:2" in res.stderr and "partita/op/registry.h" in res.stderr
    assert "bad.h:1" in res.stderr
    assert "good.cc" not in res.stderr
