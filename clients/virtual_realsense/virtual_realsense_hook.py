"""Opt-in redirect of ``import pyrealsense2`` to ``virtual_realsense``, run at interpreter start-up by
``virtual_realsense.pth``.

Only when ``FRANKA_SIM_CAMERAS=1`` is set does it put a finder first on ``sys.meta_path``; otherwise it does
nothing and a real pyrealsense2, if installed, is imported as usual. Standard library only, and nothing is
imported until the redirect is used, so start-up stays as fast as without it.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing would slow every interpreter start-up
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

ENV_VAR = "FRANKA_SIM_CAMERAS"
TARGET = "virtual_realsense"
# pyrealsense2 is a package whose compiled module is pyrealsense2.pyrealsense2; both names get the virtual one.
ALIASES = ("pyrealsense2", "pyrealsense2.pyrealsense2")


def enabled() -> bool:
    """Whether the environment asks for simulated cameras."""
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


class _AliasLoader:
    """Loads an alias as the already-importable ``virtual_realsense`` module itself (one module object)."""

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        import importlib

        module = importlib.import_module(TARGET)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._own_spec  # the import system set the alias's spec on it; keep the module's own
        module.pyrealsense2 = module  # type: ignore[attr-defined]  # for "from pyrealsense2 import pyrealsense2"


class RedirectFinder:
    """``sys.meta_path`` finder that answers the pyrealsense2 names with virtual_realsense."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in ALIASES:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(fullname, _AliasLoader(), is_package=fullname == ALIASES[0])


def install() -> None:
    """Put the redirect first on ``sys.meta_path`` (idempotent)."""
    if not any(isinstance(f, RedirectFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, RedirectFinder())


def install_if_enabled() -> bool:
    """What the .pth file calls: install the redirect when ``FRANKA_SIM_CAMERAS=1``; returns whether it did."""
    if enabled():
        install()
        return True
    return False
