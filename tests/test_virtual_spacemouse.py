"""clients/virtual_spacemouse: the easyhid stand-in (a SpaceMouse Wireless whose reports carry the state
posted to a server's /spacemouse), the pynput stand-in (the keys posted to /keys), and the switch of
imports by FRANKA_SIM_SPACEMOUSE / FRANKA_SIM_KEYS. Against real HTTP servers in this process
(create_app over test_routes.py's stand-in robot, served by werkzeug on free ports).

The reports are checked with a decoder written here from the device's report format (report id 1:
six little-endian int16, tx ty tz rx ry rz, full scale 350; report id 3: byte 1, bit 0 left, bit 1
right), named and signed as HIL-SERL's pyspacemouse names them for this device (x = tx, y = -ty,
z = -tz, pitch = -rx, roll = -ry, yaw = rz, each / 350): not with the package's own encoder."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import hil_serl
import pytest
import requests
from test_routes import client
from werkzeug.serving import make_server

from franka_server_ros2.teleop import KEY_NAMES

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "clients" / "virtual_spacemouse"
sys.path.insert(0, str(PACKAGE_DIR))  # CI does not pip-install the client

from virtual_spacemouse import easyhid, report  # noqa: E402
from virtual_spacemouse.pynput import keyboard  # noqa: E402

# ---------------------------------------------------------------- the test's own decoder of the reports
SCALE = 350.0
NAMES_AND_SIGNS = (("x", 1), ("y", -1), ("z", -1), ("pitch", -1), ("roll", -1), ("yaw", 1))  # tx ty tz rx ry rz
ORDER = ("x", "y", "z", "roll", "pitch", "yaw")  # the order of /spacemouse's axes


class Decoded:
    """The 6-DoF state and two buttons, updated report by report as a SpaceMouse reader keeps them."""

    def __init__(self) -> None:
        self.values = dict.fromkeys(ORDER, 0.0)
        self.buttons = [0, 0]
        self.reports = 0

    def feed(self, data: bytes) -> None:
        self.reports += 1
        if data[0] == 1:
            raw = struct.unpack("<6h", bytes(data[1:13]))
            for (name, sign), value in zip(NAMES_AND_SIGNS, raw, strict=True):
                self.values[name] = sign * value / SCALE
        elif data[0] == 3:
            self.buttons = [data[1] & 1, (data[1] >> 1) & 1]
        else:
            raise AssertionError(f"unexpected report id {data[0]}")

    @property
    def axes(self) -> list[float]:
        return [self.values[n] for n in ORDER]


def decode(*reports: bytes) -> Decoded:
    decoded = Decoded()
    for r in reports:
        decoded.feed(r)
    return decoded


# ---------------------------------------------------------------- servers
class ServedApp:
    """create_app over the stand-in robot, served on a free port in a thread."""

    def __init__(self, servers: tuple[str, ...] = ()) -> None:
        test_client, _ = client(servers=servers)
        self.app = test_client.application
        self.server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.session = requests.Session()

    def spacemouse(self, axes, buttons=(0, 0)) -> None:
        response = self.session.post(f"{self.url}/spacemouse", json={"axes": list(axes), "buttons": list(buttons)})
        assert response.status_code == 200, response.text

    def key(self, key: str) -> None:
        assert self.session.post(f"{self.url}/keys", json={"key": key}).status_code == 200

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.session.close()


@contextlib.contextmanager
def served(n: int = 1):
    apps = [ServedApp() for _ in range(n)]
    try:
        yield apps
    finally:
        for a in apps:
            a.stop()


@pytest.fixture()
def sim_env(monkeypatch):
    """Sets FRANKA_SIM_URL (and clears the device list override) for one server."""
    monkeypatch.delenv("FRANKA_SIM_SPACEMOUSE_URLS", raising=False)
    with served() as (app,):
        monkeypatch.setenv("FRANKA_SIM_URL", app.url)
        yield app


def read_until(device, predicate, timeout: float = 3.0, decoded: Decoded | None = None) -> Decoded:
    """Reads reports (as pyspacemouse does: read(13), nothing when None) until `predicate(decoded)`."""
    decoded = decoded or Decoded()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = device.read(13)
        if data:
            assert isinstance(data, bytearray) and len(data) == 13
            decoded.feed(data)
            if predicate(decoded):
                return decoded
    raise AssertionError(f"not reached in {timeout} s: axes {decoded.axes}, buttons {decoded.buttons}")


def near(a, b, tol=0.5 / SCALE + 1e-9) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a, b, strict=True))


# ---------------------------------------------------------------- the reports
@pytest.mark.parametrize(
    "axes",
    [
        [0.0] * 6,
        [1.0, -1.0, 0.5, -0.5, 0.25, -0.25],
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        [-0.7, 0.0, 0.0, 0.0, 0.0, 0.9],
        [0.003, -0.003, 0.0014, 0.0, 0.0, 0.0],  # about one count of the device (1/350)
    ],
)
def test_motion_reports_decode_to_the_intended_six_values(axes):
    data = report.motion_report(axes)
    assert len(data) == 13 and data[0] == 1
    assert near(decode(data).axes, axes)


def test_each_axis_lands_in_its_own_bytes_with_the_devices_sign():
    """One axis at a time: which int16 of the report carries it, and its raw sign on the device."""
    expected_slot = {"x": (0, 1), "y": (1, -1), "z": (2, -1), "roll": (4, -1), "pitch": (3, -1), "yaw": (5, 1)}
    for i, name in enumerate(ORDER):
        axes = [0.0] * 6
        axes[i] = 0.5
        raw = struct.unpack("<6h", report.motion_report(axes)[1:])
        slot, sign = expected_slot[name]
        assert raw[slot] == sign * 175 and sum(abs(v) for v in raw) == 175, (name, raw)


def test_full_deflection_is_350_counts_and_beyond_is_clipped():
    raw = struct.unpack("<6h", report.motion_report([2.0, -3.0, 1.0, -1.0, 1.0, -1.0])[1:])
    assert [abs(v) for v in raw] == [350] * 6


@pytest.mark.parametrize("buttons", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_button_reports_decode_to_the_buttons(buttons):
    data = report.button_report(buttons)
    assert data[0] == 3
    assert decode(data).buttons == list(buttons)


def test_the_device_is_a_spacemouse_wireless_by_its_usb_ids():
    assert (report.VENDOR_ID, report.PRODUCT_ID) == (0x256F, 0xC62E)


# ---------------------------------------------------------------- the easyhid API that pyspacemouse uses
def test_enumeration_finds_one_spacemouse_with_the_attributes_pyspacemouse_reads(sim_env):
    hid = easyhid.Enumeration()
    (device,) = hid.find()
    assert (device.vendor_id, device.product_id) == (0x256F, 0xC62E)
    assert hid.find(vid=0x256F, pid=0xC62E) == [device] and hid.find(vid=0x046D) == []
    assert easyhid.Enumeration(vid=0x256F).find() and not easyhid.Enumeration(pid=0xC626).find()
    assert device.product_string == "SpaceMouse Wireless" and device.manufacturer_string == "3Dconnexion"
    assert isinstance(device.release_number, int)
    assert "".join(f"{ord(c):02X}" for c in device.serial_number)  # pyspacemouse turns it into hex
    assert sim_env.url in device.path and "256f:c62e" in device.description()
    with pytest.raises(easyhid.HIDException):
        device.read(13)  # not open
    with pytest.raises(easyhid.HIDException):
        device.set_nonblocking(True)
    device.open()
    with pytest.raises(easyhid.HIDException):
        device.open()  # already open
    with pytest.raises(TypeError):
        device.set_nonblocking(1)
    device.set_nonblocking(True)
    assert device.is_open() and device.is_connected()
    assert device.write(b"\x01") == 2  # an LED report: accepted, ignored
    device.close()
    assert not device.is_open()
    with pytest.raises(easyhid.HIDException):
        device.read(13)


def test_the_device_reports_what_is_posted_to_the_server(sim_env):
    (device,) = easyhid.Enumeration().find()
    device.open()
    device.set_nonblocking(True)
    try:
        assert device.read(13) is None  # at rest: nothing to report (a non-blocking read comes back empty)
        push = [0.2, -0.4, 0.6, -0.8, 1.0, -1.0]
        sim_env.spacemouse(push, (1, 0))
        decoded = read_until(device, lambda d: near(d.axes, push) and d.buttons == [1, 0])
        sim_env.spacemouse([0.0, 0.0, -0.3, 0.0, 0.0, 0.05], (0, 1))
        read_until(device, lambda d: near(d.axes, [0, 0, -0.3, 0, 0, 0.05]) and d.buttons == [0, 1], decoded=decoded)
        # nobody posts: after 0.5 s the server's state is at rest, and so is the device
        start = time.monotonic()
        read_until(device, lambda d: d.axes == [0.0] * 6 and d.buttons == [0, 0], decoded=decoded)
        assert 0.4 < time.monotonic() - start < 1.5
    finally:
        device.close()


def test_a_deflected_cap_streams_reports_and_a_resting_one_is_silent(sim_env):
    (device,) = easyhid.Enumeration().find()
    device.open()
    device.set_nonblocking(False)
    try:
        for _ in range(5):  # a person holding the cap: one state per 0.1 s, one motion report each
            sim_env.spacemouse([0.5, 0, 0, 0, 0, 0])
            time.sleep(0.1)
        decoded = Decoded()
        while (data := device.read(13, timeout=50)) is not None:
            decoded.feed(data)
        assert decoded.reports >= 5 and near(decoded.axes, [0.5, 0, 0, 0, 0, 0])
        sim_env.spacemouse([0.0] * 6)
        read_until(device, lambda d: d.axes == [0.0] * 6, decoded=decoded)
        for _ in range(3):
            sim_env.spacemouse([0.0] * 6)
        assert device.read(13, timeout=300) is None  # at rest, unchanged: nothing
    finally:
        device.close()


def _read_in_child(device, queue) -> None:
    decoded = Decoded()
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        data = device.read(13)
        if data:
            decoded.feed(data)
            if decoded.buttons == [1, 1]:
                break
    queue.put((decoded.axes, decoded.buttons))


def test_a_device_opened_in_one_process_is_read_in_a_forked_one(sim_env):
    """HIL-SERL's SpaceMouseExpert opens the device, then reads it in a forked multiprocessing.Process."""
    (device,) = easyhid.Enumeration().find()
    device.open()
    device.set_nonblocking(True)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_read_in_child, args=(device, queue), daemon=True)
    child.start()
    try:
        time.sleep(0.3)
        for _ in range(3):
            sim_env.spacemouse([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], (1, 1))
            time.sleep(0.1)
        axes, buttons = queue.get(timeout=10)
        assert near(axes, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]) and buttons == [1, 1]
    finally:
        child.join(5)
        device.close()


