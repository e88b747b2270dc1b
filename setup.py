"""The package list, found automatically: every package under the top-level folders, as `kirin.*`.

Everything else is in pyproject.toml; setuptools' `packages.find` cannot add the `kirin.` prefix that
`package-dir = {"kirin" = "."}` needs.
"""

from setuptools import find_packages, setup

TOP_LEVEL = ("kirin_addon", "models", "operators", "panels", "cli")

FOUND = find_packages(".", include=[f"{top}*" for top in TOP_LEVEL])
setup(packages=["kirin", *(f"kirin.{name}" for name in FOUND)])
