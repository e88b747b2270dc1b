"""`kirin generate`: Generate Motion on a character headless through the same operator a user clicks;
save a .blend (+ a preview of the variants side by side and/or a still, + a JSON report)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import bpy

from ..generate import REPORTED
from ..scene_io.rig import read_rig
from .common import (
    BackendOptions,
    PreviewOptions,
    Stopwatch,
    activate,
    builtin_creature,
    disable_extension,
    import_rig_file,
    render_animation,
    render_still,
    run_operator,
    save_blend,
    setup_preview,
    start_with_backend,
    variants_side_by_side,
    video_output,
    write_report,
)

# The per-variant measures a report carries, of those the operator records.
VARIANT_KEYS = ("action", "frames", "seed", "foot_skating", "jitter", "penetration", "bone_length_error",
                "within_bounds", "retrieved", *REPORTED)


@dataclass
class GenerateJob:
    """Generate Motion with `prompt` (and an optional reference `image`) on `rig_file` (None: the
    built-in creature of `creature_seed`): `variants` takes of `frames` frames at `fps`."""

    out: str
    prompt: str
    rig_file: str | None = None
    image: str | None = None
    frames: int = 96
    variants: int = 3
    seed: int = 0
    guidance: float = 0.0
    loop: bool = False
    fps: int = 30
    creature_seed: int = 0
    report: str | None = None
    preview: PreviewOptions = field(default_factory=PreviewOptions)
    backend: BackendOptions = field(default_factory=BackendOptions)


def _render_variants(arm: bpy.types.Object, meshes, rig, run: dict, preview: PreviewOptions) -> None:
    """The variants side by side: a still PNG of the middle frame and/or an animation."""
    scene = bpy.context.scene
    actions = [bpy.data.actions[v["action"]] for v in run["variants"]]
    copies = variants_side_by_side(arm, meshes, rig, actions)
    # Several variants stand in a row across the direction of travel: look from higher up.
    view = (1.0, -0.8, 0.7) if copies else (1.0, -0.35, 0.25)
    setup_preview(arm, rig, os.path.abspath(preview.path or preview.still), preview.resolution, others=copies,
                  direction=view, follow=True)
    if preview.still:
        render_still(scene, preview.still)
    if preview.path:
        video_output(scene, os.path.abspath(preview.path))
        render_animation(scene, preview.path, preview.step)


def _summary(job: GenerateJob, run: dict, arm: bpy.types.Object, meshes, rig, clock: Stopwatch,
             seconds_to_first_action: float) -> dict:
    preview, still = job.preview.path, job.preview.still
    return {
        "device": run["device"],
        "seconds_total": round(clock.elapsed(), 3),
        "seconds_to_first_action": round(seconds_to_first_action, 3),
        "seconds_model": round(run["seconds_model"], 3),
        "prompt": job.prompt,
        "image": os.path.abspath(job.image) if job.image else None,
        "rig": os.path.abspath(job.rig_file) if job.rig_file else "built-in creature",
        "armature": arm.name,
        "bones": rig.joint_count,
        "meshes": [m.name for m in meshes],
        "fps": job.fps,
        "variants": [{k: v.get(k) for k in VARIANT_KEYS} for v in run["variants"]],
        "bounds": run.get("bounds"),
        "blend": os.path.abspath(job.out),
        "preview": os.path.abspath(preview) if preview else None,
        "still": os.path.abspath(still) if still else None,
        "timings_s": clock.rounded(),
    }


def run_generate(job: GenerateJob) -> dict:
    """Generate Motion on the job's rig (or the built-in creature) through the operator; save a .blend
    (+ a preview of the variants side by side, and/or a still PNG of its middle frame, + a JSON report)."""
    clock = Stopwatch()
    with clock.lap("start_blender"):
        module = start_with_backend(job.backend)
    try:
        with clock.lap("load_rig"):
            if job.rig_file:
                arm, meshes = import_rig_file(os.path.abspath(job.rig_file))
            else:
                arm, meshes = builtin_creature(job.creature_seed)
        activate(arm)
        scene = bpy.context.scene
        scene.render.fps, scene.render.fps_base = job.fps, 1.0
        scene.frame_start = scene.frame_end = 1  # the job's own scene: the range grows to the clip
        with clock.lap("generate"):
            run = run_operator(
                bpy.ops.kirin.generate_motion, "Generate Motion failed; Blender printed the reason above.",
                prompt=job.prompt, image=job.image or "", frames=job.frames, variants=job.variants,
                seed=job.seed, guidance=job.guidance, loop=job.loop)
        seconds_to_first_action = clock.elapsed()
        rig = read_rig(arm)
        with clock.lap("save_blend"):
            save_blend(job.out)
        if job.preview.path or job.preview.still:
            with clock.lap("render_preview"):
                _render_variants(arm, meshes, rig, run, job.preview)
        summary = _summary(job, run, arm, meshes, rig, clock, seconds_to_first_action)
    finally:
        disable_extension(module)
    write_report(summary, job.report)
    return summary
