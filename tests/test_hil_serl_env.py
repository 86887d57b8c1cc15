"""HIL-SERL's environment from where the user has HIL-SERL and agentlace (scripts/hil_serl_env.sh), and `make test`'s
installers of Xvfb and Chromium without root.

The environment test builds one from a HIL-SERL clone and an agentlace clone in a temporary directory, at a commit
that is not the tested one. It stays cheap: its venv takes the pinned packages (2 GB) from the suite's own
.venv-hil-serl/ through a .pth, which the script accepts as a venv holding the pinned packages; what depends on the
checkouts is built for real: hil_serl.pth, the clients, and the check that HIL-SERL's train_rlpd.py imports.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hil_serl  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "hil_serl_env.sh"
MAIN_VENV = ROOT / ".venv-hil-serl"
AGENTLACE = Path(os.environ.get("AGENTLACE_DIR") or ROOT.parent / "shared" / "agentlace")
TESTED = re.search(r"^HIL_SERL_TESTED_COMMIT=([0-9a-f]{40})$", SCRIPT.read_text(), re.M).group(1)


def run(env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    """scripts/hil_serl_env.sh with these variables, outside scripts/run.sh's environment."""
    clean = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "AGENTLACE_DIR", "HIL_SERL_DIR")
    }
    return subprocess.run(
        [str(SCRIPT)],
        env={**clean, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


def venv_python(venv: Path) -> str:
    return str(venv / "bin" / "python")


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory) -> dict[str, Path]:
    """A git clone of HIL-SERL with a commit of its own, agentlace in another directory, and a venv for them."""
    if not (MAIN_VENV / "bin" / "python").exists():
        hil_serl.python()  # the suite's environment, whose packages this one borrows
    if not (AGENTLACE / "agentlace").is_dir():
        pytest.fail(f"no agentlace checkout at {AGENTLACE} (../shared/agentlace, or AGENTLACE_DIR)", pytrace=False)
    tmp = tmp_path_factory.mktemp("hil_serl_env")
    clone, agentlace, venv = tmp / "my clones" / "hil-serl", tmp / "elsewhere" / "agentlace", tmp / "venv"
    for part in ("examples", "serl_launcher", "serl_robot_infra"):
        shutil.copytree(hil_serl.CHECKOUT / part, clone / part, ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-C", str(clone), "-c", "user.name=test", "-c", "user.email=test@localhost"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "a commit that is not the tested one"]):
        subprocess.run(git + argv, check=True)
    shutil.copytree(AGENTLACE / "agentlace", agentlace / "agentlace", ignore=shutil.ignore_patterns("__pycache__"))
    base = subprocess.run(
        [
            venv_python(MAIN_VENV),
            "-c",
            "import sys, sysconfig; print(sys._base_executable, sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout.split()
    subprocess.run([base[0], "-m", "venv", str(venv)], check=True)
    purelib = next((venv / "lib").glob("python3.*/site-packages"))
    (purelib / "borrowed.pth").write_text(base[1] + "\n")  # the pinned packages, read from the suite's venv
    return {"clone": clone.resolve(), "agentlace": agentlace.resolve(), "venv": venv, "purelib": purelib}


@pytest.fixture(scope="module")
def built(elsewhere) -> subprocess.CompletedProcess:
    env = {"HIL_SERL_DIR": str(elsewhere["clone"]), "AGENTLACE_DIR": str(elsewhere["agentlace"])}
    done = run({**env, "HIL_SERL_VENV": str(elsewhere["venv"])})
    assert done.returncode == 0, done.stdout[-4000:]
    return done


def test_the_environment_builds_from_the_users_hil_serl_and_agentlace(elsewhere, built):
    """HIL_SERL_DIR and AGENTLACE_DIR anywhere: their code is what the environment imports, and it says so."""
    clone, agentlace = elsewhere["clone"], elsewhere["agentlace"]
    commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert f"HIL-SERL from {clone} (commit {commit[:7]})" in built.stdout
    assert f"agentlace from {agentlace} (AGENTLACE_DIR)" in built.stdout
    assert "keeping" in built.stdout and "collecting" not in built.stdout  # the pinned packages were not reinstalled
    assert "checking that HIL-SERL's train_rlpd.py" in built.stdout  # and HIL-SERL's code imported from there
    pth = (elsewhere["purelib"] / "hil_serl.pth").read_text().splitlines()
    assert pth[1:4] == [f"{clone}/serl_launcher", f"{clone}/serl_robot_infra", str(agentlace)]
    where = subprocess.run(
        [venv_python(elsewhere["venv"]), "-c", "import agentlace, serl_launcher, franka_env, virtual_spacemouse\n"
         "print(agentlace.__file__, serl_launcher.__file__, *franka_env.__path__, virtual_spacemouse.__file__, "
         "sep='\\n')"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert where.returncode == 0, where.stderr
    found = where.stdout.splitlines()
    assert (
        found[0].startswith(f"{agentlace}/") and found[1].startswith(f"{clone}/") and found[2].startswith(f"{clone}/")
    )
    assert found[3].startswith(f"{elsewhere['venv']}/")  # the clients are installed into this venv


def test_a_hil_serl_at_another_commit_gets_a_warning_naming_the_tested_one(built):
    warning = next(line for line in built.stdout.splitlines() if "warning" in line)
    assert "not " + TESTED in warning and f"checkout {TESTED[:7]}" in warning


def test_run_again_it_rebuilds_nothing_and_still_says_where_from(elsewhere, built):
    env = {"HIL_SERL_DIR": str(elsewhere["clone"]), "AGENTLACE_DIR": str(elsewhere["agentlace"])}
    again = run({**env, "HIL_SERL_VENV": str(elsewhere["venv"])}, timeout=60)
    assert again.returncode == 0, again.stdout
    assert "installing" not in again.stdout and "checking" not in again.stdout
    assert f"agentlace from {elsewhere['agentlace']} (AGENTLACE_DIR)" in again.stdout


def test_a_copy_that_names_the_tested_commit_gets_no_warning(elsewhere, built):
    """A copy of the sources without git (as ../shared/hil-serl is) whose SOURCE.md names its commit."""
    clone = elsewhere["clone"]
    (clone / ".git").rename(clone.parent / "git-aside")
    try:
        (clone / "SOURCE.md").write_text(f"HIL-SERL's sources at commit {TESTED}, unaltered\n")
        env = {"HIL_SERL_DIR": str(clone), "AGENTLACE_DIR": str(elsewhere["agentlace"])}
        done = run({**env, "HIL_SERL_VENV": str(elsewhere["venv"])}, timeout=60)
        (clone / "SOURCE.md").unlink()
        unknown = run({**env, "HIL_SERL_VENV": str(elsewhere["venv"])}, timeout=60)
    finally:
        (clone.parent / "git-aside").rename(clone / ".git")
    assert done.returncode == 0, done.stdout
    assert f"(commit {TESTED[:7]})" in done.stdout and "warning" not in done.stdout
    assert unknown.returncode == 0, unknown.stdout
    assert "cannot tell which commit of HIL-SERL" in unknown.stdout and TESTED in unknown.stdout


def test_agentlace_dir_without_agentlace_is_refused_by_name(elsewhere, tmp_path):
    done = run(
        {"HIL_SERL_DIR": str(elsewhere["clone"]), "AGENTLACE_DIR": str(tmp_path), "HIL_SERL_VENV": str(tmp_path / "v")}
    )
    assert done.returncode == 1
    assert f"AGENTLACE_DIR={tmp_path} has no agentlace/ package" in done.stdout
    assert not (tmp_path / "v").exists()  # refused before anything was built


# ------------------------------------------------------------------ make test without root: Xvfb and Chromium
@pytest.fixture()
def no_root(tmp_path) -> dict[str, str]:
    """A PATH where `id -u` says 1000 and apt-get exists, and neither Xvfb nor Chromium does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("id", "echo 1000"), ("apt-get", "echo apt-get must not run >&2; exit 99")):
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return {
        "PATH": str(bin_dir),
        "FRANKA_SIM_CHROMIUM": str(tmp_path / "chromium"),
        "FRANKA_SIM_CHROMEDRIVER": str(tmp_path / "chromedriver"),
    }


INSTALLERS = [("install_xvfb.sh", "xvfb"), ("install_browser.sh", "chromium chromium-driver")]


@pytest.mark.parametrize(("script", "what"), INSTALLERS)
def test_make_test_without_root_says_what_to_install_in_one_line_and_goes_on(no_root, script: str, what: str):
    optional = subprocess.run(
        ["/bin/bash", str(ROOT / "scripts" / script), "--optional"], env=no_root, capture_output=True, text=True
    )
    assert optional.returncode == 0, optional.stderr
    assert len(optional.stdout.strip().splitlines()) == 1 and not optional.stderr
    assert "needs root" in optional.stdout and f"apt-get install {what}" in optional.stdout
    assert "will fail" in optional.stdout  # the tests that need it fail, they do not skip
    strict = subprocess.run(["/bin/bash", str(ROOT / "scripts" / script)], env=no_root, capture_output=True, text=True)
    assert strict.returncode == 1  # scripts/hil_serl.py asks without --optional: no Xvfb, no step


def test_make_test_runs_the_installers_as_optional():
    recipe = (ROOT / "Makefile").read_text().split("\ntest:")[1].split("\n\n")[0]
    assert "scripts/install_browser.sh --optional" in recipe and "scripts/install_xvfb.sh --optional" in recipe
