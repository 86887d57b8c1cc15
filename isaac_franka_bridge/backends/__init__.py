"""Physics backends: each only steps physics, applies torques and reads joint/body/contact data."""

from .base import PhysicsBackend

BACKENDS = ("mujoco", "isaac")


def create_backend(name: str, **options) -> PhysicsBackend:
    """The backend called `name` ('mujoco' or 'isaac'), imported only when asked for."""
    if name == "mujoco":
        from .mujoco_backend import MujocoBackend

        return MujocoBackend(**options)
    if name == "isaac":
        from .isaac_backend import IsaacBackend

        return IsaacBackend(**options)
    raise ValueError(f"unknown backend '{name}', expected one of {BACKENDS}")


__all__ = ["BACKENDS", "PhysicsBackend", "create_backend"]
