# Two commands do everything on a fresh machine (set-up is cached in .venv/ and install/; make test
# also installs Debian's chromium for the teleop page's browser test, and builds .venv-hil-serl/, HIL-SERL's
# own environment, from ../shared/hil-serl, for the tests that run HIL-SERL's code: scripts/hil_serl_env.sh):
#   make sim    the simulated Franka (MuJoCo) + franka_server_ros2 on http://127.0.0.1:5000/
#   make test   the test suite over real ROS 2, real HTTP and real physics
# More: make shell (a shell in the environment), make bench, make lint, make clean.
SHELL := /bin/bash
RUN := scripts/run.sh
ARGS ?=

.PHONY: sim test shell bench lint env clean

sim:
	@$(RUN) scripts/sim_banner.sh ros2 launch isaac_franka_bridge sim.launch.py $(ARGS)

test:
	@scripts/install_browser.sh
	@scripts/hil_serl_env.sh
	@$(RUN) python -m pytest tests $(ARGS)

bench:
	@$(RUN) python benchmarks/run.py $(ARGS)

shell:
	@$(RUN) bash --rcfile <(echo 'PS1="(franka-sim) $$PS1"')

lint:
	@$(RUN) python -m ruff check .

env:
	@scripts/bootstrap.sh

clean:
	rm -rf .venv .venv-hil-serl build install log
