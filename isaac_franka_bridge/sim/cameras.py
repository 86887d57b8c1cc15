"""Simulated cameras: their configuration, and the loop that renders them at their frame rates.

Rendering runs in a process of its own (ros/camera_process.py), from a copy of the state that the
physics thread leaves in shared memory, so the 1 kHz loop never waits for a frame nor shares an
interpreter lock with the renderer. Frame times follow the simulated clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np

from franka_server_ros2.camera_specs import CameraSpec  # the format both sides share


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
