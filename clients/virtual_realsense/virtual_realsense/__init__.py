"""The part of the ``pyrealsense2`` API that HIL-SERL's RSCapture uses, backed by the Franka simulation's HTTP
server (``$FRANKA_SIM_URL``, default http://127.0.0.1:5000) instead of USB RealSense cameras.

Use it as ``import virtual_realsense as rs``, or let ``import pyrealsense2`` return it by setting
``FRANKA_SIM_CAMERAS=1`` (see ``virtual_realsense_hook`` and the README).
"""

from ._devices import context, depth_sensor, device, sensor
from ._frames import composite_frame, depth_frame, frame, video_frame
from ._pipeline import align, config, pipeline, pipeline_profile
from ._server import DEFAULT_URL, URL_ENV
from ._streams import stream_profile, video_stream_profile
from ._types import camera_info, format, option, stream, timestamp_domain

__version__ = "0.1.0"

# pyrealsense2 names the frameset type both ways.
frameset = composite_frame

__all__ = [
    "DEFAULT_URL",
    "URL_ENV",
    "align",
    "camera_info",
    "composite_frame",
    "config",
    "context",
    "depth_frame",
    "depth_sensor",
    "device",
    "format",
    "frame",
    "frameset",
    "option",
    "pipeline",
    "pipeline_profile",
    "sensor",
    "stream",
    "stream_profile",
    "timestamp_domain",
    "video_frame",
    "video_stream_profile",
]