def test_an_unreachable_server_reads_as_a_spacemouse_at_rest(monkeypatch, capfd):
    with served() as (app,):
        monkeypatch.setenv("FRANKA_SIM_SPACEMOUSE_URLS", app.url)
        (device,) = easyhid.Enumeration().find()
        device.open()
        device.set_nonblocking(True)
        app.spacemouse([0.5] * 6, (1, 0))
        decoded = read_until(device, lambda d: d.buttons == [1, 0])
        app.stop()  # the server goes away while the cap is deflected
        read_until(device, lambda d: d.axes == [0.0] * 6 and d.buttons == [0, 0], decoded=decoded, timeout=5)
        device.close()
    assert "no SpaceMouse state" in capfd.readouterr().err


def test_one_device_per_server_of_the_world(monkeypatch):
    """object_handover: FRANKA_SIM_URL the left server, whose GET /cameras names the right one: two
    devices, left first (DualSpacemouseIntervention's order); or as FRANKA_SIM_SPACEMOUSE_URLS lists them."""
    monkeypatch.delenv("FRANKA_SIM_SPACEMOUSE_URLS", raising=False)
    with served() as (right,):
        left = ServedApp(servers=(right.url + "/",))
        try:
            monkeypatch.setenv("FRANKA_SIM_URL", left.url)
            devices = easyhid.Enumeration().find(vid=0x256F, pid=0xC62E)
            assert [d.url for d in devices] == [left.url, right.url + "/"]
            assert len({d.serial_number for d in devices}) == 2
            for d in devices:
                d.open()
                d.set_nonblocking(True)
            left.spacemouse([0.5, 0, 0, 0, 0, 0])
            right.spacemouse([0, 0, -0.5, 0, 0, 0], (1, 0))
            assert near(read_until(devices[0], lambda d: d.axes[0] != 0).axes, [0.5, 0, 0, 0, 0, 0])
            got = read_until(devices[1], lambda d: d.axes[2] != 0 and d.buttons == [1, 0])
            assert near(got.axes, [0, 0, -0.5, 0, 0, 0])
            for d in devices:
                d.close()
            monkeypatch.setenv("FRANKA_SIM_SPACEMOUSE_URLS", f"{right.url}, {left.url}")
            assert [d.url for d in easyhid.Enumeration().find()] == [right.url, left.url]
        finally:
            left.stop()


