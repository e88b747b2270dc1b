"""Which pose of an animation a skeleton stands in, where its rest pose may not stand.

A CMU take on a Character Creator skeleton has a folded zero pose (hips along +Z, thighs along +Y, the
feet above the head) that its root's rotation turns upright; a glTF's bind pose may lie on its side. So
the skeleton is looked at as it moves: the canonical-frame cues (`canonical.rank_orientations`: legs on
the ground, hanging legs, foot and side names, the head over the feet) are read on poses sampled over the
animation, and the up axis is the one most poses stand along. A rest that stands along it in REST_AGREES
of them is the rest to use; one that does not is replaced by the sampled pose that stands tallest (the
body's centre within TALLEST of the animation's highest above its lowest joint: not sitting, crouching,
hanging from a bar with the legs tucked), and of those the most neutral (the feet side by side, where the
caller can tell: `Stance`), else the one whose cues are strongest.

Apply Motion From File reads a file's skeleton this way (`retarget/motion_file.py`), and the add-on reads
the selected rig's animation the same way (operators/standing.py), so a take retargeted onto its own
skeleton stands on the same pose on both sides. numpy only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .canonical import CanonicalFrame, detect_canonical_frame, rank_orientations
from .rest_pose_cues import body_joints
from .rig import Rig, posed_rig

SAMPLED_POSES = 24  # poses spread over an animation, besides its first four (a take's opening T-pose)
REST_AGREES = 0.25  # a rest that stands along the up axis of this share of the poses is kept
TALLEST = 0.95  # a standing pose's centre is at least this share of the animation's highest above its feet
# How far a posed rig (canonical frame) is from a neutral stance; None where its legs are not found.
Stance = Callable[[Rig], float | None]


@dataclass(frozen=True)
class StandingChoice:
    """What the sampled poses say: the up axis they stand along (a world axis name), and the sampled pose
    to stand on (its index in the samples); None where the rest stands as the animation does."""

    up: str | None  # None: no sampled pose stands along the axis asked for
    sample: int | None
    votes: dict[str, int]


def sampled_frames(first: int, last: int, count: int = SAMPLED_POSES) -> list[int]:
    """The frames to look at: the first four (a take's opening T-pose) and `count` spread over the range."""
    spread = np.linspace(first, last, count).round().astype(int).tolist()
    return sorted(set(range(first, min(first + 4, last + 1))) | set(spread))


def choose_standing_pose(rig: Rig, poses: np.ndarray, world_matrix: np.ndarray | None = None,
                         up: str | None = None, stance: Stance | None = None) -> StandingChoice:
    """The up axis most of `poses` (N,J,4,4 armature-space joint transforms, sampled over an animation)
    stand along, and the pose to stand on where the rest does not stand along it (module docstring).
    `world_matrix`: the armature's place in the world (the axis names are the world's); `up`: the axis
    the pose must stand along (the scene's up), where not the one most poses stand along; `stance`: how
    far a posed rig (canonical frame) is from a neutral stance, the feet side by side (None: its legs are
    not found): of the tallest poses, the most neutral is taken (a walk's mid-stride pose would bend the
    legs of every frame retargeted from or onto it), else the one with the strongest cues."""
    posed = [posed_rig(rig, pose) for pose in poses]
    best = [rank_orientations(one, world_matrix)[0] for one in posed]
    votes = Counter(label for label, *_ in best)
    rest_up = rank_orientations(rig, world_matrix)[0][0]
    if votes[rest_up] >= REST_AGREES * len(poses):
        return StandingChoice(rest_up, None, dict(votes))
    if up is None:
        strength = {label: sum(b[2] for b in best if b[0] == label) for label in votes}
        up = max(votes, key=lambda label: (votes[label], strength[label]))
    along = [k for k, b in enumerate(best) if b[0] == up]
    if not along:
        return StandingChoice(None, None, dict(votes))
    frames = {k: detect_canonical_frame(posed[k], world_matrix, up=up) for k in along}
    tall = _tallest(rig, poses, frames)
    neutral = {} if stance is None else {k: stance(posed[k].transformed(frames[k].matrix())) for k in tall}
    neutral = {k: v for k, v in neutral.items() if v is not None}
    if neutral:
        return StandingChoice(up, min(neutral, key=neutral.get), dict(votes))
    return StandingChoice(up, max(tall, key=lambda k: best[k][2]), dict(votes))


def _tallest(rig: Rig, poses: np.ndarray, frames: dict[int, CanonicalFrame]) -> list[int]:
    """Of the poses (index → its canonical frame), those that stand tallest (within TALLEST of the
    tallest)."""
    joints = body_joints(rig)
    lift = {}
    for k, frame in frames.items():
        heights = poses[k, joints, :3, 3] @ frame.rotation[2]
        lift[k] = float(heights.mean() - heights.min())
    tallest = max(lift.values())
    return [k for k in frames if lift[k] >= TALLEST * tallest]
