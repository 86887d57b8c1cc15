"""Simulated cameras: their configuration, and the loop that renders them at their frame rates.

Rendering runs in a process of its own (ros/camera_process.py), from a copy of the state that the
physics thread leaves in shared memory, so the 1 kHz loop never waits for a frame nor shares an
interpreter lock with the renderer. Frame times follow the simulated clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np
import yaml


@dataclass(frozen=True)
class CameraSpec:
    name: str
    serial_number: str
    width: int
    height: int
    fps: float
    body: str  # body of the robot model it is fixed to
    pos: tuple[float, float, float]
    quat: tuple[float, float, float, float]  # (w, x, y, z), MuJoCo camera frame
    fovy: float  # [deg] vertical field of view
    sees_arm: bool = True  # False: the arm's links (not the gripper) are left out of its frames

    def intrinsics(self) -> tuple[float, float, float]:
        """Focal length [px] and principal point of the pinhole model."""
        focal = 0.5 * self.height / math.tan(math.radians(self.fovy) / 2.0)
        return focal, (self.width - 1) / 2.0, (self.height - 1) / 2.0


def load_cameras(path: str) -> list[CameraSpec]:
    """Cameras of a YAML file (config/cameras.yaml); ValueError naming the bad entry."""
    with open(path) as f:
        entries = (yaml.safe_load(f) or {}).get("cameras") or {}
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
            raise ValueError(f"camera '{name}' in {path}: {exc!r}") from exc
        if len(spec.pos) != 3 or len(spec.quat) != 4 or spec.width <= 0 or spec.height <= 0 or spec.fps <= 0:
            raise ValueError(f"camera '{name}' in {path}: pos needs 3 values, quat 4, sizes and fps > 0")
        cameras.append(spec)
    return cameras


@dataclass(frozen=True)
class Frame:
    camera: CameraSpec
    rgb: np.ndarray  # (height, width, 3) uint8
    stamp: float  # simulated capture time [s]
    wall_time: float  # capture time, seconds since the epoch
    render_s: float = 0.0  # how long rendering it took [s]


class SharedState:
    """The latest render state of the simulation, in shared memory, for a rendering process.

    A seqlock: the writer (physics thread) makes the sequence odd while it writes and even after;
    a reader retries when the sequence was odd or changed under it. Layout (float64):
    [sequence, simulated time, state...].
    """

    def __init__(self, size: int, name: str | None = None) -> None:
        create = name is None
        self.memory = shared_memory.SharedMemory(name=name, create=create, size=8 * (size + 2))
        self.name = self.memory.name
        self.buffer = np.ndarray((size + 2,), dtype=np.float64, buffer=self.memory.buf)
        if create:
            self.buffer[:] = 0.0

    def write(self, sim_time: float, state: np.ndarray) -> None:
        b = self.buffer
        b[0] += 1.0
        b[1] = sim_time
        b[2:] = state
        b[0] += 1.0

    def read(self) -> tuple[float, np.ndarray] | None:
        for _ in range(100):
            sequence = self.buffer[0]
            if sequence == 0.0:
                return None  # nothing written yet
            if sequence % 2.0 == 0.0:
                sim_time, state = float(self.buffer[1]), self.buffer[2:].copy()
                if self.buffer[0] == sequence:
                    return sim_time, state
            time.sleep(0.0001)
        return None

    def close(self, unlink: bool = False) -> None:
        del self.buffer
        self.memory.close()
        if unlink:
            self.memory.unlink()


def render_loop(
    renderer,
    cameras: list[CameraSpec],
    sim_state: Callable[[], tuple[float, object] | None],
    on_frame: Callable[[Frame], None],
    running: Callable[[], bool],
) -> None:
    """Render every camera when its next frame is due in simulated time and hand it on."""
    due = {c.name: 0.0 for c in cameras}
    while running():
        current = sim_state()
        if current is None:
            time.sleep(0.005)
            continue
        sim_time, state = current
        ready = [c for c in cameras if sim_time >= due[c.name]]
        if not ready:
            time.sleep(0.002)
            continue
        for camera in ready:
            start = time.perf_counter()
            rgb = renderer.render(state, camera.name)
            on_frame(Frame(camera, rgb, sim_time, time.time(), time.perf_counter() - start))
            # next frame on the camera's grid; skip frames rather than fall behind
            period = 1.0 / camera.fps
            following = due[camera.name] + period
            due[camera.name] = following if following > sim_time else sim_time + period