# ---------------------------------------------------------------- the pynput stand-in
def test_the_key_names_are_the_servers():
    assert set(keyboard.KEY_NAMES) == set(KEY_NAMES)


def test_keys_compare_as_the_scripts_compare_them():
    assert str(keyboard.Key.f1) == "Key.f1"  # RAMEnv
    assert str(keyboard.Key.space) == "Key.space"  # record_success_fail
    assert keyboard.key_from_name("esc") == keyboard.Key.esc  # FrankaEnv: key == keyboard.Key.esc
    assert keyboard.key_from_name("esc") is keyboard.Key.esc
    assert keyboard.key_from_name("a") == keyboard.KeyCode.from_char("a") and str(keyboard.key_from_name("a")) == "'a'"
    assert keyboard.key_from_name("a") != keyboard.Key.esc and keyboard.key_from_name("nonsense") is None
    assert len({k.value for k in keyboard.Key}) == len(keyboard.KEY_NAMES)  # no member is an alias of another


def test_a_listener_hears_the_keys_posted_after_it_started(sim_env):
    sim_env.key("esc")  # before the listener: not heard
    pressed, released = [], []
    listener = keyboard.Listener(on_press=pressed.append, on_release=released.append)
    listener.start()
    listener.wait()
    assert listener.running and listener.daemon
    for key in ("esc", "space", "f1", "q"):
        sim_env.key(key)
    deadline = time.monotonic() + 5
    while len(released) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    listener.stop()
    listener.join(5)
    assert not listener.running
    assert pressed == [keyboard.Key.esc, keyboard.Key.space, keyboard.Key.f1, keyboard.KeyCode.from_char("q")]
    assert released == pressed
    assert [str(k) for k in pressed] == ["Key.esc", "Key.space", "Key.f1", "'q'"]


