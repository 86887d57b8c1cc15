"""scripts/hil_serl.py as a module, for the code that imports it rather than runs it (benchmarks/worlds.py and the
tests): loaded once, under a name of its own (`hil_serl_runner`: tests/hil_serl.py is the tests' module named
hil_serl), which its dataclasses look their module up by."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

NAME = "hil_serl_runner"


def runner():
    """The runner's module, loaded on first use."""
    if NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(NAME, Path(__file__).resolve().parent / "hil_serl.py")
        sys.modules[NAME] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[NAME])
    return sys.modules[NAME]
