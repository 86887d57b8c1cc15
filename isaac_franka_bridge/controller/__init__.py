"""The real robot's controllers as pure math: the Cartesian impedance controller (controller.md) and
HIL-SERL's egg-flip Cartesian wrench controller."""

from .impedance import CartesianImpedanceController
from .parameters import COMPLIANCE_PARAMETERS, DEFAULT_COMPLIANCE, ParameterSpec
from .wrench import CartesianWrenchController, WrenchControllerParams

__all__ = [
    "CartesianImpedanceController",
    "CartesianWrenchController",  # HIL-SERL's egg-flip wrench law
    "COMPLIANCE_PARAMETERS",
    "DEFAULT_COMPLIANCE",
    "ParameterSpec",
    "WrenchControllerParams",
]
