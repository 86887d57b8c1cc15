"""Where the MuJoCo models live: installed PyPI packages, found without importing them.

gym-hil            the Menagerie Panda with a Robotiq 2F-85 (gym_hil/assets/panda.xml)
dm-robotics-panda  the Franka hand (dm_robotics/panda/assets/panda/panda_hand.xml)
"""

from __future__ import annotations

import importlib.util
import os


def _package_dir(package: str, install: str) -> str:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the model package '{install}' is not installed (pip install --no-deps {install})")
    return spec.submodule_search_locations[0]


def _existing(path: str, install: str) -> str:
    if not os.path.isfile(path):
        raise RuntimeError(f"{install} is installed but has no {path}")
    return path


def panda_xml() -> str:
    """gym-hil's panda.xml (importing gym_hil itself would need gymnasium)."""
    return _existing(os.path.join(_package_dir("gym_hil", "gym-hil"), "assets", "panda.xml"), "gym-hil")


def franka_hand_xml() -> str:
    directory = os.path.join(_package_dir("dm_robotics", "dm-robotics-panda"), "panda", "assets", "panda")
    return _existing(os.path.join(directory, "panda_hand.xml"), "dm-robotics-panda")


def mesh_dirs() -> list[str]:
    """Folders the models' relative mesh paths are relative to (the hand's only if installed)."""
    dirs = [os.path.dirname(panda_xml())]
    try:
        dirs.append(os.path.dirname(franka_hand_xml()))
    except RuntimeError:
        pass
    return dirs
