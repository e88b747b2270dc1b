"""A motion file's conventions, read from the file itself, and its clip retargeted to stand on the floor.

Files differ in their conventions and rarely say them: BVH is Y-up by custom, yet the CMU takes on a
Character Creator skeleton have a folded zero pose (hips along +Z, thighs along +Y, the feet above the
head) that their root's rotation turns upright; glTF is Y-up by specification; FBX exports come Y- or
Z-up, in centimetres or metres; a BVH's rest may stand anywhere, its mocap floor somewhere else. So
the skeleton is looked at as it moves:

* **Up and forward.** The canonical-frame cues (`core/canonical.py`, `core/rest_pose_cues.py`: legs
  on the ground, hanging legs, foot and side names, the head over the feet) are read on the rest pose
  and on poses sampled over the clip; the up axis is the one most poses stand along. A rest that
  stands along it (a T- or A-pose) is the source's rest; one that does not (a folded zero pose) is
  replaced by the sampled pose that stands best (`core/standing.py`, which the add-on also reads the
  target rig's own animation with; `core.rig.posed_rig`: the same armature-space poses, so the motion
  is unchanged). Forward is detected on that standing pose: where the body faces
  there, by its side names and toes.
* **Units.** The standing height in file units. glTF is metres by specification; for a BVH the unit
  is a guess from that height for a body of human size (for the report only: retargeting works in body
  sizes and never needs it).
* **The floor.** Mocap floors are where the capture volume had them, rarely at the rest's feet. The
  retargeted clip is put on the target's floor (`retargeter.ground_pose`): by as much as the clip's
  floor (the source's lowest limb joint in its lowest frames: the soles of a walk, the knee of a kneel)
  lies below the source's rest floor, scaled as the root path is, which is scaled by the ratio of hip
  heights, both measured standing (`retarget`). The feet are then laid flat, held where the source's
  are down and kept above the floor (`feet`).
* **A body unlike the rig's.** Where the automatic joint map drives none of the rig's legs and under
  MATCHED_LEAST of its bones (a mech's walk on a person), nothing is made: the user is told what matched
  and to map the legs by hand. An upper body's clip, which drives no leg but the spine and arms, is made.

numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.canonical import CanonicalFrame, axis_name, detect_canonical_frame
from ..core.motion import Motion, forward_kinematics, motion_from_world_transforms
from ..core.rest_pose_cues import body_joints
from ..core.rig import Rig, posed_rig
from ..core.rotations import quat_identity
from ..core.skinning import SkinnedMesh
from ..core.standing import SAMPLED_POSES, choose_standing_pose, sampled_frames
from .feet import feet_to_ground, foot_soles, hold_feet, lift_soles, mapped_feet
from .retargeter import (
    RetargetPair,
    RetargetResult,
    finish,
    ground_pose,
    rest_alignment,
    retarget_pair,
    target_pose,
)

HUMAN_HEIGHT = 1.7  # metres: what a BVH's unit is guessed from
# Units a motion file may be in, metres per unit; "CMU" is the CMU database's 0.45 inch.
UNITS = {"m": 1.0, "dm": 0.1, "cm": 0.01, "mm": 0.001, "in": 0.0254, "ft": 0.3048, "CMU": 0.0254 / 0.45}
# A clip whose automatic map drives none of the rig's legs and fewer than this share of its bones is not
# written (`_no_legs_matched`).
MATCHED_LEAST = 0.25
UNIT_TOLERANCE = 1.6  # a height this many times off every unit's human height guesses none


@dataclass(frozen=True)
class FileConventions:
    """What a motion file's skeleton says about its conventions, and the clip on a rest that stands."""

    rig: Rig  # the source rig, its rest a pose that stands (the file's own rest, or a clip frame's pose)
    motion: Motion  # the clip on `rig` (the same armature-space poses as the file's)
    frame: CanonicalFrame  # file axes → the canonical frame
    reference: int | None  # the clip frame whose pose is the rest; None: the file's own rest stands
    up_axis: str  # in the file's own axes ("+Y" for a BVH that stands along its Y)
    forward_axis: str
    height: float  # standing height, file units
    unit: str | None  # "m", "cm", …; None when no unit fits a body of human size
    votes: dict[str, int] = field(default_factory=dict)  # the up axis (world labels) of each sampled pose

    def describe(self) -> str:
        """One line for the user: how the file was read."""
        unit = f"{self.unit} ({self.height * UNITS[self.unit]:.2f} m tall)" if self.unit else (
            f"unknown units ({self.height:.3g} units tall)")
        rest = ("its rest pose stands" if self.reference is None
                else f"its rest pose does not stand: frame {self.reference + 1}'s pose is used")
        return f"{self.up_axis[1:]}-up, facing {self.forward_axis}, {unit}; {rest}"


def guess_unit(height: float) -> str | None:
    """The unit in which a body `height` units tall is of human size (None when none is near)."""
    if not height > 0:
        return None
    name, factor = min(UNITS.items(), key=lambda item: abs(np.log(height * item[1] / HUMAN_HEIGHT)))
    return name if abs(np.log(height * factor / HUMAN_HEIGHT)) <= np.log(UNIT_TOLERANCE) else None


