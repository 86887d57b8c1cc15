"""Read serialized messages without deserializing them: any stamped message's header stamp, and a
sensor_msgs/Image's fields with its pixels as a view.

A 1280x720 frame is 2.7 MB; deserializing it into a message and then into numpy copies it twice.
The pixels are the message's last field, so the header fields are read from the CDR bytes and the
pixels are a view of them (XCDR1, little endian: what rmw_fastrtps and rmw_cyclonedds send).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class ImageView:
    stamp: float  # header.stamp [s]
    height: int
    width: int
    encoding: str
    step: int
    data: memoryview  # the pixel bytes, no copy


def stamp_seconds(sec: int, nanosec: int) -> float:
    """A stamp in seconds, as this package turns (sec, nanosec) into a float: a frame's capture stamp is the
    same number whichever way it travels (HTTP or a shared-memory ring)."""
    return sec + nanosec * 1e-9


def header_stamp(data: bytes | memoryview) -> tuple[int, int]:
    """(sec, nanosec) of a serialized message whose first field is a std_msgs/Header: after CDR's 4-byte
    encapsulation header (byte 1 odd: little endian) come the stamp's int32 sec and uint32 nanosec."""
    return struct.unpack_from("<iI" if data[1] & 1 else ">iI", data, 4)


def _string(raw: memoryview, offset: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<I", raw, offset)
    text = bytes(raw[offset + 4 : offset + 4 + length]).rstrip(b"\0").decode()
    return text, offset + 4 + length


def _align4(offset: int) -> int:
    # alignment counts from the end of the 4-byte encapsulation header
    return 4 + ((offset - 4 + 3) & ~3)


def parse_image(serialized: bytes) -> ImageView:
    raw = memoryview(serialized)
    if bytes(raw[:2]) != b"\x00\x01":
        raise ValueError("not a little-endian CDR sensor_msgs/Image")
    sec, nanosec = header_stamp(raw)
    _, offset = _string(raw, 12)  # header.frame_id
    offset = _align4(offset)
    height, width = struct.unpack_from("<II", raw, offset)
    encoding, offset = _string(raw, offset + 8)
    offset = _align4(offset + 1)  # is_bigendian (uint8)
    (step,) = struct.unpack_from("<I", raw, offset)
    (size,) = struct.unpack_from("<I", raw, offset + 4)
    data = raw[offset + 8 : offset + 8 + size]
    if len(data) != size or size != step * height:
        raise ValueError(f"malformed Image: {size} data bytes for {height} rows of {step}")
    return ImageView(stamp_seconds(sec, nanosec), height, width, encoding, step, data)
