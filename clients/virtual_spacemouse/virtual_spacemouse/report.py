"""The HID input reports of a 3Dconnexion SpaceMouse Wireless (USB 256f:c62e), as the device sends them.

Motion, report id 1, 13 bytes: the id, then six signed 16-bit little-endian values, the cap's
translation (tx, ty, tz) and rotation (rx, ry, rz) in the device's own axes, about -350..350 at full
deflection. Buttons, report id 3: byte 1 bit 0 the left button, bit 1 the right one.

HIL-SERL's pyspacemouse (franka_env/spacemouse/pyspacemouse.py) names and signs them: x = tx/350,
y = -ty/350, z = -tz/350, pitch = -rx/350, roll = -ry/350, yaw = rz/350, buttons [left, right]. The
values this package is given (`axes` of GET /spacemouse) are those decoded values, so the reports
carry whatever raw numbers decode back to them.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

VENDOR_ID = 0x256F  # 3Dconnexion
PRODUCT_ID = 0xC62E  # SpaceMouse Wireless (its cable); pyspacemouse's "SpaceMouse Wireless", two buttons
MANUFACTURER = "3Dconnexion"
PRODUCT = "SpaceMouse Wireless"
USAGE_PAGE, USAGE = 0x01, 0x08  # HID usage tables: Generic Desktop, Multi-axis Controller

MOTION_REPORT_ID = 1
BUTTON_REPORT_ID = 3
MOTION_REPORT_LENGTH = 13  # id + 6 x int16
FULL_SCALE = 350  # raw value at full deflection

AXIS_NAMES = ("x", "y", "z", "roll", "pitch", "yaw")  # the order of GET /spacemouse's axes
# raw report slot (0 tx .. 5 rz) and sign of each named axis: value = sign * raw / FULL_SCALE
RAW_SLOT_AND_SIGN = {"x": (0, 1), "y": (1, -1), "z": (2, -1), "pitch": (3, -1), "roll": (4, -1), "yaw": (5, 1)}


def _raw(value: float) -> int:
    return max(-32768, min(32767, round(max(-1.0, min(1.0, float(value))) * FULL_SCALE)))


def motion_report(axes: Sequence[float]) -> bytes:
    """Report 1 for `axes` [x, y, z, roll, pitch, yaw] (each -1..1, as pyspacemouse decodes them)."""
    raw = [0] * 6
    for name, value in zip(AXIS_NAMES, axes, strict=True):
        slot, sign = RAW_SLOT_AND_SIGN[name]
        raw[slot] = _raw(sign * value)
    return struct.pack("<B6h", MOTION_REPORT_ID, *raw)


def button_report(buttons: Sequence[int]) -> bytes:
    """Report 3 for `buttons` [left, right] (0 or 1)."""
    bits = sum(1 << i for i, pressed in enumerate(buttons) if pressed)
    return bytes([BUTTON_REPORT_ID, bits])
