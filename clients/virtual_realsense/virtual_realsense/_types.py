"""The pyrealsense2 enumerations that client code names (``rs.stream.color``, ``rs.format.bgr8``, ...).

Member names follow pyrealsense2; the values only need to be distinct.
"""

from __future__ import annotations

import enum


class camera_info(enum.IntEnum):  # lower case: pyrealsense2 spelling
    """What ``device.get_info`` can be asked."""

    name = 0
    serial_number = 1
    firmware_version = 2
    recommended_firmware_version = 3
    physical_port = 4
    debug_op_code = 5
    advanced_mode = 6
    product_id = 7
    camera_locked = 8
    usb_type_descriptor = 9
    product_line = 10
    asic_serial_number = 11
    firmware_update_id = 12


class stream(enum.IntEnum):
    """Stream types."""

    any = 0
    depth = 1
    color = 2
    infrared = 3
    fisheye = 4
    gyro = 5
    accel = 6
    gpio = 7
    pose = 8
    confidence = 9


class format(enum.IntEnum):  # shadows the builtin in this module only, as pyrealsense2 does
    """Pixel formats."""

    any = 0
    z16 = 1
    disparity16 = 2
    xyz32f = 3
    yuyv = 4
    rgb8 = 5
    bgr8 = 6
    rgba8 = 7
    bgra8 = 8
    y8 = 9
    y16 = 10
    raw10 = 11
    raw16 = 12
    raw8 = 13
    uyvy = 14
    mjpeg = 15


class option(enum.IntEnum):
    """Sensor options; the virtual sensors accept and remember every one of them."""

    backlight_compensation = 0
    brightness = 1
    contrast = 2
    exposure = 3
    gain = 4
    gamma = 5
    hue = 6
    saturation = 7
    sharpness = 8
    white_balance = 9
    enable_auto_exposure = 10
    enable_auto_white_balance = 11
    visual_preset = 12
    laser_power = 13
    accuracy = 14
    motion_range = 15
    filter_option = 16
    confidence_threshold = 17
    emitter_enabled = 18
    frames_queue_size = 19
    power_line_frequency = 20
    depth_units = 21
    global_time_enabled = 22
    auto_exposure_priority = 23


class timestamp_domain(enum.IntEnum):
    """Clock that ``frame.get_timestamp`` is expressed in."""

    hardware_clock = 0
    system_time = 1
    global_time = 2
