"""Generate Motion: the selected armature (and its skinned mesh) → the backend → new Actions.

The synchronous and modal paths (Esc cancels, status-bar progress) are `backend_task.BackendOperator`'s;
nothing in the scene changes until the result is written, all in one step, so a cancelled or failed
job leaves the scene as it was and one Undo removes a finished one.

The request goes out in the rig's canonical frame (as the add-on detects it: the armature's world
matrix and the user's Up/Forward settings), so the backend's own detection has nothing to guess;
the variants come back on the same bones and are brought back to armature space before
`scene_io.action.write_action` keys them (it writes the pose-space basis, Blender's inverse-bind form).
The job machinery (`GenerationTask`) touches no bpy type, so it is tested without timers.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import bpy
import numpy as np
from bpy.props import BoolProperty, FloatProperty, IntProperty, StringProperty

from ..kirin_addon.backend.client import BackendClient
from ..kirin_addon.backend.results import GenerationResult
from ..kirin_addon.core.motion import Motion, pin_frames
from ..kirin_addon.generate.reference_pose import standing_score
from ..kirin_addon.generate.request import MAX_FRAMES, GenerateRequest, GenerateRequestError
from . import nla, scene_io
from .backend_task import BackendOperator, BackendTask, Written, start_task
from .common import NAME_LIMIT, CharacterInput, NeedsArmature, connect
from .scene_change import SceneChange, show_frames
from .scene_io.action import action_key_frames, keyed_locations, read_action, write_action
from .standing import StandingPose, standing_pose

# What a variant's report (the pipeline's) says that the operator's report passes on: the path that made
# it, the tempo asked, the rig's build, and why it was made the other way where the first was broken.
REPORTED = ("path", "tempo", "rig_shape", "guard")
# Magic numbers of the image files a reference image may be (the backend decodes them).
IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"BM", b"GIF87a", b"GIF89a", b"II*\x00", b"MM\x00*")


# ----------------------------------------------------------------------------- the request
@dataclass
class GenerateSettings:
    """What the user asked for in the panel (or a script, in the operator's properties)."""

    prompt: str
    image: str
    frames: int
    variants: int
    seed: int
    guidance: float  # 0: the model's default
    loop: bool
    inbetween: bool  # keep the active action's keyframes in the range, fill in between


@dataclass
class GenerateInput(CharacterInput):
    """A checked Generate Motion request, read from the scene (everything the job and the write need)."""

    generation: GenerateRequest | None = None  # at the scene's frame rate; keys in the canonical frame
    frame_start: int = 1
    keep_armature: Motion | None = None  # the keys as read (armature space)
    warnings: list[str] = field(default_factory=list)
    # The rig posed as the scene shows it standing, when its rest pose lies another way up (a BVH's
    # folded zero pose, a glTF's bind pose on its side): the motion is generated for it and brought
    # back onto the real rest.
    standing: StandingPose | None = None


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


def read_request(context, settings: GenerateSettings) -> GenerateInput:
    """Check the input and read the scene; SceneError (a user-facing message) for bad input."""
    prompt = (settings.prompt or "").strip()
    image = (settings.image or "").strip()
    scene = context.scene
    guidance = float(settings.guidance) if settings.guidance > 0 else None
    # No prompt beside an image: the image alone; no prompt and no image: an empty prompt, which the
    # request's check names as such.
    generation = GenerateRequest(prompt or (None if image else ""), image or None, int(settings.frames),
                                 float(scene.render.fps / scene.render.fps_base), int(settings.seed),
                                 int(settings.variants), guidance, loop=bool(settings.loop))
    try:
        generation.check()
    except GenerateRequestError as exc:
        raise scene_io.SceneError(str(exc)) from None
    if image:
        generation.image = check_image(image)
    request = GenerateInput.from_scene(context, generation=generation, frame_start=int(scene.frame_start))
    if settings.inbetween:
        _read_keys(request)
    else:
        _stand_on_the_pose(request)
    return request


def _stand_on_the_pose(request: GenerateInput) -> None:
    """Generate from the pose the scene shows standing where the rest pose lies another way up
    (operators/standing.py); the skin is posed with the bones, so that it still meets the floor."""
    arm = bpy.data.objects[request.armature]
    standing = standing_pose(arm, request.rig, stance=standing_score)
    if standing is None:
        return
    back = np.linalg.inv(request.to_canonical)
    request.standing = standing
    request.to_canonical = standing.frame.matrix()
    request.canonical_rig = standing.rig.transformed(request.to_canonical)
    if request.mesh is not None:
        posed = standing.skin(request.rig, request.mesh.transformed(back))
        request.mesh = posed.transformed(request.to_canonical)
    request.warnings.append(standing.warning(arm.name))


def _read_keys(request: GenerateInput) -> None:
    """The active action's keyframes in the frame range, to keep (in-betweening)."""
    arm = bpy.data.objects[request.armature]
    anim = arm.animation_data
    action = anim.action if anim is not None else None
    if action is None:
        raise scene_io.SceneError(f"In-betweening needs keyframes: '{arm.name}' has no active action.")
    generation = request.generation
    last = request.frame_start + generation.frames - 1
    keyed = action_key_frames(action, arm)
    keyed = keyed[(keyed >= request.frame_start) & (keyed <= last)]
    if keyed.size == 0:
        raise scene_io.SceneError(
            f"In-betweening needs keyframes in frames {request.frame_start}–{last}: "
            f"'{action.name}' has none."
        )
    keep = read_action(arm, request.rig, action, fps=generation.fps,
                                frame_range=(request.frame_start, last))
    request.keep_armature = keep
    generation.keep = keep.transformed(request.to_canonical)
    generation.keep_frames = keyed - request.frame_start


# ----------------------------------------------------------------------------- the job (no bpy)
class GenerationTask(BackendTask):
    """One Generate Motion job seen from the add-on: submit, poll (modal) or wait (execute), cancel.
    Touches no bpy data, so that the modal path is tested without timers."""

    def __init__(self, client: BackendClient, request: GenerateInput):
        self.request = request
        self.key_corrections: list[dict] = []  # how far the model missed the kept frames
        generation = request.generation
        super().__init__(client.generate(request.canonical_rig, generation, request.mesh),
                         f"generating '{generation.prompt or 'from image'}'")

    def motions(self, result: GenerationResult) -> list[Motion]:
        """The variants in armature space (kept frames exactly as keyed)."""
        back = np.linalg.inv(self.request.to_canonical)
        out = [v.motion.transformed(back) for v in result.variants]
        request = self.request
        if request.standing is not None:  # made for the posed rig: the same world poses on the rest
            out = [request.standing.onto_rest(request.rig, motion) for motion in out]
        if request.keep_armature is not None:
            self.key_corrections = []
            for k, motion in enumerate(out):
                out[k], change = pin_frames(motion, request.keep_armature, request.generation.keep_frames)
                self.key_corrections.append(change)
        return out


# ----------------------------------------------------------------------------- writing
def action_names(request: GenerateInput) -> list[str]:
    generation = request.generation
    label = generation.prompt or os.path.basename(generation.image or "image")
    base = f"Kirin: {label}"
    names = []
    for k in range(generation.variants):
        suffix = "" if k == 0 else f" #{k + 1}"
        room = NAME_LIMIT - len(suffix.encode())
        text = base.encode()[:room].decode(errors="ignore")
        names.append(text + suffix)
    return names


def write_results(context, task: GenerationTask, result: GenerationResult, set_frame_range: bool = True):
    """The variants as new Actions: the first active, the others muted NLA takes. Returns them. Every
    variant is checked before anything is written, and a failure part-way takes it all back."""
    request = task.request
    generation = request.generation
    arm, rig = request.armature_to_write("while generating")
    motions = task.motions(result)
    for motion in motions:
        keyed_locations(rig, motion)
    names = action_names(request)
    actions = [None] * len(motions)
    track_name = context.scene.kirin.nla_track or "Kirin"
    with SceneChange(context.scene) as change:
        change.keep_animation(arm)
        # The takes first (each pushed into its own muted track), the first variant last: it stays active.
        for k in list(range(1, len(motions))) + [0]:
            action = write_action(arm, rig, motions[k], names[k], frame_start=request.frame_start)
            if generation.loop:
                action.use_frame_range = True
                action.use_cyclic = True
            action["kirin_prompt"] = generation.prompt or ""
            action["kirin_seed"] = int(result.variants[k].seed)
            actions[k] = action
            if k > 0:
                track, _ = nla.push_action_to_track(arm, f"{track_name} {names[k].removeprefix('Kirin: ')}")
                track.mute = True
        if set_frame_range:
            show_frames(context.scene, request.frame_start, generation.frames)
    return actions


def report_of(task: GenerationTask, result: GenerationResult, actions) -> dict:
    generation = task.request.generation
    return {
        "warnings": list(task.request.warnings),
        "device": result.device,
        "backend": result.backend,
        "seconds_model": result.seconds_model,
        "seconds_job": result.seconds_job,
        "seconds_submit_to_actions": time.perf_counter() - task.started,
        "prompt": generation.prompt,
        "armature": task.request.armature,
        "variants": [
            {"action": action.name, "frames": generation.frames, "seed": variant.seed, **variant.metrics,
             "retrieved": variant.report.get("retrieved"), "within_bounds": variant.within_bounds,
             **{key: variant.report[key] for key in REPORTED if key in variant.report}}
            for action, variant in zip(actions, result.variants, strict=True)
        ],
        "bounds": result.info.get("bounds") or None,
        "kept_frames": None if generation.keep_frames is None else len(generation.keep_frames),
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
    def _settings(self, context) -> GenerateSettings:
        scene = context.scene.kirin
        out = {}
        for name, panel_name in (("prompt", "prompt"), ("image", "reference_image"), ("frames", "frames"),
                                 ("variants", "variants"), ("seed", "seed"), ("guidance", "guidance"),
                                 ("loop", "loop"), ("inbetween", "inbetween")):
            use_own = self.properties.is_property_set(name)
            out[name] = getattr(self, name) if use_own else getattr(scene, panel_name)
        return GenerateSettings(**out)

    def _start(self, context) -> GenerationTask | None:
        return start_task(
            self, lambda: GenerationTask(connect(context), read_request(context, self._settings(context)))
        )

    def _write(self, context, task: GenerationTask, result: GenerationResult) -> Written:
        actions = write_results(context, task, result)
        written = Written(report_of(task, result, actions))
        worst = max((v.metrics.get("bone_length_error") or 0.0) for v in result.variants)
        frames = task.request.generation.frames
        written.say("INFO", f"'{actions[0].name}': {len(actions)} variant(s) of {frames} "
                    f"frames in {time.perf_counter() - task.started:.1f} s on {result.device}"
                    + (f" (bone length error {worst:.1e})" if worst > 1e-6 else ""))
        for warning in task.request.warnings:
            written.say("WARNING", warning)
        for action, variant in zip(actions, result.variants, strict=True):
            if variant.report.get("guard"):  # made the other way: the first way's clip was broken
                written.say("WARNING", f"{action.name}: {variant.report['guard']}")
        outside = [a.name for a, v in zip(actions, result.variants, strict=True) if v.within_bounds is False]
        if outside:  # kept (the animator may still like it), but said: the feet may slide or the motion buzz
            written.say("WARNING", f"{', '.join(outside)}: outside the model's per-clip bounds "
                        "(foot skating, jitter or ground penetration above 95 % of the library's clips)")
        return written


CLASSES = (KIRIN_OT_generate_motion,)
