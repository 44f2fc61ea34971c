"""Runs every case under ../shared/conformance/cases (new cases are picked up automatically).

A case passes when ``transform(mod)`` is structurally equal to the parsed ``expected.py`` and
prints as ``expected.py`` line for line (trailing whitespace ignored). A folder holding only
``expected.py`` is a round-trip case: parse, print, compare the text.
"""
import importlib.util
import os

import pytest

from partita import ir, script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES_DIR = os.path.normpath(os.path.join(ROOT, "..", "shared", "conformance", "cases"))


def _case_names():
    if not os.path.isdir(CASES_DIR):
        return []
    return sorted(d for d in os.listdir(CASES_DIR) if os.path.isfile(os.path.join(CASES_DIR, d, "expected.py")))


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _lines(text):
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _load_transform(case_dir):
    path = os.path.join(case_dir, "transform.py")
    spec = importlib.util.spec_from_file_location("conformance_" + os.path.basename(case_dir), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cases_exist():
    assert _case_names(), f"no conformance cases found in {CASES_DIR}"


@pytest.mark.parametrize("case", _case_names())
def test_conformance_case(case):
    case_dir = os.path.join(CASES_DIR, case)
    expected_path = os.path.join(case_dir, "expected.py")
    expected_text = _read(expected_path)
    expected = script.from_source(expected_text, expected_path)

    if os.path.isfile(os.path.join(case_dir, "transform.py")):
        module = _load_transform(case_dir)
        if hasattr(module, "build"):
            before = module.build()
        else:
            before_path = os.path.join(case_dir, "before.py")
            before = script.from_source(_read(before_path), before_path)
        result = module.transform(before)
    else:
        result = expected  # round trip: the parsed text must print back unchanged

    if result is not expected:
        ir.assert_structural_equal(result, expected)
    assert _lines(result.script()) == _lines(expected_text)
