"""Frames and framesets, shaped like pyrealsense2's ``frame``, ``video_frame``, ``depth_frame``, ``composite_frame``."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ._server import ENCODINGS, RawFrame
from ._streams import stream_profile, video_stream_profile
from ._types import format, stream, timestamp_domain

DEPTH_UNITS_M = 0.001  # [m] per z16 unit: the server sends millimetres, like a D400 at its default depth units


class frame:  # lower case: pyrealsense2 spelling
    """A frame; an empty one (what a frameset gives for a stream it lacks) is falsy, as in pyrealsense2."""

    def __init__(self, raw: RawFrame | None = None, profile: stream_profile | None = None) -> None:
        self._raw = raw
        self._profile = profile
        self._array: np.ndarray | None = None

    def __bool__(self) -> bool:
        return self._raw is not None

    def _require(self) -> RawFrame:
        if self._raw is None:
            raise RuntimeError('null pointer passed for argument "frame"')
        return self._raw

    def get_data(self) -> np.ndarray:
        """The pixels: ``h x w x 3`` uint8 for colour (BGR for bgr8), ``h x w`` uint16 for depth."""
        if self._array is None:
            raw = self._require()
            _, dtype, channels = ENCODINGS[raw.encoding]
            shape = (raw.height, raw.width, channels) if channels > 1 else (raw.height, raw.width)
            array = np.frombuffer(raw.data, dtype=dtype).reshape(shape)
            wanted = self._profile.format() if self._profile is not None else format.any
            if {raw.encoding, wanted.name} == {"bgr8", "rgb8"}:
                array = np.ascontiguousarray(array[..., ::-1])
            self._array = array.astype(np.uint16, copy=False) if channels == 1 else array
        return self._array

    @property
    def data(self) -> np.ndarray:
        """Same as ``get_data()``."""
        return self.get_data()

    def get_timestamp(self) -> float:
        """Capture time [ms since the Unix epoch] (the server's wall clock)."""
        return self._require().wall_time * 1000.0

    def get_frame_timestamp_domain(self) -> timestamp_domain:
        """The domain of ``get_timestamp``: host-synchronised global time."""
        return timestamp_domain.global_time

    def get_frame_number(self) -> int:
        """The server's frame sequence number (increases by one per rendered frame)."""
        return self._require().seq

    def get_sim_time(self) -> float:
        """Capture time on the simulated clock [s] (virtual_realsense only; not in pyrealsense2)."""
        return self._require().stamp

    def get_profile(self) -> stream_profile:
        """The stream this frame belongs to."""
        self._require()
        assert self._profile is not None
        return self._profile

    def get_data_size(self) -> int:
        """Size of the pixel buffer in bytes."""
        return len(self._require().data)

    def is_video_frame(self) -> bool:
        return self._raw is not None

    def is_depth_frame(self) -> bool:
        return self._raw is not None and self._raw.stream == "depth"

    def is_frameset(self) -> bool:
        return False

    def as_video_frame(self) -> video_frame:
        return self  # type: ignore[return-value]

    def as_depth_frame(self) -> depth_frame:
        if not self.is_depth_frame():
            raise RuntimeError("Error occured during execution of the processing block! frame is not a depth frame")
        return self  # type: ignore[return-value]

    def keep(self) -> None:
        """No-op: these frames are ordinary Python objects."""


class video_frame(frame):  # lower case: pyrealsense2 spelling
    """A frame with an image."""

    def get_width(self) -> int:
        return self._require().width

    def get_height(self) -> int:
        return self._require().height

    def get_bytes_per_pixel(self) -> int:
        return ENCODINGS[self._require().encoding][0]

    def get_bits_per_pixel(self) -> int:
        return 8 * self.get_bytes_per_pixel()

    def get_stride_in_bytes(self) -> int:
        return self.get_width() * self.get_bytes_per_pixel()

    @property
    def width(self) -> int:
        return self.get_width()

    @property
    def height(self) -> int:
        return self.get_height()


class depth_frame(video_frame):  # lower case: pyrealsense2 spelling
    """A z16 depth image."""

    def get_units(self) -> float:
        """Metres per depth unit."""
        return DEPTH_UNITS_M

    def get_distance(self, x: int, y: int) -> float:
        """Depth at pixel (x, y) [m]."""
        return float(self.get_data()[y, x]) * DEPTH_UNITS_M


class composite_frame(frame):  # lower case: pyrealsense2 spelling
    """A frameset: the colour frame and, where enabled, the depth frame captured with it."""

    def __init__(self, frames: list[video_frame] | None = None) -> None:
        frames = frames or []
        super().__init__(frames[0]._raw if frames else None, frames[0]._profile if frames else None)
        self._frames = frames

    def is_video_frame(self) -> bool:
        return False

    def is_depth_frame(self) -> bool:
        return False

    def is_frameset(self) -> bool:
        return True

    def as_frameset(self) -> composite_frame:
        return self

    def size(self) -> int:
        return len(self._frames)

    def __len__(self) -> int:
        return len(self._frames)

    def __iter__(self) -> Iterator[video_frame]:
        return iter(self._frames)

    def __getitem__(self, index: int) -> video_frame:
        return self._frames[index]

    def first_or_default(self, stream_type: stream, fmt: format = format.any) -> frame:
        """The frame of that stream, or an empty frame."""
        for f in self._frames:
            p = f.get_profile()
            if p.stream_type() == stream_type and fmt in (format.any, p.format()):
                return f
        return depth_frame() if stream_type == stream.depth else video_frame()

    def first(self, stream_type: stream, fmt: format = format.any) -> frame:
        """The frame of that stream; RuntimeError if the frameset has none."""
        f = self.first_or_default(stream_type, fmt)
        if not f:
            raise RuntimeError("Frame of requested stream type was not found!")
        return f

    def get_color_frame(self) -> video_frame:
        return self.first_or_default(stream.color)  # type: ignore[return-value]

    def get_depth_frame(self) -> depth_frame:
        return self.first_or_default(stream.depth)  # type: ignore[return-value]


def make_frame(raw: RawFrame, profile: video_stream_profile) -> video_frame:
    """The frame object for one raw frame of a stream."""
    return depth_frame(raw, profile) if profile.stream_type() == stream.depth else video_frame(raw, profile)
