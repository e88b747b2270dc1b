"""`kirin retarget`: a motion file onto a character headless through the same operator a user clicks
(Apply Motion From File); save a .blend (+ a preview, + a JSON report)."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import bpy

from ...kirin_addon.io.clip import save_clip
from ...kirin_addon.library.procedural import default_retarget_pair
from ..scene_io.mesh import create_skinned_mesh
from ..scene_io.rig import create_armature, read_rig
from .common import (
    PreviewOptions,
    Stopwatch,
    activate,
    disable_extension,
    enable_extension,
    import_rig_file,
    render_animation,
    run_operator,
    save_blend,
    setup_preview,
)


@dataclass
class RetargetJob:
    """Retarget `source` (None: a built-in walk) onto `target` (None: the built-in character); `clip`
    names the animation inside a glTF source; the scene runs at `fps`."""

    out: str
    source: str | None = None
    target: str | None = None
    clip: str | None = None
    fps: int = 30
    report: str | None = None
    preview: PreviewOptions = field(default_factory=PreviewOptions)


def _load_target(target: str | None) -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    if target:
        return import_rig_file(os.path.abspath(target))
    _, _, target_rig, mesh = default_retarget_pair()
    arm = create_armature(target_rig, "Kirin Character")
    return arm, [create_skinned_mesh(mesh, arm, target_rig, "Kirin Character Body")]


def _source_file(source: str | None) -> str:
    """The motion file to apply: `source`, or the built-in walk written as a Kirin clip."""
    if source:
        return os.path.abspath(source)
    source_rig, motion, _, _ = default_retarget_pair()
    source_path = os.path.join(tempfile.mkdtemp(prefix="kirin-"), "kirin_walk.npz")
    save_clip(source_path, source_rig, motion, captions=["a person walking forward"],
              metadata={"name": "Kirin walk"})
    return source_path


def run_retarget(job: RetargetJob) -> dict:
    """Retarget the job's source onto its target (or the built-in default pair); save a .blend (+ preview)."""
    clock = Stopwatch()
    with clock.lap("start_blender"):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        module = enable_extension()
    try:
        with clock.lap("load_target"):
            arm, meshes = _load_target(job.target)
            source_path = _source_file(job.source)
        activate(arm)
        bpy.context.scene.render.fps = job.fps
        with clock.lap("retarget_and_write_action"):
            applied = run_operator(bpy.ops.kirin.apply_motion_file,
                                   "Applying the motion failed; Blender printed the reason above.",
                                   filepath=source_path, clip=job.clip or "")
        rig = read_rig(arm)
        action = arm.animation_data.action
        scene = bpy.context.scene
        preview = job.preview.path
        if preview:
            setup_preview(arm, rig, os.path.abspath(preview), job.preview.resolution)
        with clock.lap("save_blend"):
            save_blend(job.out)
        if preview:
            with clock.lap("render_preview"):
                render_animation(scene, preview, job.preview.step)
        summary = {
            "source": source_path,
            "target": os.path.abspath(job.target) if job.target else "built-in character",
            "armature": arm.name,
            "action": action.name,
            "frames": int(scene.frame_end - scene.frame_start + 1),
            "fps": scene.render.fps / scene.render.fps_base,
            "bones": rig.joint_count,
            "mapped_bones": sum(bool(i.source) for i in arm.kirin.joint_map) or None,
            "read_as": {key: applied[key] for key in ("up_axis", "forward_axis", "unit", "height",
                                                      "reference_frame", "floor_shift", "read_as")},
            "meshes": [m.name for m in meshes],
            "blend": os.path.abspath(job.out),
            "preview": os.path.abspath(preview) if preview else None,
            "timings_s": clock.rounded(),
        }
    finally:
        disable_extension(module)
    if job.report:
        Path(job.report).write_text(json.dumps(summary, indent=2))
    return summary
