"""The extension validates and builds with Blender's own tool; the `kirin` command line works headless."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def extension_tool() -> Path:
    origin = Path(importlib.util.find_spec("bpy").origin).parent
    found = sorted(origin.glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
    assert found, "Blender's extension tool ships inside the bpy wheel"
    return found[0]


def test_manifest_validates_and_zip_builds(tmp_path):
    tool = extension_tool()
    ok = subprocess.run([sys.executable, str(tool), "validate", str(ROOT)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    built = subprocess.run([sys.executable, str(tool), "build", "--source-dir", str(ROOT),
                            "--output-dir", str(tmp_path)], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    (archive,) = tmp_path.glob("kirin-*.zip")
    names = zipfile.ZipFile(archive).namelist()
    assert "blender_manifest.toml" in names and "kirin_addon/core/rig.py" in names
    assert not any(n.startswith(("tests/", ".venv", "benchmarks/")) for n in names)


def test_registration_adds_panel_operators_and_preferences(blender):
    bpy = blender
    assert hasattr(bpy.types, "KIRIN_PT_main")
    assert bpy.ops.kirin.apply_motion_file.idname() == "KIRIN_OT_apply_motion_file"
    prefs = bpy.context.preferences.addons["bl_ext.kirin_dev.kirin"].preferences
    assert hasattr(prefs, "backend_python")
    assert bpy.context.scene.kirin.frames == 120


def test_cli_default_job_writes_blend_preview_and_report(tmp_path):
    out, report, preview = tmp_path / "walk.blend", tmp_path / "report.json", tmp_path / "preview.mp4"
    kirin = Path(sys.executable).with_name("kirin")
    run = subprocess.run([str(kirin), "retarget", "--out", str(out), "--json", str(report),
                          "--preview", str(preview), "--preview-size", "96x54"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads(report.read_text())
    assert out.stat().st_size > 10_000
    assert preview.stat().st_size > 1_000
    assert summary["frames"] == 72 and summary["bones"] > 20
    assert summary["mapped_bones"] >= 18


def test_cli_reports_bad_files_clearly(tmp_path):
    kirin = Path(sys.executable).with_name("kirin")
    run = subprocess.run([str(kirin), "retarget", "--source", str(tmp_path / "none.bvh"),
                          "--out", str(tmp_path / "x.blend")], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "none.bvh" in run.stderr + run.stdout
    assert not (tmp_path / "x.blend").exists()


@pytest.mark.skipif(not (ROOT.parent / "shared" / "assets" / "bvh_cmu_01_01").is_dir(), reason="needs assets")
def test_cli_cmu_onto_cesium_man(tmp_path):
    assets = ROOT.parent / "shared" / "assets"
    kirin = Path(sys.executable).with_name("kirin")
    report = tmp_path / "r.json"
    run = subprocess.run([str(kirin), "retarget", "--source", str(assets / "bvh_cmu_01_01" / "01_01.bvh"),
                          "--target", str(assets / "khronos_cesiumman" / "CesiumMan.glb"),
                          "--out", str(tmp_path / "cesium.blend"), "--json", str(report)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads(report.read_text())
    assert summary["bones"] == 19 and summary["frames"] > 100
    assert summary["read_as"]["up_axis"] == "+Y" and summary["read_as"]["reference_frame"] is None
