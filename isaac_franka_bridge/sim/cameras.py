"""Simulated cameras: their configuration, and the thread that renders them at their frame rates.

Rendering runs beside the physics thread, from a copy of the state the physics thread hands over,
so the 1 kHz loop never waits for a frame. Frame times follow the simulated clock.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import yaml

log = logging.getLogger(__name__)


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


class CameraThread(threading.Thread):
    """Renders every camera when its next frame is due in simulated time and hands it on."""

    def __init__(
        self,
        make_renderer: Callable[[], object],
        cameras: list[CameraSpec],
        sim_state: Callable[[], tuple[float, object] | None],
        on_frame: Callable[[Frame], None],
    ) -> None:
        super().__init__(name="cameras", daemon=True)
        self.make_renderer, self.cameras, self.sim_state, self.on_frame = make_renderer, cameras, sim_state, on_frame
        self.render_seconds: list[float] = []  # recent render durations, for diagnostics
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=2.0)

    def run(self) -> None:
        renderer = self.make_renderer()  # the GL context belongs to this thread
        due = {c.name: 0.0 for c in self.cameras}
        try:
            while not self._stop_event.is_set():
                current = self.sim_state()
                if current is None:
                    time.sleep(0.005)
                    continue
                sim_time, state = current
                ready = [c for c in self.cameras if sim_time >= due[c.name]]
                if not ready:
                    time.sleep(0.002)
                    continue
                for camera in ready:
                    t0 = time.perf_counter()
                    rgb = renderer.render(state, camera.name)
                    self.render_seconds = [*self.render_seconds[-99:], time.perf_counter() - t0]
                    self.on_frame(Frame(camera, rgb, sim_time, time.time()))
                    # next frame on the camera's grid; skip frames rather than fall behind
                    period = 1.0 / camera.fps
                    following = due[camera.name] + period
                    due[camera.name] = following if following > sim_time else sim_time + period
        except Exception:
            log.exception("camera rendering stopped")
            raise
        finally:
            renderer.close()
