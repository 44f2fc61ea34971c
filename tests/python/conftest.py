"""Test setup: make the built package importable (build/python) when PYTHONPATH does not."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_PY = os.path.join(ROOT, os.environ.get("PARTITA_BUILD_DIR", "build"), "python")
if BUILD_PY not in sys.path:
    sys.path.insert(0, BUILD_PY)
