"""Generate Motion: the selected armature (and its skinned mesh) → the backend → new Actions.

The synchronous and modal paths (Esc cancels, status-bar progress) are `backend_ops.BackendOperator`'s;
nothing in the scene changes until the result is written, all in one step, so a cancelled or failed
job leaves the scene as it was and one Undo removes a finished one.

The request goes out in the rig's canonical frame (as the add-on detects it: the armature's world
matrix and the user's Up/Forward settings), so the backend's own detection has nothing to guess;
the variants come back on the same bones and are brought back to armature space before
`scene_io.write_action` keys them (it writes the pose-space basis, Blender's inverse-bind form).
The job machinery (`GenerationTask`) touches no bpy type, so it is tested without timers.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import bpy
import numpy as np
from bpy.props import BoolProperty, FloatProperty, IntProperty, StringProperty

from ..kirin_addon.backend.client import BackendClient, GenerationResult
from ..kirin_addon.backend.protocol import MAX_FRAMES, MAX_VARIANTS
from ..kirin_addon.core.motion import Motion, pin_frames
from ..kirin_addon.core.rig import Rig
from ..kirin_addon.core.skinning import SkinnedMesh
from . import nla, scene_io
from .common import BackendOperator, BackendTask, connect, start_task
from .retarget import NeedsArmature, target_frame

NAME_LIMIT = 63  # bytes in a Blender ID name
# Magic numbers of the image files a reference image may be (the backend decodes them).
IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"BM", b"GIF87a", b"GIF89a", b"II*\x00", b"MM\x00*")

# What the last finished Generate Motion made (the `kirin generate` report reads it).
last_run: dict = {}


# ----------------------------------------------------------------------------- the request
@dataclass
class GenerateInput:
    """A checked Generate Motion request, read from the scene (everything the job and the write need)."""

    armature: str  # object name
    rig: Rig  # armature space
    canonical_rig: Rig  # what the backend gets
    to_canonical: np.ndarray  # (4,4) armature space → canonical frame
    mesh: SkinnedMesh | None  # in the canonical frame
    prompt: str | None
    image: str | None
    frames: int
    fps: float
    frame_start: int
    seed: int
    variants: int
    guidance: float | None
    loop: bool
    keep: Motion | None = None  # canonical frame
    keep_frames: np.ndarray | None = None
    keep_armature: Motion | None = None  # the keys as read (armature space)
    warnings: list[str] = field(default_factory=list)


def check_image(path: str) -> str:
    """The reference image's absolute path; SceneError for a missing file or one that is no image."""
    full = os.path.abspath(bpy.path.abspath(path))
    if not os.path.exists(full):
        raise scene_io.SceneError(f"The reference image {full} does not exist.")
    if not os.path.isfile(full):
        raise scene_io.SceneError(f"The reference image {full} is not a file.")
    try:
        with open(full, "rb") as handle:
            head = handle.read(16)
    except OSError as exc:
        raise scene_io.SceneError(f"Cannot read the reference image {full}: {exc.strerror or exc}") from None
    webp = head[:4] == b"RIFF" and head[8:12] == b"WEBP"
    if not webp and not any(head.startswith(magic) for magic in IMAGE_MAGIC):
        raise scene_io.SceneError(
            f"{os.path.basename(full)} is not an image file (PNG, JPEG, BMP, GIF, TIFF or WebP)."
        )
    return full


def _to_frame(motion: Motion, matrix: np.ndarray) -> Motion:
    """The motion of a rig moved by the similarity `matrix` (local rotations are unchanged)."""
    scale = float(np.cbrt(np.linalg.det(matrix[:3, :3])))
    root = motion.root_positions @ matrix[:3, :3].T + matrix[:3, 3]
    moved = None if motion.translations is None else motion.translations * scale
    return Motion(motion.fps, root, motion.rotations, moved)


