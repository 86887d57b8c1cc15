"""launch_testing test of server.launch.py alone, with no robot behind it (as test_sim_launch.py tests
sim.launch.py): the franka_server node comes up, its HTTP server answers 503 for the state it has not got,
and on shutdown (SIGINT from launch_testing) it exits with code 0. A free port and a ROS domain of its own.

    scripts/run.sh python -m pytest tests/test_server_launch.py
    scripts/run.sh python -m launch_testing.launch_test tests/test_server_launch.py
"""

import os
import sys
import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import pytest
import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # launch_test loads this file alone
from test_sim_launch import SERVER_NODE, ProbedCase, describe  # noqa: E402

from conftest import STARTUP_TIMEOUT, wait_until  # noqa: E402

LAUNCHED: dict = {}  # what generate_test_description chose: the ROS domain and the server's URL


@pytest.mark.launch_test
def generate_test_description():
    return describe("server.launch.py", LAUNCHED)


class TestServerLaunchComesUp(ProbedCase):
    launched = LAUNCHED

    def test_the_server_node_is_on_the_graph(self):
        assert wait_until(lambda: SERVER_NODE in self.ros.node_names(), STARTUP_TIMEOUT, 0.25), self.ros.node_names()
        assert self.ros.node_names() == [SERVER_NODE], "nodes of another launch on this ROS domain?"

    def test_without_a_robot_the_state_routes_answer_503(self):
        def answer(route: str) -> int | None:
            try:
                return requests.post(LAUNCHED["url"] + route, timeout=2.0).status_code
            except requests.ConnectionError:
                return None

        assert wait_until(lambda: answer("getstate") is not None, STARTUP_TIMEOUT, 0.25), "the server never answered"
        assert {route: answer(route) for route in ("getstate", "getpos")} == {"getstate": 503, "getpos": 503}


@launch_testing.post_shutdown_test()
class TestServerLaunchStopsCleanly(unittest.TestCase):
    def test_the_server_exited_with_code_0(self, proc_info):
        names = proc_info.process_names()
        assert [name.rsplit("-", 1)[0] for name in names] == ["franka_server"], names
        launch_testing.asserts.assertExitCodes(proc_info)  # only EXIT_OK: no SIGINT exit code (130) allowed