def test_a_callback_that_returns_false_stops_the_listener_and_an_error_is_raised_by_join(sim_env):
    seen = []

    def until_esc(key):
        seen.append(key)
        return key != keyboard.Key.esc

    with keyboard.Listener(on_press=until_esc) as listener:
        sim_env.key("a")
        sim_env.key("esc")
        sim_env.key("b")
        listener.join(5)
    assert seen == [keyboard.KeyCode.from_char("a"), keyboard.Key.esc]

    def broken(key):
        raise ValueError("boom")

    listener = keyboard.Listener(on_press=broken)
    listener.start()
    listener.wait()
    sim_env.key("x")
    with pytest.raises(ValueError, match="boom"):
        listener.join(5)


def test_the_env_listeners_of_hil_serl_react_as_with_a_keyboard(sim_env):
    """FrankaEnv (Esc), record_success_fail (space), RAMEnv (F1), written as those scripts write them."""
    state = {"terminate": False, "success_key": False, "should_regrasp": False}

    def env_on_press(key):
        if key == keyboard.Key.esc:
            state["terminate"] = True

    def success_on_press(key):
        try:
            if str(key) == "Key.space":
                state["success_key"] = True
        except AttributeError:
            pass

    def ram_on_press(key):
        if str(key) == "Key.f1":
            state["should_regrasp"] = True

    listeners = [keyboard.Listener(on_press=f) for f in (env_on_press, success_on_press, ram_on_press)]
    for listener in listeners:
        listener.start()
        listener.wait()
    for key in ("esc", " ", "f1"):
        sim_env.key(key)
    deadline = time.monotonic() + 5
    while not all(state.values()) and time.monotonic() < deadline:
        time.sleep(0.02)
    for listener in listeners:
        listener.stop()
    assert all(state.values()), state


