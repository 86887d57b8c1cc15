"""The interface docs cannot drift: they are generated or checked against the running product."""

import sys
from pathlib import Path

from franka_server_ros2.app import create_app
from franka_server_ros2.robot_client import FrankaRosClient

from conftest import wait_until

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from gen_docs import PATH as PARAMETERS_MD  # noqa: E402
from gen_docs import parameters_md  # noqa: E402


def test_parameters_doc_is_generated_from_the_parameter_table():
    assert PARAMETERS_MD.read_text() == parameters_md(), "run: scripts/run.sh python scripts/gen_docs.py"


def test_every_http_route_is_documented(ros):
    client = FrankaRosClient()
    try:
        app = create_app(client, client.cameras, client.settings)
        rules = {rule.rule for rule in app.url_map.iter_rules() if rule.endpoint != "static"}
    finally:
        client.destroy_node()
    doc = (ROOT / "docs" / "routes.md").read_text()
    assert len(rules) >= 24
    assert not [r for r in rules if f"`{r}`" not in doc and f"`GET {r}`" not in doc]


# services every rclpy node has (parameters, type descriptions)
STANDARD_NODE_SERVICES = (
    "/describe_parameters",
    "/get_parameter_types",
    "/get_parameters",
    "/list_parameters",
    "/set_parameters",
    "/set_parameters_atomically",
    "/get_type_description",
)


def test_every_topic_service_and_action_of_the_sim_is_documented(ros):
    ours = ("/franka", "/cartesian", "/joint_states", "/clock", "/diagnostics", "/sim/")
    assert wait_until(
        lambda: any(n == "/franka_state_controller/O_T_EE" for n, _ in ros.get_topic_names_and_types()), 10
    )
    topics = {n for n, _ in ros.get_topic_names_and_types() if n.startswith(ours) and "/_action/" not in n}
    services = {
        n
        for n, _ in ros.get_service_names_and_types()
        if n.startswith(ours) and not n.endswith(STANDARD_NODE_SERVICES) and "/_action/" not in n
    }
    actions = {
        n.split("/_action/")[0] for n, _ in ros.get_service_names_and_types() if "/_action/" in n and n.startswith(ours)
    }
    doc = (ROOT / "docs" / "ros_interfaces.md").read_text()
    missing = sorted(n for n in topics | services | actions if f"`{n}`" not in doc)
    assert not missing, f"undocumented: {missing}"


# contract.md section 2: the topics of the real stack, with their types
CONTRACT_TOPICS = {
    "/cartesian_impedance_controller/equilibrium_pose": "geometry_msgs/msg/PoseStamped",
    "/franka_state_controller/joint_states": "sensor_msgs/msg/JointState",
    "/franka_state_controller/O_T_EE": "geometry_msgs/msg/PoseStamped",
    "/franka_state_controller/O_dP_EE": "geometry_msgs/msg/TwistStamped",
    "/franka_state_controller/K_F_ext_hat_K": "geometry_msgs/msg/WrenchStamped",
    "/cartesian_impedance_controller/franka_jacobian": "std_msgs/msg/Float64MultiArray",
    "/franka_gripper/joint_states": "sensor_msgs/msg/JointState",
    "/joint_states": "sensor_msgs/msg/JointState",
    "/tf": "tf2_msgs/msg/TFMessage",
    "/tf_static": "tf2_msgs/msg/TFMessage",
    "/clock": "rosgraph_msgs/msg/Clock",
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
    "/task/success": "std_msgs/msg/Bool",
    "/task/objects": "tf2_msgs/msg/TFMessage",
    "/task/status": "diagnostic_msgs/msg/DiagnosticStatus",
}
CONTRACT_SERVICES = {
    "/franka_control/error_recovery": "std_srvs/srv/Trigger",
    "/franka_control/joint_reset": "std_srvs/srv/Trigger",
    "/task/reset": "std_srvs/srv/Trigger",
}


def test_sim_launch_comes_up_with_the_contract_topics_and_their_types(sim, ros):
    """sim.launch.py as `make sim` runs it: every topic and service of the contract, with its type, and the
    original routes answer (stopping it is test_lifecycle.py's)."""
    robot, _ = sim

    def graph() -> dict[str, list[str]]:
        return dict(ros.get_topic_names_and_types()) | dict(ros.get_service_names_and_types())

    expected = CONTRACT_TOPICS | CONTRACT_SERVICES
    assert wait_until(lambda: set(expected) <= set(graph()), 10.0), sorted(set(expected) - set(graph()))
    found = graph()
    assert {name: found[name] for name in expected} == {name: [kind] for name, kind in expected.items()}
    assert robot.ok("getstate") and robot.ok("clearerr") == "Clear"
