"""Generate Motion never hands back a broken clip: each variant is judged (kirin_addon/eval/broken.py:
frozen, exploded, floating, sinking) before it leaves the pipeline; a broken one is made again the
other way — the network where construction broke, construction where the network broke and the prompt
is one construction makes — and where that is broken too, or there is no other way, the request fails
with a GenerationError that says what was wrong. A walk (any legged gait) asked of a rig whose legs
cannot be found is refused before anything is made: with no legs there is nothing to plant. Where the
request keeps the user's keys (in-betweening) only an explosion counts: the keys decide the rest.

The clip is judged in the rig's canonical frame (body size 1, +Z up): its joints, its skin (a strided
share of the vertices, skinned here) where the rig has one, the floor where the rig stands at rest (none
for a swim or a flight: nothing to sink through), and the joints that plant (each leg's, from
rig_roles.py; the rest pose's foot candidates where the legs are not found).

numpy only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.canonical import CanonicalRig
from ..core.motion import Motion, forward_kinematics
from ..core.rig import Rig
from ..core.skinning import SkinnedMesh, linear_blend_skinning, skin_matrices
from ..eval.broken import BrokenLimits, ClipShape, Finding, classify, describe, exploded
from ..library.captions.clip_names import describe_clip_name
from .network import GenerationError
from .request import GenerateRequest
from .rig_roles import RoleError, detect_roles, planting_joints

# The gaits that walk on legs: a prompt that asks for one of them wants feet that plant.
LEGGED_GAITS = frozenset({"walk", "trot", "pace", "canter", "gallop", "rotary_gallop", "bound", "pronk",
                          "run", "tripod"})
AFLOAT = frozenset({"swim", "fly", "glide"})  # what moves free of the floor: nothing to sink through
SKIN_POINTS = 200  # vertices of the skin the guard deforms (evenly spread): the floor and the reach


# What moves along the ground without legs: it must move, but plants no feet.
CREEPING = frozenset({"slither", "sidewind"})
# The prompt is read with the names of a family whose aliases change no gait but a run (into a gallop,
# still a gait on legs): a rig's own family would read a snake's "slither" as a walk, a fish's "walk" as
# a swim — what is asked is what the words say.
READ_AS = "dragon"


def asked_actions(prompt: str | None) -> list[str]:
    """The actions of a prompt's parts, as its words say them ("a snake slithering" → slither)."""
    if not prompt:
        return []
    return [part.action for part in describe_clip_name(prompt, "", READ_AS).parts()]


def asks_for_legs(prompt: str | None) -> bool:
    """Whether a prompt asks for legged locomotion (a walk, a trot, a run…) in any of its parts."""
    return any(action in LEGGED_GAITS for action in asked_actions(prompt))


def asks_to_leave_the_floor(prompt: str | None) -> bool:
    """Whether a prompt asks for a swim or a flight in any of its parts: the clip has no floor to keep."""
    return any(action in AFLOAT for action in asked_actions(prompt))


def asks_to_travel(prompt: str | None) -> bool:
    """Whether a prompt asks for locomotion (a gait, a slither, a swim, a flight) in any of its parts: a
    clip that must move. One that asks only for something in place (an idle, a tail wag, a sniff) may
    move little."""
    return any(action in LEGGED_GAITS | AFLOAT | CREEPING for action in asked_actions(prompt))


