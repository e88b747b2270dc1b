"""Generate Motion by the network on a rig of more than 64 bones (fingers, face, twist bones, long
tails): the network makes the motion of the rig's bones that matter (core/rig_reduction.py: at most
64, every foot among them) and the other bones ride on them from the standing pose; kept frames are
then pinned on the whole rig, so keyed fingers stay keyed. A motion by construction needs none of
this: the controllers drive any number of bones.

The pipeline (pipeline.py) prepares the reduced rig beside the user's and calls these around its
own sampling."""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

import numpy as np

from ..core.canonical import CanonicalRig, canonical_rig
from ..core.rig_reduction import RigReduction
from .map_back import pin_kept
from .request import GenerateRequest

Made = TypeVar("Made")  # the pipeline's Generated: a motion, features, contacts, a seed, a report


def reduced_canon(reduction: RigReduction, canon: CanonicalRig) -> CanonicalRig:
    """The reduced rig in the whole rig's canonical frame (scaled to its own body size), with the
    whole rig's feet in their order (every foot is kept): its contacts are the whole rig's."""
    small = canonical_rig(reduction.rig, reduction.canonical_frame(canon.frame))
    return CanonicalRig(small.rig, small.frame, reduction.index[canon.feet])


def reduced_request(reduction: RigReduction, request: GenerateRequest) -> GenerateRequest:
    """The request with its kept frames on the reduced rig."""
    if request.keep is None:
        return request
    return replace(request, keep=reduction.reduce_motion(request.keep))


def reduced_joints(reduction: RigReduction, joints: np.ndarray | None) -> np.ndarray | None:
    """Joints to keep (the whole rig's) as the reduced rig's: a left-out finger is kept by its hand."""
    return None if joints is None else reduction.reduce_joints(joints)


def carried_back(reduction: RigReduction, made: list[Made], request: GenerateRequest,
                 keep_joints: np.ndarray | None) -> list[Made]:
    """Each variant (made on the reduced rig) on the whole rig: the left-out bones ride on their
    anchors from the standing pose, and the kept frames are pinned on every bone."""
    out = []
    for item in made:
        motion = reduction.expand_motion(item.motion)  # type: ignore[attr-defined]
        if request.keep is not None:
            motion = pin_kept(motion, request.keep, request.kept_frames(), keep_joints,
                              item.report)  # type: ignore[attr-defined]
        out.append(replace(item, motion=motion))  # type: ignore[type-var]
    return out
