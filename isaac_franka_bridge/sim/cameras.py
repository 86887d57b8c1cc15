"""Simulated cameras: their configuration, the loop that renders them at their frame rates, and the
shared-memory ring that hands their frames to readers on the same host.

Rendering runs in a process of its own (ros/camera_process.py), from a copy of the state that the
physics thread leaves in shared memory, so the 1 kHz loop never waits for a frame nor shares an
interpreter lock with the renderer. Frame times follow the simulated clock. A camera renders a frame
when one is due and somebody reads it (`wanted`); otherwise the frame is skipped.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np

from franka_server_ros2.camera_specs import CameraSpec  # the format both sides share
from franka_server_ros2.cameras import (  # the ring's layout, which the server and the clients read
    RING_HEAD,
    RING_HEADER_SIZE,
    RING_MAGIC,
    RING_READER_TIMEOUT_S,
    RING_SLOT_HEADER,
    RING_SLOTS,
    RING_VERSION,
    SHM_DIR,
)

STALE_RING_S = (
    10.0  # [s] a ring whose writer has not beaten for this long, and whose writer process is gone, is removed
)


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


class FrameRing:
    """One camera's newest frames in shared memory, for readers on this host (layout: franka_server_ros2.cameras).

    `begin()` hands out the next slot's pixels to write the frame into, `commit()` publishes it. A segment of
    the same name left by a writer that died, or by another simulation on the same ROS domain, is replaced.
    OSError where the host has no shared memory or not enough of it.
    """

    def __init__(self, name: str, width: int, height: int, period: float, slots: int = RING_SLOTS) -> None:
        self.name, self.path = name, os.path.join(SHM_DIR, name)
        self.width, self.height, self.slots = width, height, slots
        frame_bytes = width * height * 3
        stride = -(-(RING_SLOT_HEADER + frame_bytes) // mmap.PAGESIZE) * mmap.PAGESIZE
        size = RING_HEADER_SIZE + slots * stride
        # made under a name of its own, then renamed over the camera's: a reader never opens half a header
        building = f"{self.path}.{os.getpid()}.new"
        fd = os.open(building, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.posix_fallocate(fd, 0, size)  # no space: an error now, not a SIGBUS at the first frame
            self._inode = os.fstat(fd).st_ino
            self._memory = mmap.mmap(fd, size)
            self.segment_id = secrets.randbits(64)
            head = RING_HEAD.pack(
                RING_MAGIC, RING_VERSION, slots, self.segment_id, width, height, b"bgr8", stride,
                RING_HEADER_SIZE, period, 0, time.monotonic(), os.getpid(),
            )  # fmt: skip
            self._memory[: len(head)] = head
            os.rename(building, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(building)
            raise
        finally:
            os.close(fd)
        words = np.ndarray((RING_HEADER_SIZE // 8,), np.uint64, self._memory)
        self._latest = words[8:9]
        self._times = np.ndarray((RING_HEADER_SIZE // 8,), np.float64, self._memory)  # [9]: writer, [16]: reader
        starts = [RING_HEADER_SIZE + i * stride for i in range(slots)]
        self._slot_words = [np.ndarray((3,), np.uint64, self._memory, start) for start in starts]
        self._slot_times = [np.ndarray((3,), np.float64, self._memory, start) for start in starts]
        self._pixels = [
            np.ndarray((height, width, 3), np.uint8, self._memory, start + RING_SLOT_HEADER) for start in starts
        ]
        self.seq = 0

    def begin(self) -> np.ndarray:
        """The (height, width, 3) bgr8 pixels of the next frame, to write into before `commit`."""
        slot = self.seq % self.slots  # frame seq + 1 goes to slot seq % slots
        self._slot_words[slot][0] = 0  # a reader copying this slot now sees its seq change
        return self._pixels[slot]

    def commit(self, stamp: float, wall_time: float) -> None:
        """The frame written since `begin` is complete: the newest frame."""
        seq = self.seq + 1
        slot = self.seq % self.slots
        self._slot_times[slot][1:3] = (stamp, wall_time)
        self._slot_words[slot][0] = seq
        self._latest[0] = seq
        self.seq = seq
        self.beat()

    def beat(self) -> None:
        """The writer is alive (the server advertises the ring only while it beats)."""
        self._times[9] = time.monotonic()

    def reader_age(self) -> float:
        """Seconds since a reader last beat (inf: never)."""
        beat = float(self._times[16])
        return time.monotonic() - beat if beat > 0.0 else float("inf")

    def has_reader(self) -> bool:
        return self.reader_age() <= RING_READER_TIMEOUT_S

    def close(self) -> None:
        """Unmap; remove the segment if it is still this ring's (a newer writer may have replaced it)."""
        if self._memory.closed:
            return
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:
                os.unlink(self.path)
        self._latest = self._times = self._slot_words = self._slot_times = self._pixels = None
        with contextlib.suppress(BufferError):
            self._memory.close()


def remove_stale_rings(prefix: str) -> list[str]:
    """Remove the rings named `prefix`... whose writer is gone (a process killed before it could clean up)."""
    removed = []
    try:
        names = [n for n in os.listdir(SHM_DIR) if n.startswith(prefix)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(SHM_DIR, name)
        try:
            with open(path, "rb") as f:
                head = f.read(RING_HEAD.size)
            magic, *_, writer_beat, pid = RING_HEAD.unpack(head)
        except (OSError, ValueError, struct.error):
            continue
        if magic != RING_MAGIC or time.monotonic() - writer_beat < STALE_RING_S:
            continue
        try:
            os.kill(pid, 0)
            continue  # (its pid is in use: a writer that stalls, or the pid of another process; left alone)
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(name)
    return removed


def render_loop(
    renderer,
    cameras: list[CameraSpec],
    sim_state: Callable[[], tuple[float, object] | None],
    on_frame: Callable[[Frame], None],
    running: Callable[[], bool],
    wanted: Callable[[CameraSpec], bool] = lambda camera: True,
    on_skip: Callable[[CameraSpec, float], None] = lambda camera, stamp: None,
    idle: Callable[[], None] = lambda: None,
) -> None:
    """Render every camera when its next frame is due in simulated time and somebody wants it (`wanted`), and
    hand it on; a due frame nobody wants is skipped (`on_skip`). Each camera's frames stay on the grid of its
    rate: never faster, and a frame late by more than a period is dropped rather than made up. `idle` runs at
    every pass of the loop (a few ms apart at most)."""
    due = {c.name: 0.0 for c in cameras}
    while running():
        idle()
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
            if wanted(camera):
                start = time.perf_counter()
                wall_time = time.time()
                rgb = renderer.render(state, camera.name)
                on_frame(Frame(camera, rgb, sim_time, wall_time, time.perf_counter() - start))
            else:
                on_skip(camera, sim_time)
            # next frame on the camera's grid; skip frames rather than fall behind
            period = 1.0 / camera.fps
            following = due[camera.name] + period
            due[camera.name] = following if following > sim_time else sim_time + period