def _standing_height(rig: Rig, frame: CanonicalFrame) -> float:
    """Extent of the body along the frame's up axis, in the rig's own units."""
    joints = body_joints(rig)
    points = np.concatenate([rig.heads[joints], rig.tails[joints]])
    along = points @ frame.rotation[2]
    return float(along.max() - along.min())


def read_conventions(rig: Rig, motion: Motion, world_matrix: np.ndarray | None = None,
                     unit: str | None = None, samples: int = SAMPLED_POSES) -> FileConventions:
    """Up, forward, height and unit of a motion file's skeleton, and a rest that stands (module
    docstring). `world_matrix`: how the file's axes sit in Blender's world (`io.files.file_world_matrix`),
    the prior where the skeleton says too little; `unit`: the unit the file declares (glTF: "m"), else
    guessed from the height."""
    motion.check_rig(rig)
    pose = forward_kinematics(rig, motion)
    frames = sampled_frames(0, motion.frame_count - 1, samples)
    choice = choose_standing_pose(rig, pose[frames], world_matrix)
    up, votes = choice.up, choice.votes
    if choice.sample is None:
        reference, standing, clip = None, rig, motion
    else:
        reference = frames[choice.sample]
        standing = posed_rig(rig, pose[reference])
        clip = motion_from_world_transforms(standing, pose, motion.fps)
    frame = detect_canonical_frame(standing, world_matrix, up=up)
    height = _standing_height(standing, frame)
    return FileConventions(
        rig=standing, motion=clip, frame=frame, reference=reference,
        up_axis=axis_name(frame.rotation[2]), forward_axis=axis_name(-frame.rotation[1]),
        height=height, unit=unit or guess_unit(height), votes=dict(votes))


@dataclass
class FileRetarget:
    """A motion file's clip retargeted: the result, how the file was read, how far the clip was moved
    to stand on the target's floor (target units, along its up), the feet laid flat and held."""

    result: RetargetResult
    conventions: FileConventions
    floor_shift: float
    feet: list[str] = field(default_factory=list)  # target joints aligned where the source's feet are planted
    held: list[str] = field(default_factory=list)  # of them, the feet held by leg IK while planted
    lifted: list[str] = field(default_factory=list)  # of them, the feet lifted so their soles clear the floor


def retarget_file_motion(conventions: FileConventions, target: Rig, target_frame: CanonicalFrame,
                         mapping: dict[str, str | None] | None = None,
                         align_rest: bool = True, skin: SkinnedMesh | None = None) -> FileRetarget:
    """The file's clip (read by `read_conventions`) on `target`: retargeted from the standing source, put
    on the target's floor, the feet aligned where the source's are planted and held there, their soles
    kept above the floor (`feet`). `skin`: the target's skin at rest in its armature space; None: the
    bones alone (no sole is known)."""
    source, motion, frame = conventions.rig, conventions.motion, conventions.frame
    pair = retarget_pair(source, motion, target, mapping, frame, target_frame)
    matched = int(np.sum(pair.mapped >= 0))
    if mapping is None and not mapped_feet(pair) and matched < MATCHED_LEAST * target.joint_count:
        raise ValueError(_no_legs_matched(pair))
    feet: list[int] = []
    if align_rest:
        align, feet = feet_to_ground(pair, rest_alignment(pair.source, pair.target, pair.mapped))
    else:
        align = quat_identity((pair.target.joint_count,))
    pose = target_pose(pair, align)
    shift = ground_pose(pair, pose)
    held = hold_feet(pair, pose, feet) if feet else []
    lifted = []
    if skin is not None and feet and skin.weighted.any():
        weighted = skin.weighted
        soles, floor = foot_soles(pair.target, pair.target_frame.to_canonical_points(skin.vertices[weighted]),
                                  skin.dominant_joints()[weighted], feet)
        lifted = lift_soles(pair, pose, soles, floor)
    result = finish(pair, pose)
    names = target.names
    return FileRetarget(result, conventions, shift / target_frame.scale, [names[j] for j in feet],
                        [names[j] for j in held], [names[j] for j in lifted])


def _no_legs_matched(pair: RetargetPair) -> str:
    """What the user is told where the automatic joint map drives none of the target's legs and little
    else: the clip would slide a statue about (a mech's walk on a person: 2 of 19 bones, floating at a
    third of its height and lying on its side). An upper body's clip (a wave) drives no leg either, but
    its spine, head and arms: it is written."""
    driven = [pair.target.names[j] for j in np.flatnonzero(pair.mapped >= 0)]
    listed = ", ".join(driven[:6]) + (", …" if len(driven) > 6 else "") if driven else "none"
    return (f"No leg of the rig matched a bone of the file's skeleton, and little else ({len(driven)} of "
            f"{pair.target.joint_count} bones matched: {listed}): its body is too unlike this rig's to "
            "carry the motion, and nothing was written. Map the legs' bones by hand in the joint map, or "
            "use a clip of a body like this one.")
