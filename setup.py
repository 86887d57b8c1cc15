from glob import glob

from setuptools import find_packages, setup

PACKAGE = "isaac_franka_bridge"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*", "franka_server_ros2", "franka_server_ros2.*"]),
    package_data={"franka_server_ros2": ["teleop_page.html"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.xml")),
        (f"share/{PACKAGE}/config/tasks", glob("config/tasks/*.yaml")),
        (f"share/{PACKAGE}/config/rviz", glob("config/rviz/*.rviz")),
        (f"share/{PACKAGE}/config/rqt", glob("config/rqt/*.perspective")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="isaac_franka_bridge maintainers",
    maintainer_email="maintainers@isaac-franka-bridge.dev",
    description="Simulated Franka for HIL-SERL over ROS 2, and franka_server_ros2.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            f"sim_bridge = {PACKAGE}.ros.sim_bridge_node:main",
            "franka_server = franka_server_ros2.main:main",
            f"real_state_adapter = {PACKAGE}.real.adapter_node:main",
        ],
    },
)
