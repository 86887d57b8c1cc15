"""Frames from the simulation's shared memory, for a client on the simulator's own host (stdlib + numpy).

The simulation's camera process writes each camera's newest frames into a ring in ``/dev/shm``. ``GET /cameras``
names a camera's ring (``"shm": {"name", "id"}``) and the server's host (``"host"``: boot id and host name); a
pipeline reads the ring only when that host is this one and the ring opens with that id, and takes its frames over
HTTP otherwise. The layout is franka_server_ros2/cameras.py's (in the simulation's repository), repeated here because
this package installs without it:

* header: ``0`` magic ``FRKRING1``, ``8`` u32 version (1), ``12`` u32 slots, ``16`` u64 segment id, ``24`` u32 width,
  ``28`` u32 height, ``32`` 8 bytes encoding (``bgr8``), ``40`` u64 slot stride, ``48`` u64 offset of slot 0, ``56``
  f64 frame period [s], ``64`` u64 seq of the newest complete frame (0: none yet), ``72`` f64 writer heartbeat,
  ``80`` u32 writer pid, ``128`` f64 reader heartbeat (heartbeats in ``time.monotonic()`` seconds);
* slot ``(seq - 1) % slots``: ``0`` u64 seq (0 while being written), ``8`` f64 capture time on the simulated clock,
  ``16`` f64 capture time (Unix), ``64`` the height x width x 3 pixels.

A frame is copied out and its slot's seq read before and after the copy: unchanged, the copy is whole. The reader
beats in the header while it reads, which tells the simulation that somebody wants the camera's frames.
"""

from __future__ import annotations

import mmap
import os
import socket
import struct
import time
from dataclasses import dataclass

import numpy as np

from ._server import RawFrame

SHM_DIR = "/dev/shm"
MAGIC = b"FRKRING1"
VERSION = 1
HEADER_SIZE = 4096
SLOT_HEADER = 64
HEAD = struct.Struct("<8sIIQII8sQQdQdI")  # the header up to the writer pid
ENV_VAR = "FRANKA_SIM_SHM"  # "0": never read shared memory, always HTTP
READ_ATTEMPTS = 8  # a copy overtaken by the writer is retried with the newer frame this often


class RingUnavailable(Exception):
    """The ring is not there, not this layout, not the one the server named, or no longer the camera's."""


@dataclass(frozen=True)
class RingInfo:
    """A camera's ring as ``GET /cameras`` names it, with the host of the server that named it."""

    name: str
    segment_id: int
    host: str


def enabled() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() not in ("0", "false", "no", "off")


