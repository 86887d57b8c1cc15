"""Physics backends: each only steps physics, applies torques and reads joint/body/contact data."""

from ..world import WorldSpec
from .base import Capabilities, PhysicsRobot, PhysicsWorld

# what each backend can simulate, known without importing it (Isaac Sim takes a minute to boot)
CAPABILITIES = {
    "mujoco": Capabilities(grippers=("Robotiq", "Franka", "None"), cameras=True, max_robots=8),
    "isaac": Capabilities(grippers=("Franka",), cameras=False, max_robots=1, contacts=False),
}
BACKENDS = tuple(CAPABILITIES)
DEFAULT_BACKEND = "mujoco"  # runs on any CPU


def check_backend(name: str, world: WorldSpec) -> None:
    """ValueError saying why `world` cannot run on backend `name`; nothing is loaded."""
    if name not in CAPABILITIES:
        raise ValueError(f"backend '{name}' must be one of {', '.join(BACKENDS)}")
    refusal = CAPABILITIES[name].refusal(name, world)
    if refusal is not None:
        raise ValueError(refusal)


def create_world(name: str, world: WorldSpec, timestep: float = 0.001) -> PhysicsWorld:
    """The world simulated by backend `name`, after checking that it can; imported only when asked for."""
    check_backend(name, world)
    if name == "mujoco":
        from .mujoco_backend import MujocoWorld

        return MujocoWorld(world, timestep)
    from .isaac_backend import IsaacWorld

    return IsaacWorld(world, timestep)


__all__ = [
    "BACKENDS",
    "CAPABILITIES",
    "DEFAULT_BACKEND",
    "PhysicsRobot",
    "PhysicsWorld",
    "check_backend",
    "create_world",
]