def read_request(context, *, prompt: str, image: str, frames: int, variants: int, seed: int,
                 guidance: float, loop: bool, inbetween: bool) -> GenerateInput:
    """Check the input and read the scene; SceneError (a user-facing message) for bad input."""
    prompt = (prompt or "").strip()
    image = (image or "").strip()
    if not prompt and not image:
        raise scene_io.SceneError("The prompt is empty: describe the motion, e.g. 'a wolf trotting forward'.")
    if not 1 <= frames <= MAX_FRAMES:
        raise scene_io.SceneError(f"Frames must be from 1 to {MAX_FRAMES}, got {frames}.")
    if not 1 <= variants <= MAX_VARIANTS:
        raise scene_io.SceneError(f"Variants must be from 1 to {MAX_VARIANTS}, got {variants}.")
    if not 0 <= seed < 2**31:
        raise scene_io.SceneError(f"The seed must be from 0 to {2**31 - 1}, got {seed}.")
    image_path = check_image(image) if image else None
    arm, rig = scene_io.deforming_armature(context)
    frame = target_frame(arm, rig)
    to_canonical = frame.matrix()
    mesh = scene_io.read_armature_skin(context, arm, rig, to_canonical)  # None: the bones alone
    scene = context.scene
    fps = scene.render.fps / scene.render.fps_base
    request = GenerateInput(arm.name, rig, rig.transformed(to_canonical), to_canonical, mesh, prompt or None,
                            image_path, int(frames), float(fps), int(scene.frame_start), int(seed),
                            int(variants), float(guidance) if guidance > 0 else None, bool(loop))
    if inbetween:
        anim = arm.animation_data
        action = anim.action if anim is not None else None
        if action is None:
            raise scene_io.SceneError(f"In-betweening needs keyframes: '{arm.name}' has no active action.")
        last = request.frame_start + request.frames - 1
        keyed = scene_io.action_key_frames(action, arm)
        keyed = keyed[(keyed >= request.frame_start) & (keyed <= last)]
        if keyed.size == 0:
            raise scene_io.SceneError(
                f"In-betweening needs keyframes in frames {request.frame_start}–{last}: "
                f"'{action.name}' has none."
            )
        keep = scene_io.read_action(arm, rig, action, fps=fps, frame_range=(request.frame_start, last))
        request.keep_armature = keep
        request.keep = _to_frame(keep, to_canonical)
        request.keep_frames = keyed - request.frame_start
    return request


# ----------------------------------------------------------------------------- the job (no bpy)
class GenerationTask(BackendTask):
    """One Generate Motion job seen from the add-on: submit, poll (modal) or wait (execute), cancel.
    Touches no bpy data, so that the modal path is tested without timers."""

    def __init__(self, client: BackendClient, request: GenerateInput):
        self.request = request
        self.key_corrections: list[dict] = []  # how far the model missed the kept frames
        super().__init__(client.generate(
            request.canonical_rig, request.prompt, mesh=request.mesh, image=request.image,
            frames=request.frames, fps=request.fps, seed=request.seed, variants=request.variants,
            guidance=request.guidance, keep=request.keep,
            keep_frames=None if request.keep_frames is None else request.keep_frames.tolist(),
            loop=request.loop,
        ), f"generating '{request.prompt or 'from image'}'")

    def motions(self, result: GenerationResult) -> list[Motion]:
        """The variants in armature space (kept frames exactly as keyed)."""
        back = np.linalg.inv(self.request.to_canonical)
        out = [_to_frame(v.motion, back) for v in result.variants]
        request = self.request
        if request.keep_armature is not None:
            self.key_corrections = []
            for k, motion in enumerate(out):
                out[k], change = pin_frames(motion, request.keep_armature, request.keep_frames)
                self.key_corrections.append(change)
        return out


# ----------------------------------------------------------------------------- writing
def action_names(request: GenerateInput) -> list[str]:
    label = request.prompt or os.path.basename(request.image or "image")
    base = f"Kirin: {label}"
    names = []
    for k in range(request.variants):
        suffix = "" if k == 0 else f" #{k + 1}"
        room = NAME_LIMIT - len(suffix.encode())
        text = base.encode()[:room].decode(errors="ignore")
        names.append(text + suffix)
    return names


def write_results(context, task: GenerationTask, result: GenerationResult, set_frame_range: bool = True):
    """The variants as new Actions: the first active, the others muted NLA takes. Returns them."""
    request = task.request
    arm = bpy.data.objects.get(request.armature)
    if arm is None or arm.type != "ARMATURE":
        raise scene_io.SceneError(f"The armature '{request.armature}' is gone: nothing was written.")
    rig = scene_io.read_rig(arm)
    if rig.names != request.rig.names:
        raise scene_io.SceneError(f"The bones of '{arm.name}' changed while generating: nothing was written.")
    motions = task.motions(result)
    names = action_names(request)
    actions = [None] * len(motions)
    track_name = context.scene.kirin.nla_track or "Kirin"
    # The takes first (each pushed into its own muted track), the first variant last: it stays active.
    for k in list(range(1, len(motions))) + [0]:
        action = scene_io.write_action(arm, rig, motions[k], names[k], frame_start=request.frame_start)
        if request.loop:
            action.use_frame_range = True
            action.use_cyclic = True
        action["kirin_prompt"] = request.prompt or ""
        action["kirin_seed"] = int(result.variants[k].seed)
        actions[k] = action
        if k > 0:
            track, _ = nla.push_action_to_track(arm, f"{track_name} {names[k].removeprefix('Kirin: ')}")
            track.mute = True
    if set_frame_range:
        context.scene.frame_end = request.frame_start + request.frames - 1
    return actions


