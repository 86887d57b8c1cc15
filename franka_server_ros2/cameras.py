"""Camera frames for clients without ROS: the newest frame of each camera's image_raw topic.

Frames are 1280x720x3 at 15 fps: they stay serialized as they arrive and are decoded only when a
client asks. A camera's topic is subscribed to with the first request for it and unsubscribed from
IDLE_UNSUBSCRIBE_S after the last one, so a server nobody asks for frames costs nothing and leaves
the simulated camera without a subscriber (it then need not render).

Clients on the simulator's own host need not take frames through this server at all: the camera
process also writes them into a shared-memory ring per camera (isaac_franka_bridge/sim/cameras.py),
named from the ROS domain and the camera's topic, so that this server finds it without knowing the
simulator. `GET /cameras` names each camera's ring (when one is there and written) and this host;
clients/virtual_realsense reads the ring when it runs on the same host and the ring opens, and
falls back to `GET /frame/<name>` otherwise. Behind a real robot there is no ring: nothing is named.
"""

from __future__ import annotations

import base64
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass

import cv2
import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image

from .camera_specs import CameraSpec
from .image_cdr import parse_image

IDLE_UNSUBSCRIBE_S = 5.0  # [s] without a request for a camera's frames: its subscription is dropped

# ---------------------------------------------------------------- the shared-memory frame ring (same host)
# Written by the camera process (isaac_franka_bridge.sim.cameras.FrameRing); read by
# clients/virtual_realsense/virtual_realsense/_shm.py, which repeats this layout (it installs without this
# package; tests/test_frame_ring.py checks that the two agree). All fields little endian.
#   header (RING_HEADER_SIZE bytes)
#     0  8s  magic RING_MAGIC            8  u32 version       12 u32 slots
#     16 u64 segment id (random)         24 u32 width         28 u32 height
#     32 8s  encoding ("bgr8")           40 u64 slot stride   48 u64 offset of slot 0
#     56 f64 frame period [s]            64 u64 latest: seq of the newest complete frame (0: none yet)
#     72 f64 writer heartbeat            80 u32 writer pid
#     128 f64 reader heartbeat (any reader; its own cache line)
#     heartbeats are CLOCK_MONOTONIC seconds (time.monotonic(), one clock for every process of a host)
#   slot i (at offset of slot 0 + i * stride), frame `seq` lives in slot (seq - 1) % slots
#     0  u64 seq (0 while being written)  8 f64 capture time, simulated clock [s] (the image message's stamp
#       as image_cdr.stamp_seconds turns it into seconds: the same number /frame's X-Frame-Stamp gives)
#     16 f64 capture time, Unix time [s]  RING_SLOT_HEADER: height x width x 3 pixels
# A reader takes `latest`, checks the slot's seq, copies stamp, time and pixels, and checks the seq again:
# unchanged, the copy is whole (the writer zeroes a slot's seq before it writes into it).
SHM_DIR = "/dev/shm"
RING_PREFIX = "franka_sim."
RING_MAGIC = b"FRKRING1"
RING_VERSION = 1
RING_HEADER_SIZE = 4096
RING_SLOT_HEADER = 64
RING_SLOTS = 3
RING_WRITER_TIMEOUT_S = 2.0  # [s] a ring whose writer has not beaten for this long is not advertised
RING_READER_TIMEOUT_S = 1.0  # [s] a camera whose ring readers have not beaten for this long has none
RING_HEAD = struct.Struct("<8sIIQII8sQQdQdI")  # the header up to the writer pid, in the order above


def ring_name(domain_id: int, image_topic: str, uid: int | None = None) -> str:
    """The shared-memory segment of a camera: its user, ROS domain and fully qualified image topic
    (`/left/wrist/image_raw` -> `franka_sim.1000.42.left.wrist.image_raw`); '.' is no ROS name character."""
    uid = os.getuid() if uid is None else uid
    return f"{RING_PREFIX}{uid}.{domain_id}.{image_topic.strip('/').replace('/', '.')}"


