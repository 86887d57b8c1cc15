"""What a simulator knows and a real robot does not: the task's ground truth, for `GET /task`.

The simulator publishes, for the whole world, `/task/success` (std_msgs/Bool), `/task/objects`
(tf2_msgs/TFMessage: each object's pose in `world`) and `/task/status`
(diagnostic_msgs/DiagnosticStatus: the task's name, what the ground truth sees, its values). This
view keeps the latest of each, and this robot's base pose in `world` from /tf_static, so that the
answer also gives the objects in the robot's base frame (where /pose targets are). Behind a real
robot none of it exists and the route says so.
"""

from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from scipy.spatial.transform import Rotation
from std_msgs.msg import Bool
from tf2_msgs.msg import TFMessage

from .image_cdr import stamp_seconds
from .robot import RobotUnavailable

WORLD = "world"
PLACES_KEY = "places"  # of /task/status: 'place:object,...' (the simulator's task_publisher.py)
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STATIC = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _pose(transform) -> tuple[np.ndarray, np.ndarray]:
    t, r = transform.translation, transform.rotation
    return np.array([t.x, t.y, t.z]), np.array([r.x, r.y, r.z, r.w])


def in_frame(base: tuple[np.ndarray, np.ndarray], pose: tuple[np.ndarray, np.ndarray]) -> list[float]:
    """`pose` (world) seen from `base` (world): [x, y, z, qx, qy, qz, qw]."""
    inverse = Rotation.from_quat(base[1]).inv()
    position = inverse.apply(pose[0] - base[0])
    return [*position.tolist(), *(inverse * Rotation.from_quat(pose[1])).as_quat().tolist()]


class GroundTruth:
    """The latest ground truth of the world this server's robot stands in."""

    def __init__(self, node: Node, base_frame: str) -> None:
        self.base_frame = base_frame
        self._success: bool | None = None
        self._status: DiagnosticStatus | None = None
        self._objects: TFMessage | None = None
        self._base: tuple[np.ndarray, np.ndarray] | None = None
        self._received = 0.0
        node.create_subscription(Bool, "/task/success", self._on_success, LATCHED)
        node.create_subscription(DiagnosticStatus, "/task/status", self._on_status, LATCHED)
        node.create_subscription(TFMessage, "/task/objects", self._on_objects, QoSProfile(depth=1))
        node.create_subscription(TFMessage, "/tf_static", self._on_static, STATIC)

    def _on_success(self, msg: Bool) -> None:
        self._success = msg.data

    def _on_status(self, msg: DiagnosticStatus) -> None:
        self._status = msg

    def _on_objects(self, msg: TFMessage) -> None:
        self._objects, self._received = msg, time.monotonic()

    def _on_static(self, msg: TFMessage) -> None:
        for t in msg.transforms:
            if t.child_frame_id == self.base_frame and t.header.frame_id == WORLD:
                self._base = _pose(t.transform)

    def state(self) -> dict:
        """The answer of GET /task; RobotUnavailable where no simulator publishes a task."""
        success, status, objects, base = self._success, self._status, self._objects, self._base
        if success is None or status is None or objects is None:
            raise RobotUnavailable("no task ground truth: the robot behind this server publishes none (a real robot?)")
        poses = {t.child_frame_id: _pose(t.transform) for t in objects.transforms}
        values = {kv.key: kv.value for kv in status.values}
        places = dict(p.split(":", 1) for p in values.pop(PLACES_KEY, "").split(",") if ":" in p)
        stamp = objects.transforms[0].header.stamp if objects.transforms else None
        answer = {
            "task": status.name,
            "description": status.hardware_id,
            "success": success,
            "detail": status.message,
            "values": values,
            "places": places,  # where POST /task/place puts an object: {place: object}
            "stamp": stamp_seconds(stamp.sec, stamp.nanosec) if stamp is not None else None,
            "age_s": time.monotonic() - self._received,
            "frame": WORLD,
            "objects": {name: [*p.tolist(), *q.tolist()] for name, (p, q) in poses.items()},
        }
        if base is not None:
            answer["base_frame"] = self.base_frame
            answer["base"] = [*base[0].tolist(), *base[1].tolist()]
            answer["objects_in_base"] = {name: in_frame(base, pose) for name, pose in poses.items()}
        return answer
