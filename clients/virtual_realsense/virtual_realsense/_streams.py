"""Stream profiles: which stream, at what size, format and rate."""

from __future__ import annotations

from ._types import format, stream


class stream_profile:  # lower case: pyrealsense2 spelling
    """One stream of a started pipeline."""

    def __init__(self, stream_type: stream, fmt: format, fps: int, index: int = 0) -> None:
        self._stream = stream_type
        self._format = fmt
        self._fps = fps
        self._index = index

    def stream_type(self) -> stream:
        return self._stream

    def format(self) -> format:
        return self._format

    def fps(self) -> int:
        return self._fps

    def stream_index(self) -> int:
        return self._index

    def stream_name(self) -> str:
        return self._stream.name.capitalize()

    def unique_id(self) -> int:
        return int(self._stream)

    def is_video_stream_profile(self) -> bool:
        return isinstance(self, video_stream_profile)

    def as_video_stream_profile(self) -> video_stream_profile:
        if not isinstance(self, video_stream_profile):
            raise RuntimeError("Cannot convert stream profile to video_stream_profile")
        return self

    def __repr__(self) -> str:
        name = f"{self._stream.name}({self._index})"
        return f"<virtual_realsense.stream_profile {name} {self._format.name} {self._fps}Hz>"


class video_stream_profile(stream_profile):  # lower case: pyrealsense2 spelling
    """An image stream."""

    def __init__(self, stream_type: stream, width: int, height: int, fmt: format, fps: int, index: int = 0) -> None:
        super().__init__(stream_type, fmt, fps, index)
        self._width = width
        self._height = height

    def width(self) -> int:
        return self._width

    def height(self) -> int:
        return self._height

    def __repr__(self) -> str:
        return (
            f"<virtual_realsense.video_stream_profile {self._stream.name}({self._index}) "
            f"{self._width}x{self._height} @ {self._fps}fps {self._format.name}>"
        )
