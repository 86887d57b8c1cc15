"""`make sim`'s banner names the servers of the world it launches (scripts/sim_banner.sh, before the launch)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from isaac_franka_bridge.world import load_world

ROOT = Path(__file__).resolve().parent.parent


def banner(*launch_args: str) -> str:
    """What `make sim ARGS="..."` prints before its launch (the launch replaced by echo)."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "sim_banner.sh"), "echo", "launched", *launch_args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.rstrip().splitlines()
    assert lines[-1] == " ".join(["launched", *launch_args])  # then the launch, with the same arguments
    return "\n".join(lines[:-1])


def addresses(text: str) -> set[str]:
    return set(re.findall(r"http://[0-9.]+:[0-9]+/", text))


@pytest.mark.parametrize("task", ["pick_cube", "ram_insertion", "usb_pickup_insertion", "object_handover", "egg_flip"])
def test_the_banner_names_the_servers_of_the_world_it_launches(task: str):
    world = load_world(str(ROOT / "config" / "tasks" / f"{task}.yaml"))
    text = banner(f"task:={task}")
    assert addresses(text) == {robot.url for robot in world.robots}
    assert f"{world.robots[0].url}teleop" in text


def test_ram_insertion_is_served_on_127_0_0_2_and_the_banner_says_so():
    text = banner("task:=ram_insertion", "cameras_config:=none")
    assert "http://127.0.0.2:5000/teleop" in text
    assert "127.0.0.1" not in text


def test_the_default_world_is_on_127_0_0_1():
    assert addresses(banner()) == {"http://127.0.0.1:5000/"}


def test_launch_arguments_that_move_the_server_move_the_banner():
    assert addresses(banner("task:=ram_insertion", "host:=127.0.0.5", "port:=5005")) == {"http://127.0.0.5:5005/"}
    assert addresses(banner("world:=egg_flip")) == {"http://127.0.0.2:5000/"}


def test_a_world_that_cannot_start_leaves_the_word_to_the_launch():
    text = banner("task:=no_such_world")
    assert "cannot tell its addresses" in text and not addresses(text)
