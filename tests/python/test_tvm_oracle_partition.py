"""TVM as the oracle for partitioning (docs/tvm-oracle.md): random dataflow graphs with a
symbolic batch and random pattern tables of two backends go through FuseOpsByPattern (with and
without annotate_codegen) and MergeCompositeFunctions in apache-tvm and in Partita; the modules
must be structurally equal (Partita parses TVM's text), print the same lines (after the
documented translation), and TVM must read Partita's text back as its own result.

Problems on which TVM itself fails (it raises, or prints a module using an undefined variable)
are counted and left out. Needs apache-tvm (scripts/tvm_oracle.sh); skipped otherwise.
PARTITA_ORACLE_PROBLEMS sets the count (500 by default)."""
import difflib
import os

import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed: run scripts/tvm_oracle.sh for the oracle tests")
from tvm import relax as tvm_relax  # noqa: E402
from tvm.relax.dpl import pattern as tvm_dpl  # noqa: E402
from tvm.script import from_source as tvm_parse  # noqa: E402

from partita import ir, relax, script  # noqa: E402
from partita.relax.dpl import pattern as dpl  # noqa: E402

import tvm_oracle as oracle  # noqa: E402

COUNT = int(os.environ.get("PARTITA_ORACLE_PROBLEMS", "500"))


def _partition(relax_module, dpl_module, problem, mod):
    patterns = problem.patterns(dpl_module)
    mod = relax_module.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=problem.annotate)(mod)
    if problem.merge:
        mod = relax_module.transform.MergeCompositeFunctions()(mod)
    return mod


def test_random_partitioning_problems_give_tvms_modules():
    failures, tvm_failed, compared = [], [], 0
    paths = {"annotate": 0, "merge": 0, "composites": 0, "symbolic": 0}
    seed = 0
    while compared < COUNT:
        problem = oracle.PartitionProblem(seed)
        seed += 1
        try:
            tvm_text = _partition(tvm_relax, tvm_dpl, problem, tvm_parse(problem.source)).script()
            expected = script.from_source(tvm_text)
        except Exception as e:  # TVM raised, or printed an ill-formed module
            tvm_failed.append(f"seed {seed - 1}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
            continue
        compared += 1
        paths["annotate" if problem.annotate else "merge" if problem.merge else "composites"] += 1
        paths["symbolic"] += isinstance(problem.batch, str)
        ours = _partition(relax, dpl, problem, script.from_source(problem.source))
        printed = ours.script()
        problems = []
        if not ir.structural_equal(ours, expected):
            problems.append("structurally different")
        want = oracle.comparable_lines(oracle.tvm_to_conformance_dialect(tvm_text))
        got = oracle.comparable_lines(printed)
        if want != got:
            problems.append("lines differ:\n" + "\n".join(difflib.unified_diff(want, got, "tvm", "partita", lineterm="")))
        elif tvm_parse(oracle.partita_to_tvm_source(printed)).script() != tvm_text:
            problems.append("TVM reads Partita's text as another module")
        if problems:
            failures.append(f"seed {seed - 1} {problem.table} annotate={problem.annotate} merge={problem.merge}: "
                            + "; ".join(problems))
            if len(failures) >= 3:
                break
    print(f"{compared} problems compared, {paths}; TVM failed on {len(tvm_failed)} more")
    assert not failures, "\n\n".join(failures)
    # TVM's own failures stay rare, and every path is exercised.
    assert len(tvm_failed) <= COUNT // 20, "\n".join(tvm_failed)
    assert all(v >= COUNT // 10 for v in paths.values()), paths
