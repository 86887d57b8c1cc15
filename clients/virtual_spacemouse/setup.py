"""Only here to ship ``virtual_spacemouse.pth`` into site-packages; the metadata is in pyproject.toml.

The .pth file is copied into the build directory beside the top-level modules, so that it lands at the
root of the wheel, which pip installs into site-packages (where ``site`` reads .pth files at start-up).
"""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "virtual_spacemouse.pth"


class BuildPyWithPth(build_py):
    """build_py that also copies the .pth file to the root of the build directory."""

    def run(self) -> None:
        super().run()
        here = os.path.dirname(os.path.abspath(__file__))
        self.copy_file(os.path.join(here, PTH), os.path.join(self.build_lib, PTH), preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]


setup(cmdclass={"build_py": BuildPyWithPth})