def host_identity() -> str:
    """This host as shared memory sees it: its boot id and host name ('' where there is no boot id)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        return ""
    return f"{boot}/{socket.gethostname()}"


def ring_info(name: str) -> dict | None:
    """{"name", "id"} of the ring `name` when it is there, of this layout, and its writer alive; else None."""
    try:
        with open(os.path.join(SHM_DIR, name), "rb") as f:
            head = f.read(RING_HEAD.size)
    except OSError:
        return None
    if len(head) < RING_HEAD.size:
        return None
    magic, version, _, segment_id, *_, writer_beat, _ = RING_HEAD.unpack(head)
    if magic != RING_MAGIC or version != RING_VERSION or time.monotonic() - writer_beat > RING_WRITER_TIMEOUT_S:
        return None
    return {"name": name, "id": f"{segment_id:016x}"}


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
        self.seq = 0  # never restarts: a client's `after` stays valid across subscriptions
        self.raw: bytes | None = None
        self.received = 0.0
        self.decoded: CameraFrame | None = None
        self.subscription = None
        self.generation = 0  # of the subscription: messages of a dropped one are ignored
        self.last_request = 0.0  # time.monotonic() of the last request for a frame
        self.waiting = 0  # requests waiting for a frame now

    def on_message(self, data: bytes, generation: int) -> None:
        with self.condition:
            if generation != self.generation:
                return
            self.seq += 1
            self.raw, self.received = data, time.time()
            self.condition.notify_all()


class CameraFeeds:
    """The cameras of `cameras` (a camera file): their listing, and their frames from ROS on request."""

    def __init__(self, node: Node | None, cameras: list[CameraSpec]) -> None:
        self.node = node
        self.cameras = {c.name: c for c in cameras}
        self._feeds = {name: _Feed() for name in self.cameras}
        self._lock = threading.Lock()
        self.host = ""
        self._rings: dict[str, str] = {}  # camera -> the name its shared-memory ring would have
        if node is not None and cameras:
            self.host = host_identity()
            domain = node.context.get_domain_id()
            self._rings = {n: ring_name(domain, node.resolve_topic_name(f"{n}/image_raw")) for n in self.cameras}
            node.create_timer(1.0, self.drop_idle, clock=Clock(clock_type=ClockType.STEADY_TIME))  # not /clock

    def listing(self) -> list[dict]:
        """Each camera as `GET /cameras` lists it; with "shm" ({"name", "id"}) where its ring is written."""
        cameras = []
        for c in self.cameras.values():
            entry = {"name": c.name, "serial": c.serial_number, "width": c.width, "height": c.height, "fps": c.fps}
            entry["depth"] = False
            ring = ring_info(self._rings[c.name]) if c.name in self._rings and self.host else None
            if ring is not None:
                entry["shm"] = ring
            cameras.append(entry)
        return cameras

    def _feed(self, name: str) -> _Feed:
        """The camera's feed, subscribed to from now on (until IDLE_UNSUBSCRIBE_S after the last request)."""
        if name not in self.cameras:
            raise UnknownCamera(name)
        feed = self._feeds[name]
        with self._lock:
            feed.last_request = time.monotonic()
            if feed.subscription is None and self.node is not None:
                generation = feed.generation
                feed.subscription = self.node.create_subscription(
                    Image,
                    f"{name}/image_raw",
                    lambda data: feed.on_message(data, generation),
                    qos_profile_sensor_data,
                    raw=True,
                )
        return feed

    def subscribed(self, name: str) -> bool:
        return self._feeds[name].subscription is not None

    def drop_idle(self, idle_s: float = IDLE_UNSUBSCRIBE_S) -> None:
        """Unsubscribe from cameras nobody asked for in `idle_s`; their next request waits for a new frame."""
        now = time.monotonic()
        with self._lock:
            for feed in self._feeds.values():
                if feed.subscription is None or feed.waiting or now - feed.last_request <= idle_s:
                    continue
                subscription, feed.subscription = feed.subscription, None
                with feed.condition:
                    feed.generation += 1
                    feed.raw, feed.decoded = None, None
                self.node.destroy_subscription(subscription)

    def frame(self, name: str, after: int = -1, timeout: float = 1.0) -> CameraFrame | None:
        """The newest frame with seq > after (after=-1: the newest at all), waiting up to `timeout` s."""
        feed = self._feed(name)
        with feed.condition:
            feed.waiting += 1
            try:
                feed.condition.wait_for(lambda: feed.raw is not None and feed.seq > after, timeout)
            finally:
                feed.waiting -= 1
                feed.last_request = time.monotonic()
            if feed.raw is None or feed.seq <= after:
                return None
            seq, raw, received = feed.seq, feed.raw, feed.received
            if feed.decoded is not None and feed.decoded.seq == seq:
                return feed.decoded
        image = parse_image(raw)  # the pixels stay where they arrived
        pixels = np.frombuffer(image.data, np.uint8).reshape(image.height, image.width, 3)
        bgr = pixels[:, :, ::-1] if image.encoding == "rgb8" else pixels
        decoded = CameraFrame(seq, image.stamp, received, bgr)
        with feed.condition:
            if feed.raw is raw:
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
