"""`kirin extract`: Extract Motion From Video headless through the same operator a user clicks, on a
character file (or a built-in procedural creature), and save a .blend (+ a JSON report)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import bpy

from ...kirin_addon.video.request import SILHOUETTE_SOURCES
from . import common as headless


@dataclass
class ExtractJob:
    """Extract the motion of `video` onto `rig_file` (None: the built-in `creature` of `creature_seed`):
    video frames start, start+stride, ... < stop (0-based; stop None: to the end); `silhouettes`
    "background", "stills", "none" or a folder of masks; `keypoints` a 2D keypoints file; `epochs` None:
    the operator's; `idm` starts from the rig's inverse-dynamics model, `gait` names the gait the fit
    starts from ("auto", "none" or words), `facing` where its head points ("auto", "left", "right",
    "toward", "away"), `mediapipe` takes MediaPipe Pose keypoints (humanoids)."""

    video: str
    out: str
    rig_file: str | None = None
    keypoints: str | None = None
    silhouettes: str = "background"
    start: int = 0
    stop: int | None = None
    stride: int = 1
    epochs: int | None = None
    fps: int = 30
    creature: str = "quadruped"
    creature_seed: int = 0
    idm: bool = False
    mediapipe: bool = False
    gait: str = "auto"
    facing: str = "auto"
    report: str | None = None
    backend: headless.BackendOptions = field(default_factory=headless.BackendOptions)


def _check_inputs(job: ExtractJob) -> None:
    """Fail before Blender starts on a bad frame range or a missing file."""
    if job.stride < 1 or job.start < 0 or (job.stop is not None and job.stop <= job.start):
        raise ValueError(f"Bad frame range: --start {job.start} --stop {job.stop} --stride {job.stride} "
                         "(start ≥ 0, stop after start, stride ≥ 1).")
    for path, what in ((job.video, "video"), (job.keypoints, "keypoints file")):
        if path is not None and not os.path.isfile(path):
            raise FileNotFoundError(f"No such {what}: {path}")
    if job.silhouettes not in SILHOUETTE_SOURCES and not os.path.isdir(job.silhouettes):
        raise FileNotFoundError("--silhouettes: expected background, stills, none or a folder of masks; no "
                                f"folder {job.silhouettes}")


def _operator_options(job: ExtractJob) -> dict:
    """The Motion From Video operator's arguments for the job (its frames are 1-based)."""
    options = {"video": os.path.abspath(job.video), "first": job.start + 1, "last": job.stop or 0,
               "stride": job.stride, "keypoints": os.path.abspath(job.keypoints) if job.keypoints else "",
               "idm": job.idm, "mediapipe": job.mediapipe, "gait": job.gait,
               "facing": job.facing.upper()}
    if job.silhouettes in SILHOUETTE_SOURCES:
        options["silhouettes"] = job.silhouettes.upper()
    else:
        options["silhouettes"], options["masks"] = "MASKS", os.path.abspath(job.silhouettes)
    if job.epochs is not None:
        options["epochs"] = job.epochs
    return options


def run_extract(job: ExtractJob) -> dict:
    """Extract the motion of the job's video onto its rig (or built-in creature) through the operator.
    Saves the .blend; returns (and writes) a report."""
    _check_inputs(job)
    clock = headless.Stopwatch()
    module = headless.start_with_backend(job.backend)
    try:
        with clock.lap("load_rig"):
            if job.rig_file:
                arm, meshes = headless.import_rig_file(os.path.abspath(job.rig_file))
            else:
                arm, meshes = headless.builtin_creature(job.creature_seed, job.creature)
        headless.activate(arm)
        scene = bpy.context.scene
        scene.render.fps, scene.render.fps_base = job.fps, 1.0
        scene.frame_start = scene.frame_end = 1  # the job's own scene: the range grows to the clip
        options = _operator_options(job)
        with clock.lap("extract"):
            summary = headless.run_operator(
                bpy.ops.kirin.motion_from_video,
                "Extract Motion From Video failed; Blender printed the reason above.", **options)
        with clock.lap("save_blend"):
            headless.save_blend(job.out)
        summary.update({
            "rig": os.path.abspath(job.rig_file) if job.rig_file else f"built-in {job.creature}",
            "meshes": [m.name for m in meshes],
            "blend": os.path.abspath(job.out),
            "seconds_total": round(clock.elapsed(), 3),
            "timings_s": clock.rounded(),
        })
    finally:
        headless.disable_extension(module)
    headless.write_report(summary, job.report)
    return summary
