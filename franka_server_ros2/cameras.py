"""Camera frames for clients without ROS: the newest frame of each camera's image_raw topic.

Frames are 1280x720x3 at 15 fps: they stay serialized as they arrive and are decoded only when a
client asks. Subscriptions start with the first request for a camera, so a server nobody asks for
frames costs nothing.
"""

from __future__ import annotations

import base64
import threading
import time
from dataclasses import dataclass

import cv2
import numpy as np
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image

from .camera_specs import CameraSpec
from .image_cdr import parse_image


class UnknownCamera(KeyError):
    pass


@dataclass(frozen=True)
class CameraFrame:
    seq: int  # counts the frames this server received from the camera
    stamp: float  # capture time, simulated clock [s]
    received: float  # when it reached this server, seconds since the epoch
    bgr: np.ndarray  # (height, width, 3) uint8, as a RealSense bgr8 stream


class _Feed:
    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.seq = 0
        self.raw: bytes | None = None
        self.received = 0.0
        self.decoded: CameraFrame | None = None

    def on_message(self, data: bytes) -> None:
        with self.condition:
            self.seq += 1
            self.raw, self.received = data, time.time()
            self.condition.notify_all()


class CameraFeeds:
    def __init__(self, node: Node, cameras: list[CameraSpec]) -> None:
        self.node = node
        self.cameras = {c.name: c for c in cameras}
        self._feeds: dict[str, _Feed] = {}
        self._lock = threading.Lock()

    def listing(self) -> list[dict]:
        return [
            {
                "name": c.name,
                "serial": c.serial_number,
                "width": c.width,
                "height": c.height,
                "fps": c.fps,
                "depth": False,
            }
            for c in self.cameras.values()
        ]

    def _feed(self, name: str) -> _Feed:
        if name not in self.cameras:
            raise UnknownCamera(name)
        with self._lock:
            feed = self._feeds.get(name)
            if feed is None:
                feed = self._feeds[name] = _Feed()
                self.node.create_subscription(
                    Image, f"{name}/image_raw", feed.on_message, qos_profile_sensor_data, raw=True
                )
        return feed

    def frame(self, name: str, after: int = -1, timeout: float = 1.0) -> CameraFrame | None:
        """The newest frame with seq > after (after=-1: the newest at all), waiting up to `timeout` s."""
        feed = self._feed(name)
        with feed.condition:
            feed.condition.wait_for(lambda: feed.raw is not None and feed.seq > after, timeout)
            if feed.raw is None or feed.seq <= after:
                return None
            seq, raw, received = feed.seq, feed.raw, feed.received
            if feed.decoded is not None and feed.decoded.seq == seq:
                return feed.decoded
        image = parse_image(raw)  # the pixels stay where they arrived
        pixels = np.frombuffer(image.data, np.uint8).reshape(image.height, image.width, 3)
        bgr = pixels[:, :, ::-1] if image.encoding == "rgb8" else pixels
        decoded = CameraFrame(seq, image.stamp, received, bgr)
        feed.decoded = decoded
        return decoded


def crop_box(text: str | None) -> tuple[int, int, int, int] | None:
    """`x0,y0,x1,y1` in pixels of the full frame (as an experiment config's IMAGE_CROP)."""
    if not text:
        return None
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != 4 or values[0] >= values[2] or values[1] >= values[3] or min(values) < 0:
        raise ValueError(f"crop must be x0,y0,x1,y1 in pixels with 0 <= x0 < x1, 0 <= y0 < y1, got {text!r}")
    return values[0], values[1], values[2], values[3]


def capture_comment(frame: CameraFrame) -> str:
    """What a JPEG of the frame says about its capture, in its comment (COM) segment."""
    return f"stamp={frame.stamp!r};received={frame.received!r};seq={frame.seq}"


def jpeg(frame: CameraFrame, crop: tuple[int, int, int, int] | None, quality: int) -> bytes:
    """The frame as JPEG, its capture time in a comment segment (decoders skip it; see read_capture_comment)."""
    image = frame.bgr if crop is None else frame.bgr[crop[1] : crop[3], crop[0] : crop[2]]
    ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    data = encoded.tobytes()
    comment = capture_comment(frame).encode()
    # right after the start-of-image marker: FF FE, big-endian length counting itself, the text
    return data[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + data[2:]


def read_capture_comment(data: bytes) -> dict[str, float]:
    """The capture fields a JPEG of this server carries: {"stamp", "received", "seq"} ({} if none)."""
    if data[:4] != b"\xff\xd8\xff\xfe":
        return {}
    length = int.from_bytes(data[4:6], "big")
    fields = dict(item.split("=", 1) for item in data[6 : 4 + length].decode().split(";"))
    return {key: float(value) for key, value in fields.items()}


def jpeg_base64(frame: CameraFrame, crop, quality: int) -> str:
    return base64.b64encode(jpeg(frame, crop, quality)).decode("ascii")