# ---------------------------------------------------------------- the switch
def run_python(code: str, extra_path: str = "", **env: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter with the client's directory processed as site-packages (its .pth runs)
    and FRANKA_SIM_* only as given."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FRANKA_SIM_")}
    clean["PYTHONPATH"] = os.pathsep.join(p for p in [extra_path, clean.get("PYTHONPATH", "")] if p)
    prelude = f"import site; site.addsitedir({str(PACKAGE_DIR)!r})\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code], env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


PROBE = """
import importlib
for name in ("easyhid", "pynput", "pynput.keyboard"):
    try:
        module = importlib.import_module(name)
    except ImportError:
        print(name, "ImportError")
    else:
        print(name, module.__name__, getattr(module, "REAL", False))
"""


@pytest.fixture()
def real_packages(tmp_path: Path) -> str:
    """Stand-ins for the real easyhid and pynput (neither is installed here), marked REAL."""
    (tmp_path / "easyhid").mkdir()
    (tmp_path / "easyhid" / "__init__.py").write_text("REAL = True\n")
    (tmp_path / "pynput").mkdir()
    (tmp_path / "pynput" / "__init__.py").write_text("REAL = True\n")
    (tmp_path / "pynput" / "keyboard.py").write_text("REAL = True\n")
    return str(tmp_path)


def test_the_pth_hook_switches_each_import_only_when_asked(real_packages):
    assert (PACKAGE_DIR / "virtual_spacemouse.pth").read_text().startswith("import ")  # site runs import lines
    both = run_python(PROBE, real_packages, FRANKA_SIM_SPACEMOUSE="1", FRANKA_SIM_KEYS="1")
    assert both.returncode == 0, both.stderr
    assert both.stdout.split("\n")[:3] == [
        "easyhid virtual_spacemouse.easyhid False",
        "pynput virtual_spacemouse.pynput False",
        "pynput.keyboard virtual_spacemouse.pynput.keyboard False",
    ]
    mouse_only = run_python(PROBE, real_packages, FRANKA_SIM_SPACEMOUSE="true")
    assert mouse_only.stdout.split("\n")[:3] == [
        "easyhid virtual_spacemouse.easyhid False",
        "pynput pynput True",
        "pynput.keyboard pynput.keyboard True",
    ]
    for env in ({}, {"FRANKA_SIM_SPACEMOUSE": "0", "FRANKA_SIM_KEYS": "no"}):
        real = run_python(PROBE, real_packages, **env)
        assert real.stdout.split("\n")[:3] == [
            "easyhid easyhid True",
            "pynput pynput True",
            "pynput.keyboard pynput.keyboard True",
        ], env
    nothing = run_python(PROBE)  # no variable, no real package: the ImportError a missing package gives
    assert nothing.stdout.split("\n")[:3] == [
        "easyhid ImportError",
        "pynput ImportError",
        "pynput.keyboard ImportError",
    ]


