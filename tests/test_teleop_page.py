"""The teleop page (GET /teleop) in a real headless browser: Debian's chromium, driven by selenium through
Debian's chromedriver (scripts/install_browser.sh installs both; `make test` runs it).

The world is sim.launch.py with its two wrist cameras. A person's key presses go to the page as real
keyboard events; the page posts them to /spacemouse; HIL-SERL's side is emulated as in
test_scripted_expert: the virtual SpaceMouse read through the easyhid stand-in, SpacemouseIntervention's
action in place of a zero policy, FrankaEnv.step at 10 Hz over HTTP. Real launch, real ROS 2, real HTTP,
real MuJoCo, a real browser.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time

import hil_serl
import numpy as np
import pytest
from harness import wait_until
from test_scripted_expert import pick_cube_actor

from conftest import second_robot

CHROMIUM = os.environ.get("FRANKA_SIM_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("FRANKA_SIM_CHROMEDRIVER", "/usr/bin/chromedriver")


@pytest.fixture(scope="module")
def camera_world():
    """sim.launch.py with the default wrist cameras (1280x720 @ 15 fps), on a port and ROS domain of its own,
    its Robotiq opened to the published server's position 175 (for the page's reopen button; nothing else
    on the page depends on it)."""
    with second_robot("cameras_config:=", "robotiq_open_position:=175") as (robot, _node, _process):
        yield robot


@pytest.fixture(scope="module")
def browser():
    """Headless chromium, as a person's browser (the flags keep it off the closed network)."""
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        pytest.fail(f"{CHROMIUM} and {CHROMEDRIVER} are needed: scripts/install_browser.sh installs them (as root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--window-size=1400,1000", f"--user-data-dir={tempfile.mkdtemp(prefix='teleop-chromium-')}",
    ):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    yield driver
    driver.quit()


@pytest.fixture()
def page(browser, camera_world):
    browser.get(camera_world.url + "teleop")
    assert wait_until(lambda: browser.execute_script("return document.readyState") == "complete", 10.0)
    return browser


