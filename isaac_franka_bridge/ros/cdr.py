"""Messages published as serialized bytes, from templates that rclpy's own serializer made.

The state topics go out at hundreds of Hz from the simulation thread. Filling a message object
and letting rclpy convert it costs tens of microseconds per message, while the interpreter lock
is held; writing the changing numbers into serialized bytes costs a few. `Publisher.publish`
takes serialized bytes as they are, so a topic's messages are identical either way.

A template is made once: the message is filled through its normal Python API, with a sentinel in
every value that changes, and serialized by rclpy; the sentinels' byte offsets are where the
numbers go afterwards. The layout therefore always is the middleware's (XCDR1, little endian, as
rmw_fastrtps and rmw_cyclonedds use), never one written here.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from rclpy.serialization import serialize_message
from sensor_msgs.msg import Image
from std_msgs.msg import Header

CDR_LE = b"\x00\x01"  # encapsulation header of little-endian plain CDR
_STAMP_SENTINEL = Time(sec=0x5EC0_5EC1, nanosec=0x3A5E_7E11)
_NO_VALUES = np.zeros(0)


def _sentinels(count: int) -> np.ndarray:
    """Distinct doubles that no real message field of this project holds."""
    return -7.0e-301 * (1.0 + np.arange(count) / 1024.0)


def _offsets(data: bytes, pattern: bytes) -> list[int]:
    found, start = [], 0
    while (index := data.find(pattern, start)) >= 0:
        found.append(index)
        start = index + 1
    return found


class SerializedTemplate:
    """Serialized bytes of one message whose doubles and stamps change and nothing else does.

    `fill(msg, values, stamp)` writes `values` (a sequence of `size` floats) and `stamp` (a
    builtin_interfaces/Time) into `msg` through its Python API; it must put each value in its
    own double field, and the stamp in every stamp field that should follow it.
    """

    def __init__(self, msg: Any, size: int, fill: Callable[[Any, list[float], Time], None]) -> None:
        sentinels = _sentinels(size)
        fill(msg, sentinels.tolist(), _STAMP_SENTINEL)
        data = serialize_message(msg)
        if data[:2] != CDR_LE:
            raise ValueError("expected little-endian CDR from the middleware")
        slots = []
        for value in sentinels:
            found = _offsets(data, struct.pack("<d", value))
            if len(found) != 1 or (found[0] - 4) % 8:
                raise ValueError(f"value {len(slots)} of {type(msg).__name__} is not one aligned double")
            slots.append((found[0] - 4) // 8)
        stamp_offsets = _offsets(data, struct.pack("<iI", _STAMP_SENTINEL.sec, _STAMP_SENTINEL.nanosec))
        if any(offset % 4 for offset in stamp_offsets):
            raise ValueError(f"a stamp of {type(msg).__name__} is not aligned")
        self.size = size
        self.buffer = bytearray(data)
        # doubles are aligned to 8 counted from the end of the 4-byte encapsulation header
        self._doubles = np.frombuffer(self.buffer, dtype="<f8", offset=4, count=(len(data) - 4) // 8)
        self._words = np.frombuffer(self.buffer, dtype="<u4", count=len(data) // 4)
        self._slots = np.array(slots, dtype=np.intp)
        self._seconds = np.array([o // 4 for o in stamp_offsets], dtype=np.intp)
        self._nanoseconds = self._seconds + 1

    def serialize(self, sec: int, nanosec: int, values: np.ndarray = _NO_VALUES) -> bytes:
        """The message with this stamp and these values, as serialized bytes."""
        if self.size:
            self._doubles[self._slots] = values
        if len(self._seconds):
            self._words[self._seconds] = sec
            self._words[self._nanoseconds] = nanosec
        return bytes(self.buffer)


class SerializedImage:
    """Frames of one camera as serialized sensor_msgs/Image, the pixels written in place.

    A 1280x720 frame is 2.7 MB: `pixels` is a (height, width, 3) view of the message bytes that
    the renderer's output is converted into, so a frame is copied once more (into the bytes that
    are published) rather than three times through a message object.
    """

    def __init__(self, frame_id: str, width: int, height: int, encoding: str = "bgr8") -> None:
        size = width * height * 3
        msg = Image(header=Header(frame_id=frame_id), height=height, width=width, encoding=encoding, step=width * 3)
        msg.data = array("B", bytes(size))
        self._stamp = SerializedTemplate(msg, 0, lambda m, v, stamp: setattr(m.header, "stamp", stamp))
        buffer = self._stamp.buffer
        self.pixels = np.frombuffer(buffer, np.uint8, count=size, offset=len(buffer) - size).reshape(height, width, 3)

    def serialize(self, sec: int, nanosec: int) -> bytes:
        return self._stamp.serialize(sec, nanosec)