def report_of(task: GenerationTask, result: GenerationResult, actions) -> dict:
    return {
        "device": result.device,
        "backend": result.backend,
        "seconds_model": result.seconds_model,
        "seconds_job": result.seconds_job,
        "seconds_submit_to_actions": time.perf_counter() - task.started,
        "prompt": task.request.prompt,
        "armature": task.request.armature,
        "variants": [
            {"action": action.name, "frames": task.request.frames, "seed": variant.seed, **variant.metrics,
             "retrieved": variant.report.get("retrieved"), "within_bounds": variant.within_bounds}
            for action, variant in zip(actions, result.variants, strict=True)
        ],
        "bounds": result.info.get("bounds") or None,
        "kept_frames": None if task.request.keep_frames is None else len(task.request.keep_frames),
        "key_corrections": task.key_corrections,
    }


# ----------------------------------------------------------------------------- the operator
class KIRIN_OT_generate_motion(NeedsArmature, BackendOperator, bpy.types.Operator):
    """Generate new Actions on the selected armature from a text prompt (and an optional reference
    image) with Kirin's local backend; the first variant becomes active, the others muted NLA takes"""

    bl_idname = "kirin.generate_motion"
    bl_label = "Generate Motion"
    bl_options = {"REGISTER", "UNDO"}

    # Unset properties are taken from the panel (scene settings); no hard limits here, so that a
    # script's frames=0 gets a clear message rather than a silent clamp.
    prompt: StringProperty(name="Prompt")
    image: StringProperty(name="Reference image", subtype="FILE_PATH")
    frames: IntProperty(name="Frames", default=120, soft_min=8, soft_max=MAX_FRAMES)
    variants: IntProperty(name="Variants", default=1, soft_min=1, soft_max=8)
    seed: IntProperty(name="Seed", default=0)
    guidance: FloatProperty(name="Guidance", default=2.5, min=0.0, max=100.0)
    loop: BoolProperty(name="Loop", default=False)
    inbetween: BoolProperty(name="In-between keys", default=False,
                            description="Keep the active action's keyframes in the range; fill in between")
    timeout: FloatProperty(name="Timeout (s)", default=600.0, min=1.0, options={"HIDDEN", "SKIP_SAVE"})

    # ------------------------------------------------------------------ shared steps
    def _settings(self, context) -> dict:
        scene = context.scene.kirin
        out = {}
        for name, panel_name in (("prompt", "prompt"), ("image", "reference_image"), ("frames", "frames"),
                                 ("variants", "variants"), ("seed", "seed"), ("guidance", "guidance"),
                                 ("loop", "loop"), ("inbetween", "inbetween")):
            use_own = self.properties.is_property_set(name)
            out[name] = getattr(self, name) if use_own else getattr(scene, panel_name)
        return out

    def _start(self, context) -> GenerationTask | None:
        return start_task(
            self, lambda: GenerationTask(connect(context), read_request(context, **self._settings(context)))
        )

    def _finish(self, context, task: GenerationTask, result: GenerationResult) -> set[str]:
        try:
            actions = write_results(context, task, result)
        except (scene_io.SceneError, ValueError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        last_run.clear()
        last_run.update(report_of(task, result, actions))
        worst = max((v.metrics.get("bone_length_error") or 0.0) for v in result.variants)
        self.report({"INFO"}, f"'{actions[0].name}': {len(actions)} variant(s) of {task.request.frames} "
                    f"frames in {time.perf_counter() - task.started:.1f} s on {result.device}"
                    + (f" (bone length error {worst:.1e})" if worst > 1e-6 else ""))
        outside = [a.name for a, v in zip(actions, result.variants, strict=True) if v.within_bounds is False]
        if outside:  # kept (the animator may still like it), but said: the feet may slide or the motion buzz
            self.report({"WARNING"}, f"{', '.join(outside)}: outside the model's per-clip bounds "
                        "(foot skating, jitter or ground penetration above 95 % of the library's clips)")
        return {"FINISHED"}


CLASSES = (KIRIN_OT_generate_motion,)