def test_the_imports_hil_serl_writes_give_the_stand_ins(sim_env):
    code = """
from easyhid import Enumeration, HIDException
from pynput import keyboard
import easyhid, virtual_spacemouse.easyhid as mine
assert easyhid is mine and HIDException is mine.HIDException
(device,) = Enumeration().find()
print(hex(device.vendor_id), hex(device.product_id), keyboard.Listener.__module__, str(keyboard.Key.esc))
"""
    out = run_python(code, FRANKA_SIM_SPACEMOUSE="1", FRANKA_SIM_KEYS="1", FRANKA_SIM_URL=sim_env.url)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0x256f", "0xc62e", "virtual_spacemouse.pynput.keyboard", "Key.esc"]


def test_the_wheel_puts_the_pth_file_into_site_packages(tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    source = tmp_path / "src"
    shutil.copytree(PACKAGE_DIR, source, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp_path.glob("virtual_spacemouse-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "virtual_spacemouse.pth",
        "virtual_spacemouse_hook.py",
        "virtual_spacemouse/easyhid.py",
        "virtual_spacemouse/pynput/keyboard.py",
    } <= names


# ---------------------------------------------------------------- HIL-SERL's own pyspacemouse and SpaceMouseExpert
# run in HIL-SERL's environment (tests/hil_serl.py), unaltered, from its checkout, with the stand-in pip-installed


@hil_serl.may_build
def test_hil_serls_own_pyspacemouse_opens_and_decodes_the_virtual_device(sim_env):
    code = f"""
import time, requests
from franka_env.spacemouse import pyspacemouse
assert pyspacemouse.list_devices() == ["SpaceMouse Wireless"]
device = pyspacemouse.open()
requests.post({sim_env.url!r} + "/spacemouse", json={{"axes": [0.2, -0.4, 0.6, -0.8, 1.0, -1.0], "buttons": [1, 0]}})
deadline = time.monotonic() + 5
while time.monotonic() < deadline:
    (state,) = pyspacemouse.read_all()
    if state.buttons == [1, 0] and abs(state.yaw + 1.0) < 0.01:
        break
print(round(state.x, 3), round(state.y, 3), round(state.z, 3), round(state.roll, 3), round(state.pitch, 3),
      round(state.yaw, 3), list(state.buttons))
"""
    returncode, output = hil_serl.run(code, env={"FRANKA_SIM_SPACEMOUSE": "1", "FRANKA_SIM_URL": sim_env.url})
    assert returncode == 0, output
    assert "0.2 -0.4 0.6 -0.8 1.0 -1.0 [1, 0]" in output.splitlines(), output


@hil_serl.may_build
def test_hil_serls_own_spacemouse_expert_gives_the_action_of_the_posted_state(sim_env):
    """SpaceMouseExpert opens the device, reads it in a forked process and shares the action through a
    multiprocessing Manager: action = [-y, x, z, -roll, -pitch, -yaw], buttons [left, right]. (get_action reads
    the action and the buttons one after the other from the Manager, so the buttons may already be the new ones
    while the action is not yet: it is read until both are.)"""
    code = f"""
import time, requests
from franka_env.spacemouse.spacemouse_expert import SpaceMouseExpert
expert = SpaceMouseExpert()
deadline = time.monotonic() + 8
while time.monotonic() < deadline:
    body = {{"axes": [0.2, -0.4, 0.6, -0.8, 1.0, -1.0], "buttons": [0, 1]}}
    requests.post({sim_env.url!r} + "/spacemouse", json=body)
    action, buttons = expert.get_action()
    if list(buttons) == [0, 1] and abs(action[5] - 1.0) < 0.01:
        break
    time.sleep(0.05)
print(" ".join(f"{{a:.3f}}" for a in action), list(buttons))
expert.close()
"""
    returncode, output = hil_serl.run(code, env={"FRANKA_SIM_SPACEMOUSE": "1", "FRANKA_SIM_URL": sim_env.url})
    assert returncode == 0, output
    assert "0.400 0.200 0.600 0.800 -1.000 1.000 [0, 1]" in output.splitlines(), output
