"""Devices and sensors: one virtual device per simulated camera that ``GET /cameras`` lists."""

from __future__ import annotations

import logging

from ._server import CameraSpec, ServerUnavailable, SimServer
from ._types import camera_info, option

log = logging.getLogger("virtual_realsense")

DEPTH_SCALE_M = 0.001  # [m] per z16 unit (the server sends millimetres)


class sensor:  # lower case: pyrealsense2 spelling
    """A sensor; options are accepted and remembered but change nothing in the rendering."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._options: dict[option, float] = {}

    def set_option(self, opt: option, value: float) -> None:
        self._options[opt] = float(value)

    def get_option(self, opt: option) -> float:
        return self._options.get(opt, 0.0)

    def supports(self, what: object) -> bool:
        """Every option is accepted; of camera_info, only the name."""
        return isinstance(what, option) or what == camera_info.name

    def get_supported_options(self) -> list[option]:
        return list(option)

    def is_option_read_only(self, opt: option) -> bool:
        return False

    def get_info(self, info: camera_info) -> str:
        if info != camera_info.name:
            raise RuntimeError(f"Selected camera info is not supported: {camera_info(info).name}")
        return self._name

    def is_depth_sensor(self) -> bool:
        return isinstance(self, depth_sensor)

    def as_depth_sensor(self) -> depth_sensor:
        if not isinstance(self, depth_sensor):
            raise RuntimeError("Cannot convert sensor to depth_sensor")
        return self


class depth_sensor(sensor):  # lower case: pyrealsense2 spelling
    """The depth sensor of a camera with depth."""

    def get_depth_scale(self) -> float:
        return DEPTH_SCALE_M


class device:  # lower case: pyrealsense2 spelling
    """One simulated camera."""

    def __init__(self, spec: CameraSpec, server_url: str) -> None:
        self.spec = spec
        self._server_url = server_url
        # As on a D400, query_sensors()[0] is the stereo module when there is one; RSCapture sets exposure on it.
        self._sensors: list[sensor] = [sensor("RGB Camera")]
        if spec.depth:
            self._sensors.insert(0, depth_sensor("Stereo Module"))

    def get_info(self, info: camera_info) -> str:
        values = {
            camera_info.name: f"Virtual RealSense {self.spec.name}",
            camera_info.serial_number: self.spec.serial,
            camera_info.firmware_version: "0.0.0.0",
            camera_info.recommended_firmware_version: "0.0.0.0",
            camera_info.physical_port: f"{self._server_url}/frame/{self.spec.name}",
            camera_info.product_line: "D400",
            camera_info.product_id: "0000",
        }
        if info not in values:
            raise RuntimeError(f"Selected camera info is not supported: {camera_info(info).name}")
        return values[info]

    def supports(self, info: camera_info) -> bool:
        return info in (
            camera_info.name,
            camera_info.serial_number,
            camera_info.firmware_version,
            camera_info.recommended_firmware_version,
            camera_info.physical_port,
            camera_info.product_line,
            camera_info.product_id,
        )

    def query_sensors(self) -> list[sensor]:
        return list(self._sensors)

    @property
    def sensors(self) -> list[sensor]:
        return self.query_sensors()

    def first_color_sensor(self) -> sensor:
        return self._sensors[-1]

    def first_depth_sensor(self) -> depth_sensor:
        if not self.spec.depth:
            raise RuntimeError(f"camera {self.spec.name} has no depth sensor")
        return self._sensors[0].as_depth_sensor()

    def hardware_reset(self) -> None:
        """No-op."""

    def __repr__(self) -> str:
        return f"<virtual_realsense.device: {self.get_info(camera_info.name)} (S/N: {self.spec.serial})>"


class context:  # lower case: pyrealsense2 spelling
    """The set of simulated cameras the server at ``$FRANKA_SIM_URL`` (or ``url``) offers."""

    def __init__(self, url: str | None = None) -> None:
        self.server = SimServer(url)

    def query_devices(self) -> list[device]:
        """One device per simulated camera; empty (like a machine with no camera) if the server is unreachable."""
        try:
            specs = self.server.cameras()
        except ServerUnavailable as exc:
            log.warning("virtual_realsense: no cameras from the simulation server: %s", exc)
            return []
        return [device(spec, self.server.url) for spec in specs]

    @property
    def devices(self) -> list[device]:
        return self.query_devices()
