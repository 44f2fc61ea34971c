"""TVM as the oracle for the text format (docs/tvm-oracle.md): random modules go through
apache-tvm's parser and printer, and TVM's text must parse in Partita, print back in the
conformance cases' dialect line for line what TVM printed (after the documented translation of
0.27's spellings), mean the module the source meant, and be parsed by TVM back to TVM's text.

Needs apache-tvm (`bash scripts/tvm_oracle.sh` makes .deps/tvm-venv and runs this); skipped
otherwise. PARTITA_ORACLE_MODULES sets the count (1,000 by default)."""
import difflib
import os

import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed: run scripts/tvm_oracle.sh for the oracle tests")
from tvm.script import from_source as tvm_parse  # noqa: E402

from partita import ir, script  # noqa: E402

import tvm_oracle as oracle  # noqa: E402

COUNT = int(os.environ.get("PARTITA_ORACLE_MODULES", "1000"))


def _diff(a, b):
    return "\n".join(difflib.unified_diff(a, b, "tvm", "partita", lineterm=""))


def test_random_modules_printed_by_tvm_parse_and_print_back():
    failures = []
    needles = {"symbolic variables": "n = T.int64()", "match_cast": "R.match_cast", "if/else": "if cond:",
               "call_pure_packed": "R.call_pure_packed", "call_packed": "R.call_packed", "tuples": "R.Tuple(",
               "primitive values": "R.prim_value", "shapes": "R.shape(", "strings": "R.str(",
               "calls of module functions": "Module.helper", "nested functions": "        def ",
               "float arguments": "T.float64(", "module attributes": "I.module_attrs", "impure": "pure=False",
               "private": "private=True", "attributes": "axis="}
    constructs = dict.fromkeys(needles, 0)
    for seed in range(COUNT):
        source = oracle.ModuleGenerator(seed).module()
        for name, needle in needles.items():
            constructs[name] += needle in source
        tvm_text = tvm_parse(source).script()
        ours = script.from_source(tvm_text)
        printed = ours.script()
        problems = []
        if not ir.structural_equal(ours, script.from_source(source)):
            problems.append("TVM's text parses to another module than the source")
        if printed != script.from_source(printed).script():
            problems.append("Partita's text is not a fixed point")
        want = oracle.comparable_lines(oracle.tvm_to_conformance_dialect(tvm_text))
        got = oracle.comparable_lines(printed)
        if want != got:
            problems.append("the printed lines differ:\n" + _diff(want, got))
        back = tvm_parse(oracle.partita_to_tvm_source(printed)).script()
        if back != tvm_text:
            problems.append("TVM reads Partita's text as another module:\n" + _diff(tvm_text.splitlines(), back.splitlines()))
        if problems:
            failures.append(f"seed {seed}: " + "; ".join(problems))
            if len(failures) >= 3:
                break
    print(f"{COUNT} modules compared; constructs written: {constructs}")
    assert not failures, "\n\n".join(failures)
    if COUNT >= 200:  # the generator must keep covering what the test is about
        missing = [k for k, v in constructs.items() if v < COUNT // 100]
        assert not missing, f"constructs the generator no longer writes: {missing}"
