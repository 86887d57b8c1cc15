"""A stand-in for `pynput` with only its `keyboard` (keyboard.py): `import pynput` gives this package when
`FRANKA_SIM_KEYS=1` (virtual_spacemouse_hook)."""

from . import keyboard

__all__ = ["keyboard"]
