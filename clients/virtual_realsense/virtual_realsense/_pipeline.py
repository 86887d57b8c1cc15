"""``config``, ``pipeline``, ``pipeline_profile`` and ``align``: streaming one simulated camera's frames."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._devices import context, device
from ._frames import composite_frame, make_frame
from ._server import FrameClient, Poll, RawFrame, ServerUnavailable
from ._shm import RingReader, open_ring
from ._streams import video_stream_profile
from ._types import format, stream

log = logging.getLogger("virtual_realsense")

POLL_CHUNK_S = 1.0  # [s] longest single long poll: bounds how long a server restart (seq reset) goes unnoticed
BACKOFF_MIN_S = 0.05  # [s] first wait after a failed request; doubles up to BACKOFF_MAX_S
BACKOFF_MAX_S = 0.5
RING_POLL_S = 0.001  # [s] how often a ring is looked at while its next frame is due
RING_EARLY_S = 0.003  # [s] a ring is looked at from this long before its next frame is due (at the frame rate)
RING_CHECK_S = 0.5  # [s] how often whether the ring is still the camera's is checked
RING_RETRY_S = 5.0  # [s] after a ring was lost (simulation restarted), how often the server is asked for its new one

_FORMATS = {stream.color: (format.bgr8, format.rgb8), stream.depth: (format.z16,)}
_DEFAULT_FORMAT = {stream.color: format.bgr8, stream.depth: format.z16}


@dataclass
class _StreamRequest:
    stream: stream
    width: int  # 0: any
    height: int
    format: format
    fps: int


class config:  # lower case: pyrealsense2 spelling
    """Which device and streams ``pipeline.start`` should open."""

    def __init__(self) -> None:
        self._serial: str | None = None
        self._streams: dict[stream, _StreamRequest] = {}

    def enable_device(self, serial: str) -> None:
        self._serial = str(serial)

    def enable_stream(self, stream_type: stream, *args: Any, **kwargs: Any) -> None:
        """Any of pyrealsense2's overloads: ``(stream)``, ``(stream, format, fps)``, ``(stream, w, h, format, fps)``,
        ``(stream, index, w, h, format, fps)``, ``(stream, index)``, ``(stream, index, format, fps)``."""
        values: dict[str, Any] = {"width": 0, "height": 0, "format": format.any, "framerate": 0}
        names = {
            0: [],
            1: ["stream_index"],
            2: ["format", "framerate"],
            3: ["stream_index", "format", "framerate"],
            4: ["width", "height", "format", "framerate"],
            5: ["stream_index", "width", "height", "format", "framerate"],
        }.get(len(args))
        if names is None:
            raise TypeError(f"enable_stream(): unsupported number of arguments ({1 + len(args)})")
        values.update(zip(names, args, strict=True))
        values.update(kwargs)
        self._streams[stream(stream_type)] = _StreamRequest(
            stream(stream_type),
            int(values["width"]),
            int(values["height"]),
            format(values["format"]),
            int(values["framerate"]),
        )

    def enable_all_streams(self) -> None:
        self._streams = {s: _StreamRequest(s, 0, 0, format.any, 0) for s in (stream.color, stream.depth)}

    def disable_stream(self, stream_type: stream, index: int = -1) -> None:
        self._streams.pop(stream(stream_type), None)

    def disable_all_streams(self) -> None:
        self._streams.clear()

    def can_resolve(self, pipe: pipeline) -> bool:
        try:
            self.resolve(pipe)
        except RuntimeError:
            return False
        return True

    def resolve(self, pipe: pipeline) -> pipeline_profile:
        """The device and stream profiles ``pipe.start(self)`` would open; RuntimeError as pyrealsense2 raises."""
        devices = pipe._ctx.query_devices()
        if not devices:
            url = pipe._ctx.server.url
            raise RuntimeError(f"No device connected (virtual_realsense: no cameras at {url} or the servers it lists)")
        if self._serial is None:
            dev = devices[0]
        else:
            matches = [d for d in devices if d.spec.serial == self._serial]
            if not matches:
                known = ", ".join(f"{d.spec.name}={d.spec.serial}" for d in devices)
                raise RuntimeError(
                    f"Couldn't resolve requests (virtual_realsense: no simulated camera has serial "
                    f"{self._serial}; cameras: {known})"
                )
            dev = matches[0]
        defaults = (stream.color, stream.depth) if dev.spec.depth else (stream.color,)
        requests = list(self._streams.values()) or [_StreamRequest(s, 0, 0, format.any, 0) for s in defaults]
        return pipeline_profile(dev, [_resolve_stream(dev, r) for r in requests])


def _resolve_stream(dev: device, req: _StreamRequest) -> video_stream_profile:
    spec = dev.spec
    problem = None
    if req.stream not in _FORMATS or (req.stream == stream.depth and not spec.depth):
        problem = f"camera {spec.name} has no {req.stream.name} stream"
    elif req.width not in (0, spec.width) or req.height not in (0, spec.height):
        problem = f"camera {spec.name} renders {spec.width}x{spec.height}, not {req.width}x{req.height}"
    elif req.format not in (format.any, *_FORMATS[req.stream]):
        problem = f"{req.stream.name} stream has no format {req.format.name}"
    if problem:
        raise RuntimeError(f"Couldn't resolve requests (virtual_realsense: {problem})")
    fmt = _DEFAULT_FORMAT[req.stream] if req.format == format.any else req.format
    # The simulation renders at its own rate; a requested rate is recorded, not enforced.
    return video_stream_profile(req.stream, spec.width, spec.height, fmt, req.fps or spec.fps)


class pipeline_profile:  # lower case: pyrealsense2 spelling
    """The device and streams of a started pipeline."""

    def __init__(self, dev: device, streams: list[video_stream_profile]) -> None:
        self._device = dev
        self._streams = streams

    def get_device(self) -> device:
        return self._device

    def get_streams(self) -> list[video_stream_profile]:
        return list(self._streams)

    def get_stream(self, stream_type: stream, index: int = -1) -> video_stream_profile:
        for s in self._streams:
            if s.stream_type() == stream_type:
                return s
        raise RuntimeError(f"Profile does not contain the requested stream: {stream(stream_type).name}")


class _Backoff:
    """Waits between failed requests: short at first, doubling up to a cap, never past the deadline."""

    def __init__(self) -> None:
        self.delay = BACKOFF_MIN_S

    def reset(self) -> None:
        self.delay = BACKOFF_MIN_S

    def sleep(self, deadline: float) -> None:
        time.sleep(max(0.0, min(self.delay, deadline - time.monotonic())))
        self.delay = min(2 * self.delay, BACKOFF_MAX_S)


def _same_capture(a: RawFrame, b: RawFrame) -> bool:
    """Whether two frames are one capture. A ring and a server (or a restarted server) number frames apart, so
    the capture stamp (simulated clock, the same number over both paths) tells; without stamps, seq and time."""
    if math.isnan(a.stamp) or math.isnan(b.stamp):
        return (a.seq, a.wall_time) == (b.seq, b.wall_time)
    return a.stamp == b.stamp


class _FrameSource:
    """Delivers each new frame of one camera exactly once, across long polls, timeouts and server restarts.

    On the simulator's host, from the camera's shared-memory ring (``ring``): the newest frame once it is newer
    than the last one delivered, looked at around the time the next one is due. A ring that is gone or replaced
    (the simulation restarted) hands over to HTTP, and the server is asked for the new ring now and then.

    Over HTTP, normally one long poll ``after=<last seq>`` per frame. After a dropped connection, an empty long
    poll or a lost ring it first asks for the newest frame (``after=-1``): a restarted server counts its seqs from
    the start again, so a frame of another capture than the last one delivered is new even when its seq is lower.
    Across a hand-over (ring to HTTP, HTTP to ring) the capture last delivered is not delivered again.
    """

    def __init__(
        self,
        client: FrameClient,
        color: video_stream_profile,
        depth: video_stream_profile | None,
        ring: RingReader | None = None,
        find_ring: Callable[[], RingReader | None] | None = None,
    ) -> None:
        self._client = client
        self._color = color
        self._depth = depth
        self._last: RawFrame | None = None
        self._probe = True
        self._not_ready = False  # the last answer was "no frame yet"
        self.running = True
        self._ring: RingReader | None = None
        self._find_ring = find_ring
        self._ring_retry_at = float("inf")  # when to ask the server for a ring again (after one was lost)
        if ring is not None and depth is None:
            self._use_ring(ring)

    @property
    def path(self) -> str:
        """Where the frames come from: "shm" or "http"."""
        return "shm" if self._ring is not None else "http"

    def _use_ring(self, ring: RingReader) -> None:
        self._ring = ring
        self._ring_seq = 0  # the last frame delivered from this ring
        self._ring_fresh_after = time.time() - ring.period  # the first frame must be this recent (not left over)
        self._ring_checked = time.monotonic()
        self._lags: deque[float] = deque(maxlen=8)  # [s] from capture to this reader, of the last frames
        ring.beat()  # the simulation renders the camera from its next due frame on

    def _drop_ring(self, why: str) -> None:
        ring, self._ring = self._ring, None
        if ring is not None:
            log.info("virtual_realsense: %s: frames over HTTP from now on (%s)", ring.path, why)
            ring.close()
            self._probe = True
            self._ring_retry_at = time.monotonic() + RING_RETRY_S

    def close(self) -> None:
        self.running = False
        self._find_ring = None

    def next(self, deadline: float, timeout_ms: int) -> composite_frame:
        raw = None
        if self._ring is None and self._find_ring is not None and time.monotonic() >= self._ring_retry_at:
            self._ring_retry_at = time.monotonic() + RING_RETRY_S
            try:
                ring = self._find_ring()
            except ServerUnavailable:
                ring = None
            if ring is not None:
                self._use_ring(ring)
        if self._ring is not None:
            raw = self._ring_next(deadline, timeout_ms)
        if raw is None:
            raw = self._fetch_new_color(deadline, timeout_ms)
        frames = [make_frame(raw, self._color)]
        if self._depth is not None:
            frames.append(make_frame(self._fetch_depth(raw.seq, deadline, timeout_ms), self._depth))
        return composite_frame(frames)

    def _ring_next(self, deadline: float, timeout_ms: int) -> RawFrame | None:
        """The next new frame of the ring; None when the ring was lost (then HTTP takes over)."""
        ring = self._ring
        assert ring is not None
        while True:
            self._check_running()
            ring.beat()
            now = time.monotonic()
            if now - self._ring_checked >= RING_CHECK_S:  # still the ring the server names?
                self._ring_checked = now
                if ring.replaced():
                    self._drop_ring("the ring was removed or replaced")
                    return None
            if ring.latest() > self._ring_seq:
                raw = ring.read()
                if raw is not None and raw.seq > self._ring_seq and raw.wall_time >= self._ring_fresh_after:
                    self._ring_seq = raw.seq
                    if self._last is not None and _same_capture(raw, self._last):
                        continue  # delivered over HTTP just before the ring was taken up
                    self._last = raw
                    self._lags.append(time.time() - raw.wall_time)  # rendering, plus at most one look's delay
                    return raw
            if now >= deadline:
                raise RuntimeError(f"Frame didn't arrive within {timeout_ms}")
            # asleep until shortly before the next frame is due (the camera's rate, plus what rendering takes),
            # then looked at often
            due = 0.0
            if self._last is not None and self._lags:
                due = self._last.wall_time + ring.period + min(self._lags) - time.time()
            time.sleep(max(RING_POLL_S, min(due - RING_EARLY_S, deadline - now, RING_CHECK_S)))

    def _fetch_new_color(self, deadline: float, timeout_ms: int) -> RawFrame:
        backoff = _Backoff()
        while True:
            remaining = self._remaining(deadline, timeout_ms)
            probe = self._probe or self._last is None
            # a probe answers at once; after a "no frame yet" it waits for the first one (a server that subscribes
            # to a camera on request has none until the next one is rendered)
            wait = 0.0 if probe and not self._not_ready else min(remaining, POLL_CHUNK_S)
            after = self._last.seq if self._last is not None and not probe else -1
            started = time.monotonic()
            answer = self._fetch("color", after, wait, backoff, deadline)
            if answer is None:
                continue
            outcome, raw = answer
            self._not_ready = outcome is Poll.NOT_READY
            if outcome is Poll.FRAME and raw is not None:
                last = self._last
                if last is None:
                    is_new = True
                elif probe:  # after a restart the seq may be lower: any other capture than the last one is new
                    is_new = not _same_capture(raw, last)
                else:
                    is_new = raw.seq > last.seq
                self._probe = False
                if is_new:
                    self._last = raw
                    return raw
                if probe:  # the newest frame is the one already delivered: long-poll after it, as this server
                    self._last = raw  # numbers it (not as the ring or a server before a restart did)
                    continue
                self._probe = True  # a long poll answered with an old frame (a server ignoring after=)
                backoff.sleep(deadline)
                continue
            self._probe = True
            waited = wait > 0 and time.monotonic() - started >= 0.5 * wait
            if outcome in (Poll.TIMEOUT, Poll.NOT_READY) and waited:
                continue  # a real long poll that found nothing new: ask again straight away
            backoff.sleep(deadline)  # not ready, unknown camera, or a timeout that came back too soon

    def _fetch_depth(self, seq: int, deadline: float, timeout_ms: int) -> RawFrame:
        """The depth frame captured with colour frame ``seq`` (or the first one after it)."""
        backoff = _Backoff()
        while True:
            remaining = self._remaining(deadline, timeout_ms)
            started = time.monotonic()
            wait = min(remaining, POLL_CHUNK_S)
            answer = self._fetch("depth", seq - 1, wait, backoff, deadline)
            if answer is None:
                continue
            outcome, raw = answer
            if outcome is Poll.FRAME and raw is not None:
                return raw
            if not (outcome is Poll.TIMEOUT and time.monotonic() - started >= 0.5 * wait):
                backoff.sleep(deadline)

    def _fetch(self, stream: str, after: int, wait: float, backoff: _Backoff, deadline: float):
        """One long poll; None (after backing off) when the server cannot be reached."""
        try:
            answer = self._client.fetch(stream, after, wait)
        except ServerUnavailable:
            self._probe = True
            self._check_running()
            backoff.sleep(deadline)
            return None
        self._check_running()
        return answer

    def _remaining(self, deadline: float, timeout_ms: int) -> float:
        self._check_running()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RuntimeError(f"Frame didn't arrive within {timeout_ms}")
        return remaining

    def _check_running(self) -> None:
        if not self.running:
            raise RuntimeError("wait_for_frames cannot be called before start()")


class pipeline:  # lower case: pyrealsense2 spelling
    """Streams one simulated camera: ``start(config)``, then ``wait_for_frames()`` per new frame, then ``stop()``."""

    def __init__(self, ctx: context | None = None) -> None:
        self._ctx = ctx or context()
        self._lock = threading.Lock()  # serialises readers; start/stop do not wait for it
        self._profile: pipeline_profile | None = None
        self._source: _FrameSource | None = None
        self._client: FrameClient | None = None

    def start(self, cfg: config | None = None) -> pipeline_profile:
        """Opens the configured device and streams; RuntimeError when they cannot be resolved."""
        if self._source is not None:
            raise RuntimeError("start() cannot be called before stop()")
        profile = (cfg or config()).resolve(self)
        try:
            color = profile.get_stream(stream.color)
        except RuntimeError:
            raise RuntimeError("Couldn't resolve requests (virtual_realsense: a colour stream is required)") from None
        depth = next((s for s in profile.get_streams() if s.stream_type() == stream.depth), None)
        dev = profile.get_device()
        self._client = FrameClient(dev.server, dev.spec.name)  # the server that lists the camera serves its frames
        ring = open_ring(dev.spec.shm)  # on the simulator's host: straight from the camera process
        find_ring = None
        if dev.spec.shm is not None:  # a ring lost later (the simulation restarted) is looked for again

            def find_ring(server=dev.server, name=dev.spec.name) -> RingReader | None:
                spec = next((c for c in server.listing().cameras if c.name == name), None)
                return open_ring(spec.shm) if spec is not None else None

        self._source = _FrameSource(self._client, color, depth, ring, find_ring)
        self._profile = profile
        return profile

    def stop(self) -> None:
        """Closes the stream; a ``wait_for_frames`` blocked in another thread raises RuntimeError."""
        source, client = self._source, self._client
        if source is None or client is None:
            raise RuntimeError("stop() cannot be called before start()")
        source.close()
        self._source = self._client = None
        self._profile = None
        client.close()

    def wait_for_frames(self, timeout_ms: int = 5000) -> composite_frame:
        """Blocks until a frame newer than the last one returned arrives; RuntimeError after ``timeout_ms``."""
        deadline = time.monotonic() + timeout_ms / 1000.0
        source = self._source
        if source is None:
            raise RuntimeError("wait_for_frames cannot be called before start()")
        with self._lock:
            return source.next(deadline, timeout_ms)

    def try_wait_for_frames(self, timeout_ms: int = 5000) -> tuple[bool, composite_frame]:
        """``(True, frames)``, or ``(False, empty frameset)`` on timeout."""
        try:
            return True, self.wait_for_frames(timeout_ms)
        except RuntimeError:
            if self._source is None:
                raise
            return False, composite_frame()

    def poll_for_frames(self) -> composite_frame:
        """A new frameset if one is ready now, else an empty (falsy) one."""
        return self.try_wait_for_frames(timeout_ms=1)[1] if self._source is not None else composite_frame()

    def get_active_profile(self) -> pipeline_profile:
        if self._profile is None:
            raise RuntimeError("get_active_profile() can only be called between a start() and a following stop()")
        return self._profile


class align:  # lower case: pyrealsense2 spelling
    """Depth-to-colour alignment: the simulated depth is rendered from the colour camera, so frames pass through."""

    def __init__(self, align_to: stream) -> None:
        self._align_to = stream(align_to)

    def process(self, frames: composite_frame) -> composite_frame:
        return frames


__all__ = ["align", "config", "pipeline", "pipeline_profile"]