def host_identity() -> str:
    """This host as shared memory sees it: boot id and host name ('' where there is no boot id)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        return ""
    return f"{boot}/{socket.gethostname()}"


def parse_ring(entry: object, host: object) -> RingInfo | None:
    """The ``"shm"`` entry of a camera in ``GET /cameras`` (None when absent or not understood)."""
    if not isinstance(entry, dict) or not isinstance(host, str) or not host:
        return None
    name, segment = entry.get("name"), entry.get("id")
    if not isinstance(name, str) or not name or "/" in name or name.startswith(".") or not isinstance(segment, str):
        return None
    try:
        return RingInfo(name, int(segment, 16), host)
    except ValueError:
        return None


class RingReader:
    """One camera's ring, mapped; RingUnavailable when it does not open as the ring ``info`` names."""

    def __init__(self, info: RingInfo) -> None:
        self.info = info
        self.path = os.path.join(SHM_DIR, info.name)
        try:
            fd = os.open(self.path, os.O_RDWR)  # read-write: the reader's heartbeat
        except OSError as exc:
            raise RingUnavailable(f"{self.path}: {exc.strerror}") from None
        try:
            stat = os.fstat(fd)
            if stat.st_size < HEADER_SIZE:
                raise RingUnavailable(f"{self.path}: too small for a frame ring")
            self._inode = stat.st_ino
            self._memory = mmap.mmap(fd, stat.st_size)
        except OSError as exc:
            raise RingUnavailable(f"{self.path}: {exc}") from None
        finally:
            os.close(fd)
        try:
            self._map(stat.st_size)
        except RingUnavailable:
            self._memory.close()
            raise

    def _map(self, size: int) -> None:
        magic, version, slots, segment, width, height, encoding, stride, offset, period, *_ = HEAD.unpack_from(
            self._memory, 0
        )
        if magic != MAGIC or version != VERSION:
            raise RingUnavailable(f"{self.path}: not a frame ring of version {VERSION}")
        if segment != self.info.segment_id:
            raise RingUnavailable(f"{self.path}: another ring than the server names (the simulation restarted?)")
        frame_bytes = width * height * 3
        if encoding.rstrip(b"\0") != b"bgr8" or not slots or stride < SLOT_HEADER + frame_bytes:
            raise RingUnavailable(f"{self.path}: unexpected layout")
        if offset < HEADER_SIZE or offset + slots * stride > size:
            raise RingUnavailable(f"{self.path}: shorter than its slots")
        self.slots, self.width, self.height, self.period = slots, width, height, period
        self._latest = np.ndarray((1,), np.uint64, self._memory, 64)
        self._writer_beat = np.ndarray((1,), np.float64, self._memory, 72)
        self._reader_beat = np.ndarray((1,), np.float64, self._memory, 128)
        starts = [offset + i * stride for i in range(slots)]
        self._seqs = [np.ndarray((1,), np.uint64, self._memory, start) for start in starts]
        self._times = [np.ndarray((2,), np.float64, self._memory, start + 8) for start in starts]
        view = memoryview(self._memory)
        self._pixels = [view[start + SLOT_HEADER : start + SLOT_HEADER + frame_bytes] for start in starts]
        self._view = view

    def beat(self) -> None:
        """Somebody reads this camera: the simulation renders it."""
        self._reader_beat[0] = time.monotonic()

    def latest(self) -> int:
        """Seq of the newest complete frame (0: none yet)."""
        return int(self._latest[0])

    def writer_age(self) -> float:
        """Seconds since the camera process last beat."""
        return time.monotonic() - float(self._writer_beat[0])

    def replaced(self) -> bool:
        """Whether the ring's name no longer names this ring (removed, or a restarted simulation's)."""
        try:
            return os.stat(self.path).st_ino != self._inode
        except OSError:
            return True

    def read(self) -> RawFrame | None:
        """The newest complete frame, copied out of the ring (None: none yet, or the writer kept overtaking)."""
        for _ in range(READ_ATTEMPTS):
            seq = int(self._latest[0])
            if seq == 0:
                return None
            slot = (seq - 1) % self.slots
            if int(self._seqs[slot][0]) != seq:
                continue  # overwritten since: a newer frame is the newest
            stamp, wall_time = (float(v) for v in self._times[slot])
            data = self._copy(self._pixels[slot])
            if int(self._seqs[slot][0]) == seq:  # not written into while copied: whole
                return RawFrame("color", seq, self.width, self.height, "bgr8", stamp, wall_time, data)
        return None

    @staticmethod
    def _copy(pixels: memoryview) -> bytearray:
        return bytearray(pixels)

    def close(self) -> None:
        for view in self._pixels:
            view.release()
        self._view.release()
        del self._latest, self._writer_beat, self._reader_beat, self._seqs, self._times, self._pixels
        try:
            self._memory.close()
        except BufferError:  # a frame still refers to it: unmapped with the reader
            pass


def open_ring(info: RingInfo | None) -> RingReader | None:
    """The ring of a camera when shared memory is to be used (same host, ring opens as named), else None."""
    if info is None or not enabled() or info.host != host_identity():
        return None
    try:
        return RingReader(info)
    except RingUnavailable:
        return None
