"""Devices and sensors: one virtual device per simulated camera that ``GET /cameras`` lists."""

from __future__ import annotations

import logging
from collections import deque

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
    """One simulated camera, and the server that serves its frames."""

    def __init__(self, spec: CameraSpec, server: SimServer) -> None:
        self.spec = spec
        self.server = server
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
            camera_info.physical_port: f"{self.server.url}/frame/{self.spec.name}",
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
    """The simulated cameras of the world: those of the server at ``$FRANKA_SIM_URL`` (or ``url``) and of the
    other servers it lists (``"servers"`` of ``GET /cameras``; one world may have a server per robot)."""

    def __init__(self, url: str | None = None) -> None:
        self.server = SimServer(url)

    def query_devices(self) -> list[device]:
        """One device per simulated camera of the world, each served by the server that lists it.

        The server's own cameras come first, then those of the servers it lists (and those they list), each server
        asked once. A serial listed twice keeps its first device. An unreachable server is skipped with a warning:
        no devices at all (like a machine with no camera) when it is ``$FRANKA_SIM_URL`` itself.
        """
        devices: dict[str, device] = {}
        seen = {self.server.key}
        pending: deque[tuple[SimServer, SimServer | None]] = deque([(self.server, None)])  # (server, listed by)
        while pending:
            server, listed_by = pending.popleft()
            try:
                listing = server.listing()
            except ServerUnavailable as exc:
                if listed_by is None:
                    log.warning("virtual_realsense: no cameras from the simulation server: %s", exc)
                else:
                    log.warning(
                        "virtual_realsense: skipping the cameras of %s (listed by %s): %s",
                        server.url,
                        listed_by.url,
                        exc,
                    )
                continue
            for spec in listing.cameras:
                kept = devices.get(spec.serial)
                if kept is None:
                    devices[spec.serial] = device(spec, server)
                elif kept.spec != spec:  # the same camera listed by two servers of the world is no news
                    log.warning(
                        "virtual_realsense: serial %s is both %s at %s and %s at %s; using the first",
                        spec.serial,
                        kept.spec.name,
                        kept.server.url,
                        spec.name,
                        server.url,
                    )
            for url in listing.servers:
                try:
                    peer = SimServer(url)
                except ValueError:
                    log.warning("virtual_realsense: %s lists %r, not an http(s)://host[:port] address", server.url, url)
                    continue
                if peer.key not in seen:
                    seen.add(peer.key)
                    pending.append((peer, server))
        return list(devices.values())

    @property
    def devices(self) -> list[device]:
        return self.query_devices()
