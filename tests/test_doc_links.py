"""The README and docs/ stand on their own: every relative link resolves inside this repository (anchors included),
no document names a file that is not in it or points outside it, and the versions the README names are the ones
the scripts install."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[(?:[^\]`]|`[^`]*`)*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
# files of other repositories that the docs talk about by name (HIL-SERL's and its copies'), not links
OTHER_REPOSITORIES = {"SOURCE.md"}


def text_of(doc: Path) -> str:
    return doc.read_text()


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces as '-'."""
    heading = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    prose = FENCE.sub("", doc.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", prose, re.M)}


def relative_links(doc: Path) -> list[str]:
    prose = FENCE.sub("", text_of(doc))
    return [t for t in LINK.findall(prose) if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]  # not http:, mailto:, ...


def test_the_documents_are_there():
    names = {d.name for d in DOCUMENTS}
    assert {"README.md", "contract.md", "controller.md", "install.md", "troubleshooting.md"} <= names
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert "Apache-2.0" in (ROOT / "package.xml").read_text() and "Apache-2.0" in (ROOT / "CITATION.cff").read_text()


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda d: d.name)
def test_every_relative_link_resolves_inside_the_repository(doc: Path):
    broken = []
    for target in relative_links(doc):
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        if not resolved.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading '{anchor}' in {resolved.relative_to(ROOT)}")
    assert not broken, broken


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda d: d.name)
def test_no_document_points_outside_the_repository(doc: Path):
    """Nothing cited that a clone lacks: no design notes beside the repository, no .md file that is not in it.
    ../shared/ is named only as the default place of the user's HIL-SERL and agentlace checkouts."""
    text = text_of(doc)
    outside = [m.group(0) for m in re.finditer(r"\.\./shared/[\w./-]*", text)]
    assert all(re.fullmatch(r"\.\./shared/(hil-serl|agentlace)/?", o) for o in outside), outside
    prose = re.sub(r"https?://\S+", "", text)
    named = {m.group(0) for m in re.finditer(r"[\w./-]*\w\.md\b", prose)}
    missing = sorted(
        name
        for name in named - OTHER_REPOSITORIES
        if not any((base / name).exists() for base in (doc.parent, ROOT, ROOT / "docs"))
    )
    assert not missing, f"{doc.name} names files that are not in this repository: {missing}"


def test_the_readme_names_the_versions_the_scripts_install():
    readme = text_of(ROOT / "README.md")
    env_script = (ROOT / "scripts" / "hil_serl_env.sh").read_text()
    hil_serl = re.search(r"^HIL_SERL_TESTED_COMMIT=([0-9a-f]{40})$", env_script, re.M).group(1)
    agentlace = re.search(r"^AGENTLACE_TESTED_URL=\"git\+\S+@([0-9a-f]{40})\"$", env_script, re.M).group(1)
    versions = readme[readme.index("## Versions") :].split("\n## ")[0]
    assert hil_serl in versions and f"checkout {hil_serl[:7]}" in readme  # the quick start's clone
    assert agentlace in versions
    pins = (ROOT / "scripts" / "hil_serl_requirements.txt").read_text()
    pinned = dict(re.findall(r"^([\w-]+)==(\S+)", pins, re.M))
    assert f"JAX | {pinned['jax']} " in versions and f"flax {pinned['flax']}" in versions
    bootstrap = (ROOT / "scripts" / "bootstrap.sh").read_text()
    for pin in re.findall(r"\"((?:isaacsim-ros2|gym-hil|dm-robotics-panda)==[\w.]+)\"", bootstrap):
        assert pin in versions, pin
