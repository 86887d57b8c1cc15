"""The Cartesian impedance controller of the real robot (controller.md), as pure math."""

from .impedance import CartesianImpedanceController
from .parameters import COMPLIANCE_PARAMETERS, DEFAULT_COMPLIANCE, ParameterSpec

__all__ = ["CartesianImpedanceController", "COMPLIANCE_PARAMETERS", "DEFAULT_COMPLIANCE", "ParameterSpec"]
