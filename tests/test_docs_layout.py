"""The README's layout table and docs/ARCHITECTURE.md name exactly the packages of the tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("kirin_addon", "models", "operators", "panels", "cli")


def tree_packages(root: Path = ROOT) -> set[str]:
    """Every package folder below the top-level folders, as `kirin_addon/core/`."""
    return {
        str(init.parent.relative_to(root)) + "/"
        for top in TOP_LEVEL
        for init in (root / top).rglob("__init__.py")
    }


def table_packages(markdown: str) -> set[str]:
    """The package folders a Markdown table names in its first column (`` `kirin_addon/core/` ``)."""
    names = set()
    for line in markdown.splitlines():
        if not line.startswith("| `"):
            continue
        first = line.split("|")[1]
        names.update(n for n in re.findall(r"`([\w/]+/)`", first) if n.split("/")[0] in TOP_LEVEL)
    return names


@pytest.mark.parametrize("document", ["README.md", "docs/ARCHITECTURE.md"])
def test_the_layout_table_names_every_package(document):
    named = table_packages((ROOT / document).read_text())
    packages = tree_packages()
    assert not packages - named, f"{document} does not name {sorted(packages - named)}"
    folders = {n for n in named - packages if (ROOT / n).is_dir()}  # shipped weights: a folder, no package
    stale = named - packages - folders
    assert not stale, f"{document} names what is not in the tree: {sorted(stale)}"


def test_the_check_sees_a_missing_and_a_stale_package(tmp_path):
    (tmp_path / "kirin_addon" / "core").mkdir(parents=True)
    (tmp_path / "kirin_addon" / "core" / "__init__.py").touch()
    (tmp_path / "kirin_addon" / "__init__.py").touch()
    table = "| path | what |\n|---|---|\n| `kirin_addon/` | engine |\n| `kirin_addon/gone/` | old |\n"
    assert tree_packages(tmp_path) - table_packages(table) == {"kirin_addon/core/"}
    assert table_packages(table) - tree_packages(tmp_path) == {"kirin_addon/gone/"}
