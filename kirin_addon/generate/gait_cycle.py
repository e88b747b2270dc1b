"""A gait on the user's rig at the stride frequency a video shows, cut at evenly spaced phases of its
cycle: the starts Motion From Video fits from, and the motion its prior pulls towards; and the rig's
standing pose, where the video shows no stride to cut a gait at.

A silhouette says little about which leg is where; a gait does. The gait controllers drive the rig's
own legs (construct.py) at the video's stride frequency; the fit tries each phase (and heading) and
keeps the one that explains the footage best, then holds the legs near that gait wherever the evidence
is silent — what SMAL's pose prior and a walking prior give an animal fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.canonical import CanonicalRig
from ..core.motion import Motion
from ..core.skinning import SkinnedMesh
from .construct import construct_motion, construction_roles
from .plan import CONSTRUCTED_FAMILIES, MotionPlan, Segment, plan_prompt
from .rig_roles import RoleError, detect_roles
from .rig_shape import rig_shape
from .tempo import tempo_of

# The gaits a stride frequency alone chooses between (the nearest calibrated tempo on the rig wins).
PLAIN_GAITS = {"quadruped": ("walk", "trot", "gallop"), "biped": ("walk", "run")}
PHASES = 8  # starts per stride


@dataclass(frozen=True)
class GaitAsked:
    """The gait a video asks for: its length, frame rate and stride frequency (Hz), and the words naming
    the gait ("" : the nearest calibrated one), cut at `phases` phases of its cycle."""

    frames: int
    fps: float
    frequency: float
    description: str = ""
    phases: int = PHASES
    seed: int = 0


@dataclass
class GaitStarts:
    gait: str
    frequency: float  # Hz
    chosen_by: str  # "description" | "frequency"
    motions: list[Motion]  # one per phase, each the clip's length, on the rig given (armature space)

    def report(self) -> dict:
        return {"gait": self.gait, "frequency_hz": self.frequency, "chosen_by": self.chosen_by,
                "phases": len(self.motions)}


def chosen_gait(family: str, description: str, frequency: float, canon: CanonicalRig,
                roles=None) -> tuple[str, str] | None:
    """(the gait, how it was chosen): the one `description` names ("a bison galloping"), else the plain
    gait of the family whose calibrated tempo on this rig is nearest `frequency`; None when the family
    has none."""
    if description.strip():
        plan = plan_prompt(description, family)
        if plan.locomotion:
            return plan.segments[0].action, "description"
    shape = rig_shape(roles if roles is not None else detect_roles(canon.rig))
    tempi = {gait: tempo_of(family, gait, 1.0, None, shape) for gait in PLAIN_GAITS.get(family, ())}
    known = {gait: tempo.frequency for gait, tempo in tempi.items() if tempo is not None}
    if not known:
        return None
    return min(known, key=lambda gait: abs(math.log(known[gait] / frequency))), "frequency"


def gait_starts(canon: CanonicalRig, rig, asked: GaitAsked,
                mesh: SkinnedMesh | None = None) -> GaitStarts | None:
    """`asked.phases` clips of `asked.frames` frames of the rig's gait at the asked frequency, each
    starting a 1/phases stride later (after one whole stride, so that none holds the controllers'
    start); None where the controllers cannot drive the rig (no legs found, a family they do not walk on
    artists' rigs)."""
    frames, fps, frequency = asked.frames, asked.fps, asked.frequency
    try:
        roles = construction_roles(canon, mesh)
    except RoleError:
        return None
    if roles.family not in CONSTRUCTED_FAMILIES or not frequency > 0:
        return None
    chosen = chosen_gait(roles.family, asked.description, frequency, canon, roles)
    if chosen is None:
        return None
    gait, how = chosen
    period = fps / frequency
    lead = int(math.ceil(period))
    total = frames + 2 * lead
    plan = MotionPlan(roles.family, (Segment(gait, 1.0, frequency=frequency),))
    made = construct_motion(canon, rig, plan, total, fps, asked.seed, mesh, roles)
    phases = max(asked.phases, 1)
    offsets = [lead + int(round(k * period / phases)) for k in range(phases)]
    return GaitStarts(gait, float(frequency), how, [made.motion.sliced(o, o + frames) for o in offsets])


def standing_pose(canon: CanonicalRig, rig, fps: float, mesh: SkinnedMesh | None = None) -> Motion | None:
    """One frame of the rig standing as the controllers stand it (T- and A-pose arms hanging, spread
    wings folded: the first frame of its idle), on the rig given; None where they cannot drive it. A
    limb held out at rest points at a side camera, where the image says least about which way it should
    swing: a fit from rest can bring a hanging arm forward instead of down."""
    try:
        roles = construction_roles(canon, mesh)
        if roles.family not in CONSTRUCTED_FAMILIES:
            return None
        made = construct_motion(canon, rig, MotionPlan(roles.family, (Segment("idle", 1.0),)), 2, fps, 0,
                                mesh, roles)
    except ValueError:  # RoleError, ControllerError: no legs, a family without an idle
        return None
    return made.motion.sliced(0, 1)
