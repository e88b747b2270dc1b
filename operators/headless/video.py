"""`kirin extract`: Extract Motion From Video headless through the same operator a user clicks, on a
character file (or a built-in procedural creature), and save a .blend (+ a JSON report)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import bpy

from .. import scene_io
from . import common as headless


def builtin_creature(family: str, seed: int) -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """A procedural creature of `family` (rig and skinned mesh made in code) in the scene."""
    from ...kirin_addon.library.families import build_creature

    if family == "quadruped":
        return headless.builtin_creature(seed)
    creature = build_creature(family, seed)
    name = f"Kirin {creature.species.title()}"
    arm = scene_io.create_armature(creature.rig, name)
    body = scene_io.create_skinned_mesh(creature.mesh, arm, creature.rig, f"{name} Body")
    return arm, [body]


def run_extract(rig_file: str | None, video: str, out: str, *, keypoints: str | None = None,
                silhouettes: str = "background", start: int = 0, stop: int | None = None, stride: int = 1,
                epochs: int | None = None, fps: int = 30, report: str | None = None,
                backend_python: str | None = None, device: str = "auto", threads: int = 0,
                creature: str = "quadruped", creature_seed: int = 0, idm: bool = False,
                mediapipe: bool = False) -> dict:
    """Extract the motion of `video` onto `rig_file` (or a built-in `creature`) through the operator:
    video frames start, start+stride, ... < stop (0-based; stop None: to the end); `silhouettes`
    "background", "none" or a folder of masks. Saves the .blend; returns (and writes) a report."""
    if stride < 1 or start < 0 or (stop is not None and stop <= start):
        raise ValueError(f"Bad frame range: --start {start} --stop {stop} --stride {stride} "
                         "(start ≥ 0, stop after start, stride ≥ 1).")
    for path, what in ((video, "video"), (keypoints, "keypoints file")):
        if path is not None and not os.path.isfile(path):
            raise FileNotFoundError(f"No such {what}: {path}")
    if silhouettes not in ("background", "none") and not os.path.isdir(silhouettes):
        raise FileNotFoundError(f"--silhouettes: expected background, none or a folder of masks; no folder "
                                f"{silhouettes}")
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    module = headless.start_with_backend(backend_python, device, threads)
    video_ops = sys.modules[f"{module}.operators.video"]
    try:
        t = time.perf_counter()
        if rig_file:
            arm, meshes = headless.import_rig_file(os.path.abspath(rig_file))
        else:
            arm, meshes = builtin_creature(creature, creature_seed)
        timings["load_rig"] = time.perf_counter() - t
        headless.activate(arm)
        scene = bpy.context.scene
        scene.render.fps, scene.render.fps_base = fps, 1.0
        scene.frame_start = 1
        options = {"video": os.path.abspath(video), "first": start + 1, "last": stop or 0, "stride": stride,
                   "keypoints": os.path.abspath(keypoints) if keypoints else "", "idm": idm,
                   "mediapipe": mediapipe}
        if silhouettes in ("background", "none"):
            options["silhouettes"] = silhouettes.upper()
        else:
            options["silhouettes"], options["masks"] = "MASKS", os.path.abspath(silhouettes)
        if epochs is not None:
            options["epochs"] = epochs
        t = time.perf_counter()
        if bpy.ops.kirin.motion_from_video(**options) != {"FINISHED"}:
            raise RuntimeError("Extract Motion From Video failed; Blender printed the reason above.")
        timings["extract"] = time.perf_counter() - t
        summary = dict(video_ops.last_extract)
        os.makedirs(os.path.dirname(os.path.abspath(out)) or ".", exist_ok=True)
        t = time.perf_counter()
        bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(out))
        timings["save_blend"] = time.perf_counter() - t
        summary.update({
            "rig": os.path.abspath(rig_file) if rig_file else f"built-in {creature}",
            "meshes": [m.name for m in meshes],
            "blend": os.path.abspath(out),
            "seconds_total": round(time.perf_counter() - t0, 3),
            "timings_s": {k: round(v, 3) for k, v in timings.items()},
        })
    finally:
        headless.disable_extension(module)
    if report:
        os.makedirs(os.path.dirname(os.path.abspath(report)) or ".", exist_ok=True)
        Path(report).write_text(json.dumps(summary, indent=2))
    return summary
