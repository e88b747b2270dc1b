"""Scratch folders (kirin_addon/io/scratch.py) leave nothing in the temp dir."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kirin.kirin_addon.io.scratch import remove_scratch_folders, scratch_folder

SCRIPT = """
import sys
from kirin.kirin_addon.io.scratch import scratch_folder
folder = scratch_folder("kirin-test-scratch-")
(folder / "link").symlink_to(sys.argv[1], target_is_directory=True)
print(folder)
"""


def test_a_scratch_folder_is_one_per_prefix_and_gone_when_the_process_ends(tmp_path) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "file").write_text("mine")
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(kept)], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[3])
    folder = Path(out.stdout.strip())
    assert folder.name.startswith("kirin-test-scratch-") and not folder.exists()
    assert (kept / "file").read_text() == "mine"  # the link was removed, not followed


def test_removing_now() -> None:
    folder = scratch_folder("kirin-test-scratch-")
    assert scratch_folder("kirin-test-scratch-") == folder and folder.is_dir()
    remove_scratch_folders()
    assert not folder.exists()
