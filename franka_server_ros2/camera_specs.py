"""Camera specs: what a camera is (name, serial, size, rate, where it is mounted), read from YAML.

The server lists and serves the cameras of a file like this for the real RealSense cameras as for
simulated ones; the simulator renders the cameras of the same file. Pure data: no ROS, no simulator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import yaml


@dataclass(frozen=True)
class CameraSpec:
    name: str
    serial_number: str
    width: int
    height: int
    fps: float
    body: str  # body of the robot model it is fixed to, or "world" (fixed in the world)
    pos: tuple[float, float, float]  # [m] in that body's frame (the world frame for "world")
    quat: tuple[float, float, float, float]  # (w, x, y, z), MuJoCo camera frame
    fovy: float  # [deg] vertical field of view
    sees_arm: bool = True  # False: the arm's links (not the gripper) are left out of its frames

    def intrinsics(self) -> tuple[float, float, float]:
        """Focal length [px] and principal point of the pinhole model."""
        focal = 0.5 * self.height / math.tan(math.radians(self.fovy) / 2.0)
        return focal, (self.width - 1) / 2.0, (self.height - 1) / 2.0


WORLD_BODY = "world"  # a camera with this body is fixed in the world (pos/quat in the world frame)


def load_cameras(path: str) -> list[CameraSpec]:
    """Cameras of a YAML file (config/cameras.yaml); ValueError naming the bad entry."""
    with open(path) as f:
        entries = (yaml.safe_load(f) or {}).get("cameras") or {}
    return cameras_from_mapping(entries, path)


def cameras_from_mapping(entries: dict, where: str) -> list[CameraSpec]:
    """Cameras of a `{name: {serial_number, width, ...}}` mapping (a camera file's `cameras`, or a
    robot's `cameras` in a task file); ValueError naming the bad entry."""
    if not isinstance(entries, dict):
        raise ValueError(f"cameras in {where} must be a mapping of camera names to their settings")
    cameras = []
    for name, entry in entries.items():
        try:
            spec = CameraSpec(
                name=str(name),
                serial_number=str(entry["serial_number"]),
                width=int(entry["width"]),
                height=int(entry["height"]),
                fps=float(entry["fps"]),
                body=str(entry["body"]),
                pos=tuple(float(v) for v in entry["pos"]),
                quat=tuple(float(v) for v in entry["quat"]),
                fovy=float(entry["fovy"]),
                sees_arm=bool(entry.get("sees_arm", True)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"camera '{name}' in {where}: {exc!r}") from exc
        if len(spec.pos) != 3 or len(spec.quat) != 4 or spec.width <= 0 or spec.height <= 0 or spec.fps <= 0:
            raise ValueError(f"camera '{name}' in {where}: pos needs 3 values, quat 4, sizes and fps > 0")
        if not all(math.isfinite(v) for v in (*spec.pos, *spec.quat, spec.fovy)) or not 0 < spec.fovy < 180:
            raise ValueError(f"camera '{name}' in {where}: pos, quat finite and fovy in 0..180 deg")
        cameras.append(spec)
    return cameras


def cameras_mapping(cameras: list[CameraSpec] | tuple[CameraSpec, ...]) -> dict:
    """The `cameras` mapping that cameras_from_mapping reads back as `cameras`."""
    return {
        c.name: {
            "serial_number": c.serial_number,
            "width": c.width,
            "height": c.height,
            "fps": c.fps,
            "body": c.body,
            "pos": list(c.pos),
            "quat": list(c.quat),
            "fovy": c.fovy,
            "sees_arm": c.sees_arm,
        }
        for c in cameras
    }


def dump_cameras(cameras: list[CameraSpec] | tuple[CameraSpec, ...]) -> str:
    """A camera file (YAML) that load_cameras reads back as `cameras`."""
    return yaml.safe_dump({"cameras": cameras_mapping(cameras)}, sort_keys=False)
