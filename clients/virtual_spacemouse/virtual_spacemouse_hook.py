"""Opt-in redirect of ``import easyhid`` and ``import pynput`` to ``virtual_spacemouse``, run at interpreter
start-up by ``virtual_spacemouse.pth``.

``FRANKA_SIM_SPACEMOUSE=1``: ``easyhid`` (and ``easyhid.easyhid``) is ``virtual_spacemouse.easyhid``, so
HIL-SERL's pyspacemouse finds the simulation's SpaceMouse. ``FRANKA_SIM_KEYS=1``: ``pynput`` and
``pynput.keyboard`` are ``virtual_spacemouse.pynput``, so the scripts' keyboard listeners hear the keys
posted to the server. Without a variable nothing changes and the real package, if installed, is imported.
Standard library only, and nothing is imported until a redirected name is, so start-up stays as fast.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing would slow every interpreter start-up
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

SPACEMOUSE_ENV = "FRANKA_SIM_SPACEMOUSE"
KEYS_ENV = "FRANKA_SIM_KEYS"
# variable -> {name imported: module that answers it}
REDIRECTS = {
    SPACEMOUSE_ENV: {"easyhid": "virtual_spacemouse.easyhid", "easyhid.easyhid": "virtual_spacemouse.easyhid"},
    KEYS_ENV: {"pynput": "virtual_spacemouse.pynput", "pynput.keyboard": "virtual_spacemouse.pynput.keyboard"},
}
PACKAGES = ("easyhid", "pynput")  # names imported as packages (they have submodules)


def enabled(variable: str) -> bool:
    """Whether the environment asks for the stand-in (1, true, yes, on)."""
    return os.environ.get(variable, "").strip().lower() in ("1", "true", "yes", "on")


class _AliasLoader:
    """Loads an alias as the already-importable target module itself (one module object)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        import importlib

        module = importlib.import_module(self.target)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._own_spec  # the import system set the alias's spec on it; keep the module's own
        if self.target.endswith(".easyhid"):
            module.easyhid = module  # type: ignore[attr-defined]  # for "from easyhid import easyhid"


class RedirectFinder:
    """``sys.meta_path`` finder that answers the redirected names with the stand-in modules."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = dict(names)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        module = self.names.get(fullname)
        if module is None:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(fullname, _AliasLoader(module), is_package=fullname in PACKAGES)


def install(*variables: str) -> None:
    """Put the redirects of `variables` (default: all) first on ``sys.meta_path`` (idempotent)."""
    names: dict[str, str] = {}
    for variable in variables or tuple(REDIRECTS):
        names.update(REDIRECTS[variable])
    finder = next((f for f in sys.meta_path if isinstance(f, RedirectFinder)), None)
    if finder is None:
        sys.meta_path.insert(0, RedirectFinder(names))
    else:
        finder.names.update(names)


def install_if_enabled() -> list[str]:
    """What the .pth file calls: the redirects whose variable is set; returns those variables."""
    chosen = [variable for variable in REDIRECTS if enabled(variable)]
    if chosen:
        install(*chosen)
    return chosen