def hold(driver, key: str, seconds: float) -> None:
    """A real key press on the page: down, held, up."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).key_down(key).perform()
    time.sleep(seconds)
    ActionChains(driver).key_up(key).perform()


def frames_shown(driver) -> dict[str, int]:
    """Camera tile -> frames the page has shown."""
    return driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#cameras figure')]"
        ".map(f => [f.dataset.camera, Number(f.dataset.frames)]))"
    )


@contextlib.contextmanager
def stepping_env(robot):
    """HIL-SERL's actor on the page's world, unaltered, in its environment (tests/hil_serl.ACTOR): FrankaEnv and
    SpacemouseIntervention reading SpaceMouseExpert over the virtual SpaceMouse, the zero policy at 10 Hz, from
    its reset on."""
    with hil_serl.actor({**pick_cube_actor(robot.url), "episodes": 0}, [robot.url]) as env:
        env.expect("@@ reset", hil_serl.ACTOR_START)
        env.answer()
        yield env


def test_the_page_shows_every_camera_live_and_the_robot_state(page, camera_world):
    shown = lambda: frames_shown(page)  # noqa: E731
    assert wait_until(lambda: set(shown()) == {"wrist_1", "wrist_2"} and min(shown().values()) > 0, 15.0), shown()
    before = frames_shown(page)
    time.sleep(2.0)
    after = frames_shown(page)
    for camera in ("wrist_1", "wrist_2"):
        assert after[camera] - before[camera] >= 10, (before, after)  # 15 fps cameras, 2 s: views update
    sizes = page.execute_script(
        "return [...document.querySelectorAll('#cameras img')].map(i => [i.naturalWidth, i.naturalHeight])"
    )
    assert sizes == [[1280, 720], [1280, 720]]  # each a decoded camera frame
    x, y, z = camera_world.pose()[:3]
    assert wait_until(lambda: "position" in page.find_element("id", "state").text, 5.0)
    shown = page.find_element("id", "state").text.split("\n")[0]  # "position [m] x, y, z"
    numbers = [float(v) for v in shown.split("]", 1)[1].split(",")]
    assert np.allclose(numbers, [x, y, z], atol=2e-3), shown
    assert page.find_element("id", "link").text == "connected"


def test_a_key_held_on_the_page_moves_the_simulated_arm_through_the_stock_env(page, camera_world):
    """W is +x of the robot's base (SpaceMouse y = -1), A is +y; released, the arm stops; the on-screen pad's
    "down" held with the pointer lowers the hand; C closes the gripper."""
    with stepping_env(camera_world):
        time.sleep(0.5)
        start = camera_world.pose()
        hold(page, "w", 1.5)
        time.sleep(0.8)  # the last steps land
        moved = camera_world.pose()
        assert moved[0] - start[0] > 0.01, (start, moved)  # speed 0.5 x 2 cm per step, about 15 steps
        assert abs(moved[1] - start[1]) < 0.005 and abs(moved[2] - start[2]) < 0.005, (start, moved)
        time.sleep(0.5)
        rest = camera_world.pose()
        time.sleep(1.0)
        assert np.linalg.norm(camera_world.pose()[:3] - rest[:3]) < 0.003  # let go of: at rest

        hold(page, "a", 1.0)
        time.sleep(0.8)
        assert camera_world.pose()[1] - rest[1] > 0.008

        from selenium.webdriver.common.action_chains import ActionChains

        before = camera_world.pose()
        down = page.find_element("css selector", "button[data-axis='2'][data-sign='-1']")  # the pad's "down"
        ActionChains(page).click_and_hold(down).pause(1.0).release().perform()
        time.sleep(0.8)
        assert before[2] - camera_world.pose()[2] > 0.008  # held with the pointer: the hand went down

        assert camera_world.state()["gripper_pos"] > 0.85  # open, as the Robotiq starts
        hold(page, "c", 0.05)  # a tap: the page holds the button for 0.3 s, so a 10 Hz env sees it
        assert wait_until(lambda: camera_world.state()["gripper_pos"] < 0.5, 5.0), camera_world.state()
    answer = camera_world.session.get(camera_world.url + "spacemouse", timeout=5).json()
    assert answer["axes"] == [0.0] * 6 and answer["buttons"] == [0, 0]  # nothing left deflected


def test_esc_space_and_f1_on_the_page_reach_the_scripts_keys(page, camera_world):
    from selenium.webdriver.common.keys import Keys

    seq = camera_world.session.get(camera_world.url + "keys", params={"timeout": 0}, timeout=5).json()["seq"]
    for key in (Keys.ESCAPE, Keys.SPACE, Keys.F1):
        hold(page, key, 0.05)
    page.find_element("css selector", "button[data-key='space']").click()  # the on-screen button
    got = []

    def arrived() -> bool:
        answer = camera_world.session.get(
            camera_world.url + "keys", params={"after": seq, "timeout": 0}, timeout=5
        ).json()
        got[:] = [e["key"] for e in answer["events"]]
        return len(got) >= 4

    assert wait_until(arrived, 5.0), got
    assert got == ["esc", "space", "f1", "space"]


def test_the_page_is_served_as_html_and_asks_only_relative_urls(camera_world):
    """Relative URLs: behind an access token's path prefix the page talks to the same prefix."""
    response = camera_world.session.get(camera_world.url + "teleop", timeout=5)
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/html")
    for absolute in ('fetch("/', "fetch('/", 'new URL("/'):
        assert absolute not in response.text


def test_a_robotiq_left_at_the_originals_open_position_opens_fully_from_the_page(page, camera_world):
    """With robotiq_open_position 175 (the published server's), /open_gripper leaves a Robotiq reading 0.31,
    which the stock env never closes again (docs/differences.md); the page's button, shown for such a Robotiq
    only, opens it fully."""
    state = lambda: camera_world.state()["gripper_pos"]  # noqa: E731
    camera_world.ok("close_gripper")
    assert wait_until(lambda: state() < 0.3, 5.0), state()
    camera_world.ok("open_gripper")
    assert wait_until(lambda: 0.25 < state() < 0.4, 5.0), state()  # position 175
    button = page.find_element("id", "reopen-button")
    assert wait_until(button.is_displayed, 5.0)  # /health says Robotiq
    button.click()
    assert wait_until(lambda: state() > 0.95, 5.0), state()
