"""Each experiment's cameras, as its config opens them: HIL-SERL's RSCapture call sequence through the
pyrealsense2 stand-in (clients/virtual_realsense), pointed at one server of the task's world, finds and
streams every serial the config names (usb_pickup_insertion's side camera twice, object_handover's
cameras across its two servers). Real launch, real camera process (rendered at 1/4 size and scaled up,
to keep this quick), real HTTP."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import requests
from test_tasks import task_world

from conftest import wait_until

CLIENT = Path(__file__).resolve().parent.parent / "clients" / "virtual_realsense"

# each experiment config's REALSENSE_CAMERAS (key, serial), per server (robot namespace), 1280x720
EXPERIMENT_CAMERAS = {
    "ram_insertion": {"": [("wrist_1", "127122270146"), ("wrist_2", "127122270350")]},
    "usb_pickup_insertion": {
        "": [
            ("wrist_1", "127122270350"),
            ("wrist_2", "127122270146"),
            ("side_policy", "130322274175"),
            ("side_classifier", "130322274175"),  # the same camera, a second crop
        ]
    },
    "object_handover": {
        "left": [("wrist", "128422272758"), ("side", "130322274175")],
        "right": [("wrist", "127122270146")],
    },
    "egg_flip": {"": [("wrist_1", "130322274175"), ("side", "127122270146")]},
}


def open_like_rscapture(rs, serial: str):
    """RSCapture.__init__: find the serial among the devices, enable its 1280x720 bgr8 stream, start."""
    assert serial in [d.get_info(rs.camera_info.serial_number) for d in rs.context().devices], serial
    pipe, cfg = rs.pipeline(), rs.config()
    cfg.enable_device(serial)
    cfg.enable_stream(rs.stream.color, 1280, 720, rs.format.bgr8, 15)
    profile = pipe.start(cfg)
    profile.get_device().query_sensors()[0].set_option(rs.option.exposure, 10000)
    return pipe, cfg


@pytest.mark.parametrize("name", sorted(EXPERIMENT_CAMERAS))
def test_the_stock_camera_sequence_opens_every_serial_of_the_experiment(name, monkeypatch):
    with task_world(name, "cameras_config:=", "camera_render_divisor:=4") as (clients, spec):
        for robot in spec.robots:  # the cameras are up, as plugged-in RealSense cameras are
            url = clients[robot.namespace].url
            for camera in robot.cameras:
                ready = lambda u=url, c=camera.name: requests.get(f"{u}frame/{c}?timeout=1", timeout=5).status_code  # noqa: E731
                assert wait_until(lambda r=ready: r() == 200, 60.0), f"no frame from {camera.name} at {url}"
        first = clients[spec.robots[0].namespace]
        monkeypatch.syspath_prepend(str(CLIENT))
        monkeypatch.setenv("FRANKA_SIM_URL", first.url.rstrip("/"))  # one address for the whole world
        import virtual_realsense as rs

        opened = [open_like_rscapture(rs, serial) for cams in EXPERIMENT_CAMERAS[name].values() for _, serial in cams]
        try:
            align = rs.align(rs.stream.color)
            for pipe, _ in opened:  # each pipeline (the same serial twice for usb) gets frames of its own
                first_frame = align.process(pipe.wait_for_frames()).get_color_frame()
                frame = align.process(pipe.wait_for_frames()).get_color_frame()
                assert frame.is_video_frame() and frame.get_frame_number() > first_frame.get_frame_number()
                image = np.asarray(frame.get_data())
                assert image.shape == (720, 1280, 3) and image.dtype == np.uint8
                assert image.std() > 5.0, "a blank frame"
        finally:
            for pipe, cfg in opened:
                pipe.stop()
                cfg.disable_all_streams()