@dataclass
class ClipGuard:
    """Judges the variants of one request on one prepared rig (module docstring)."""

    canon: CanonicalRig
    rig: Rig  # the user's rig (armature space): the motions are on it
    mesh: SkinnedMesh | None  # its skin in armature space
    legged: bool  # the prompt asks for legged locomotion
    still: bool  # the prompt asks for no locomotion: something in place, which may move little
    afloat: bool  # the prompt asks for a swim or a flight: no floor to sink through
    feet: np.ndarray  # the joints that plant
    keeps: bool = False  # the request keeps the user's keys: they decide where the body is
    limits: BrokenLimits = BrokenLimits()

    @classmethod
    def for_request(cls, canon: CanonicalRig, rig: Rig, mesh: SkinnedMesh | None,
                    prompt: str | None, keeps: bool = False) -> ClipGuard:
        """The guard of a request (`keeps`: it keeps the user's keys); GenerationError when it asks a rig
        whose legs cannot be found to walk."""
        legged = asks_for_legs(prompt)
        try:
            roles = detect_roles(canon.rig)
            feet = np.array([j for j in planting_joints(roles) if j < rig.joint_count], dtype=np.int64)
            # A crawl on legs (a spider's) is a walk: its feet plant; a snake's slither plants none.
            legged = legged or any(action in CREEPING for action in asked_actions(prompt))
        except RoleError as exc:
            if legged:
                raise GenerationError(f"No clip was made for '{prompt}'. {exc} A walk needs legs whose feet "
                                      "reach the floor at rest.") from None
            feet = np.asarray(canon.feet, dtype=np.int64)
        return cls(canon, rig, mesh, legged, not asks_to_travel(prompt), asks_to_leave_the_floor(prompt),
                   feet, keeps)

    def shape(self, motion: Motion) -> ClipShape:
        """The clip as eval/broken.py reads it, in the canonical frame."""
        frame = self.canon.frame
        poses = forward_kinematics(self.rig, motion)
        positions = frame.to_canonical_points(poses[..., :3, 3])
        rest = self.canon.rig.heads
        floor = float(rest[:, 2].min())
        vertices = None
        if self.mesh is not None and self.mesh.vertex_count:
            mesh = self.mesh
            every = np.unique(np.linspace(0, mesh.vertex_count - 1, SKIN_POINTS).astype(np.int64))
            skinned = linear_blend_skinning(mesh.vertices[every], mesh.joint_indices[every],
                                            mesh.joint_weights[every], skin_matrices(self.rig.rest, poses))
            vertices = frame.to_canonical_points(skinned)
            floor = min(floor, float(frame.to_canonical_points(mesh.vertices)[:, 2].min()))
        feet = positions[:, self.feet].transpose(1, 0, 2).copy()
        feet[..., 2] += floor - rest[self.feet, 2][:, None]  # each foot's floor where it stands at rest
        moved = motion.translations
        free = () if moved is None else tuple(int(j) for j in np.flatnonzero(np.abs(moved).max(axis=(0, 2))))
        return ClipShape(positions, self.rig.parents, motion.fps, floor=None if self.afloat else floor,
                         feet=feet, legged=self.legged, vertices=vertices, still=self.still, free=free,
                         names=tuple(self.rig.names))

    def findings(self, motion: Motion) -> list[Finding]:
        """What is broken about a motion on the rig (empty: nothing). Between the user's own keys only an
        explosion is: the keys say where the body is, whether it stands still, where the feet are."""
        if motion.frame_count < 2:
            return []
        if self.keeps:
            blown = exploded(self.shape(motion), self.limits)
            return [] if blown is None else [blown]
        return classify(self.shape(motion), self.limits)

    def sound(self, made: Sequence[Any], other: Callable[[], Sequence[Any] | None] | None,
              way: str, other_way: str) -> list[Any]:
        """The variants `made` (each with a `.motion` and a `.report`), every broken one replaced by the
        same variant made the other way (`other`, called once, only if needed; None or returning None:
        there is no other way); GenerationError when one stays broken."""
        made = list(made)
        broken = {k: self.findings(v.motion) for k, v in enumerate(made)}
        broken = {k: found for k, found in broken.items() if found}
        if not broken:
            return made
        remade = other() if other is not None else None
        again: dict[int, list[Finding]] = {}  # what is broken about the other way's variants
        for k in sorted(broken):
            if remade is None or k >= len(remade):
                break
            again[k] = self.findings(remade[k].motion)
            if not again[k]:
                remade[k].report["guard"] = f"{way}: {describe(broken[k])} Made {other_way} instead."
                made[k] = remade[k]
                del broken[k]
        if broken:
            k = min(broken)
            said = f"Made {way}: {_first_lower(describe(broken[k]))}"
            if k in again:
                said += f" Made {other_way}: {_first_lower(describe(again[k]))}"
            raise GenerationError(f"No clip was written: every way to make variant {k + 1} gave a broken "
                                  f"clip. {said}" if k in again else
                                  f"No clip was written: the variant {k + 1} made {way} is broken. "
                                  f"{describe(broken[k])}")
        return made


def _first_lower(text: str) -> str:
    return text[:1].lower() + text[1:]


class Unguarded:
    """Stands in for a ClipGuard where every variant is wanted as made (SamplingOptions.guard False: the
    network's or the controllers' own clips, broken or not, for evaluation)."""

    def sound(self, made: Sequence[Any], other: Callable[[], Sequence[Any] | None] | None,
              way: str, other_way: str) -> list[Any]:
        return list(made)


UNGUARDED = Unguarded()


def without_extras(request: GenerateRequest) -> GenerateRequest | None:
    """The request as construction can make it where the network's clip broke: its reference image
    left out (a hint to the style); None where it keeps keys or loops (construction honours neither)."""
    if request.keep is not None or request.loop or request.prompt is None:
        return None
    return replace(request, image=None)
