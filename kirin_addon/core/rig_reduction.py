"""The bones that matter: a production rig (fingers, face, twist and helper bones, long tails: up to
`rig.MAX_JOINTS` bones) seen as at most `WORKING_JOINTS` bones by whatever costs per bone — the pose
prior, the motion network, the video fit — and what they make carried back onto every bone.

Which bones stay (`reduce_rig`): a rig that fits keeps every bone (the reduction is the identity and
nothing changes). A bigger one loses, one by one (mirror pairs together), the bone whose loss costs
least, never the main root or a bone the caller names (the feet) or their ancestors:

* a leaf — fingers, face, twist and helper bones, a tail's tip — costs twice what riding rigidly on
  its parent loses (in body sizes, the lesser of how far it and everything below it reach from its
  own head and out of its parent bone): a face bone is short, a twist bone lies along its limb, a
  finger is neither;
* a bone with one child left, inside a chain — a split limb's second half, a long tail's vertebra —
  costs the length of the rigid piece its merging makes (the segment above it and its own, or the
  segment to its child where that is longer): the chain keeps
  its shape with fewer, evenly spread bends (a long tail is resampled, not cut short).

The reduced rig keeps each kept bone's rest transform and hangs it from its nearest kept ancestor.

Carrying back (`RigReduction.expand_*`): a dropped bone keeps its world rotation relative to its
nearest kept ancestor from a reference pose — the rest (the rig's standing pose) when none is given,
the animator's own pose in Pose Space — so fingers and face ride on the hand and head as they were
posed. In world deltas (D = R_world · R_rest⁻¹): D_j = D_a · D_ref_a⁻¹ · D_ref_j for a dropped j whose
nearest kept ancestor is a; a dropped bone with no kept ancestor (a prop's or a control's own root)
keeps its reference delta. A bone merged inside a chain (kept bones below it) turns with the bone
above it whatever the reference (D_j = D_a), so every kept bone's head is exactly where the reduced
rig puts it: a bend the animator had there is the one thing a reduced rig does not keep.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from .canonical import CanonicalFrame
from .motion import Motion, forward_kinematics, motion_from_world_deltas, motion_from_world_transforms
from .rig import Rig, RigError
from .rotations import matrix_to_quat
from .skinning import SkinnedMesh

WORKING_JOINTS = 64  # bones the networks and the fits see of a rig (their budgets are for ≤ 64 joints)
LEAF_FACTOR = 2.0  # a dropped leaf loses all it holds; a merged chain bone only one bend


@dataclass(frozen=True, eq=False)
class RigReduction:
    """A rig (`full`) and the rig of its bones that matter (`rig`): `keep` (K,) the full indices of the
    kept bones, ascending (reduced joint k is full joint keep[k]); `anchor` (J,) each full joint's
    nearest kept ancestor-or-self (full index; -1: none)."""

    full: Rig
    keep: np.ndarray
    rig: Rig
    anchor: np.ndarray

    @property
    def reduced(self) -> bool:
        """Whether any bone was dropped (False: the identity, `rig` is `full`)."""
        return self.keep.size < self.full.joint_count

    @cached_property
    def index(self) -> np.ndarray:
        """(J,) each full joint's reduced index: its own where kept, else its anchor's (-1: none)."""
        lookup = np.full(self.full.joint_count, -1, np.int64)
        lookup[self.keep] = np.arange(self.keep.size)
        return np.where(self.anchor >= 0, lookup[np.maximum(self.anchor, 0)], -1)

    @cached_property
    def inline(self) -> np.ndarray:
        """(J,) bool: a dropped bone with kept bones below it (merged inside a chain)."""
        below = np.zeros(self.full.joint_count, bool)
        below[self.keep] = True
        for j in self.full.topological_order[::-1]:
            parent = self.full.parents[j]
            if parent >= 0 and below[j]:
                below[parent] = True
        below[self.keep] = False
        return below

    def canonical_frame(self, frame: CanonicalFrame) -> CanonicalFrame:
        """The full rig's canonical frame, scaled to the reduced rig's body size (what the networks
        were trained on: unit body size; fingers and a long tail no longer count)."""
        if not self.reduced:
            return frame
        return replace(frame, scale=frame.scale * self.full.body_size / self.rig.body_size)

    # ------------------------------------------------------------------ full → reduced
    def reduce_deltas(self, deltas: np.ndarray) -> np.ndarray:
        """World deltas (…,J,3,3) of the full rig → (…,K,3,3) of the reduced one."""
        return deltas if not self.reduced else np.asarray(deltas)[..., self.keep, :, :]

    def reduce_motion(self, motion: Motion) -> Motion:
        """A motion of the full rig as the reduced rig's: every kept bone where the full rig has it."""
        if not self.reduced:
            return motion
        world = forward_kinematics(self.full, motion)[:, self.keep]
        return motion_from_world_transforms(self.rig, world, motion.fps)

    def reduce_mesh(self, mesh: SkinnedMesh) -> SkinnedMesh:
        """The skin on the reduced rig: a dropped bone's weights go to its anchor (it rides on it)."""
        if not self.reduced:
            return mesh
        index = self.index[mesh.joint_indices]
        weights = np.where(index >= 0, mesh.joint_weights, 0.0)
        return SkinnedMesh(mesh.vertices, mesh.triangles, np.maximum(index, 0), weights)

    def reduce_joints(self, joints: np.ndarray | list[int]) -> np.ndarray:
        """Full joint indices → the reduced joints that carry them (unique, in order; none dropped)."""
        mapped = self.index[np.asarray(joints, np.int64)]
        return np.asarray(list(dict.fromkeys(int(j) for j in mapped if j >= 0)), np.int64)

    # ------------------------------------------------------------------ reduced → full
    def expand_deltas(self, deltas: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
        """World deltas (…,K,3,3) of the reduced rig → (…,J,3,3) of the full one, the dropped bones
        carried from `reference` (…,J,3,3; broadcast; None: the rest)."""
        deltas = np.asarray(deltas, np.float64)
        if not self.reduced:
            return deltas
        shape = deltas.shape[:-3] + (self.full.joint_count, 3, 3)
        out = np.empty(shape)
        out[..., self.keep, :, :] = deltas
        dropped = np.setdiff1d(np.arange(self.full.joint_count), self.keep)
        anchored = dropped[self.anchor[dropped] >= 0]
        loose = dropped[self.anchor[dropped] < 0]
        out[..., anchored, :, :] = out[..., self.anchor[anchored], :, :]
        if reference is None:
            out[..., loose, :, :] = np.eye(3)
            return out
        reference = np.broadcast_to(np.asarray(reference, np.float64), shape)
        ridden = anchored[~self.inline[anchored]]  # in a chain, a bone keeps the kept bones' heads
        ref_anchor = reference[..., self.anchor[ridden], :, :]
        relative = np.swapaxes(ref_anchor, -1, -2) @ reference[..., ridden, :, :]
        out[..., ridden, :, :] = out[..., ridden, :, :] @ relative
        out[..., loose, :, :] = reference[..., loose, :, :]
        return out

    def expand_motion(self, motion: Motion, reference: Motion | None = None) -> Motion:
        """A motion of the reduced rig on the full rig, the dropped bones carried from `reference`
        (a motion of the full rig, one frame or as many as `motion`; None: the rest)."""
        if not self.reduced:
            return motion
        world = forward_kinematics(self.rig, motion)[..., :3, :3]
        deltas = world @ np.swapaxes(self.rig.rest_rotations, -1, -2)[None]
        ref = None
        if reference is not None:
            ref_world = forward_kinematics(self.full, reference)[..., :3, :3]
            ref = ref_world @ np.swapaxes(self.full.rest_rotations, -1, -2)[None]
        full = self.expand_deltas(deltas, ref)
        root = motion.root_positions
        expanded = motion_from_world_deltas(self.full, matrix_to_quat(full), root, motion.fps)
        if motion.translations is None:
            return expanded
        # A kept bone's own move is in its rest frame, the same on both rigs where its parent is kept.
        moved = np.zeros(expanded.rotations.shape[:2] + (3,))
        same_parent = self.rig.parents == self.index[np.maximum(self.full.parents[self.keep], 0)]
        moved[:, self.keep[same_parent]] = motion.translations[:, same_parent]
        return Motion(expanded.fps, expanded.root_positions, expanded.rotations, moved)


def identity_reduction(rig: Rig) -> RigReduction:
    count = rig.joint_count
    return RigReduction(rig, np.arange(count), rig, np.arange(count))


def reduce_rig(rig: Rig, limit: int = WORKING_JOINTS, keep: np.ndarray | list[int] = ()) -> RigReduction:
    """The rig's bones that matter, at most `limit` of them (see the module docstring); `keep`: bones
    that must stay (the feet), with their ancestors, as must the main root."""
    if rig.joint_count <= limit:
        return identity_reduction(rig)
    kept = _choose(rig, limit, np.asarray(keep, np.int64))
    anchor = np.full(rig.joint_count, -1, np.int64)
    for j in rig.topological_order:
        parent = rig.parents[j]
        anchor[j] = j if kept[j] else (anchor[parent] if parent >= 0 else -1)
    chosen = np.flatnonzero(kept)
    lookup = np.full(rig.joint_count, -1, np.int64)
    lookup[chosen] = np.arange(chosen.size)
    parents = np.array([lookup[anchor[p]] if p >= 0 and anchor[p] >= 0 else -1 for p in rig.parents[chosen]])
    local = None
    if rig.local_rest is not None:  # the host's own copy of each bone whose parent is unchanged
        derived = Rig([rig.names[j] for j in chosen], parents, rig.rest[chosen], rig.tails[chosen]).rest_local
        same = rig.parents[chosen] == np.where(parents >= 0, chosen[np.maximum(parents, 0)], -1)
        local = np.where(same[:, None, None], rig.rest_local[chosen], derived)
    small = Rig([rig.names[j] for j in chosen], parents, rig.rest[chosen], rig.tails[chosen],
                rig.deform[chosen], None, local)
    if small.names[small.main_root] != rig.names[rig.main_root]:  # another root's tree kept more bones
        raise RigError(f"Kirin works on at most {limit} bones of a rig, and those of this one would not keep "
                       f"{rig.names[rig.main_root]!r} as its main root: parent the other roots' bones to it.")
    return RigReduction(rig, chosen, small, anchor)


def _leaf_loss(rig: Rig) -> np.ndarray:
    """(J,) body sizes: what riding rigidly on its parent loses of a bone and everything below it —
    the lesser of their reach (the farthest head or tail from the bone's own head: a face bone's is
    its own short length) and their overhang (the farthest from the parent's head–tail segment: a
    twist bone lying along its limb overhangs nothing). A finger has both, the jaw more."""
    inside = np.eye(rig.joint_count, dtype=bool)
    for j in rig.topological_order[::-1]:
        parent = rig.parents[j]
        if parent >= 0:
            inside[parent] |= inside[j]
    points = np.concatenate([rig.heads, rig.tails])
    loss = np.zeros(rig.joint_count)
    for j in range(rig.joint_count):
        held = points[np.concatenate([inside[j], inside[j]])]
        reach = np.linalg.norm(held - rig.heads[j], axis=-1).max()
        parent = rig.parents[j]
        a = rig.heads[parent if parent >= 0 else j]
        ab = (rig.tails[parent] if parent >= 0 else a) - a
        s = np.clip((held - a) @ ab / max(float(ab @ ab), 1e-24), 0.0, 1.0)
        loss[j] = min(reach, np.linalg.norm(held - (a + s[:, None] * ab), axis=-1).max())
    return loss / max(rig.body_size, 1e-12)


def _choose(rig: Rig, limit: int, must: np.ndarray) -> np.ndarray:
    """(J,) bool: the bones kept, dropped greedily by cost (see the module docstring)."""
    count = rig.joint_count
    protected = np.zeros(count, bool)  # never dropped nor merged
    protected[rig.main_root] = True
    protected[must[(must >= 0) & (must < count)]] = True
    needed = protected.copy()  # the protected bones and their ancestors: never dropped as leaves
    for j in rig.topological_order[::-1]:
        if needed[j] and rig.parents[j] >= 0:
            needed[rig.parents[j]] = True
    mirror = np.arange(count)
    for a, b in rig.mirror_pairs:
        mirror[a], mirror[b] = b, a
    leaf_cost = LEAF_FACTOR * _leaf_loss(rig)
    size = max(rig.body_size, 1e-12)
    kept = np.ones(count, bool)
    while kept.sum() > limit:
        up = _kept_parent(rig, kept)
        children = np.bincount(up[kept & (up >= 0)], minlength=count)
        cost = np.full(count, np.inf)
        leaves = kept & (children == 0) & ~needed
        cost[leaves] = leaf_cost[leaves]
        chain = np.flatnonzero(kept & (children == 1) & ~protected & (up >= 0))
        below = np.full(count, -1, np.int64)  # a chain bone's one kept child
        has_up = np.flatnonzero(kept & (up >= 0))
        below[up[has_up]] = has_up
        inward = np.linalg.norm(rig.heads[chain] - rig.heads[up[chain]], axis=-1)
        # Its own length where longer: a head whose jaw hangs near its own head still turns the skull.
        outward = np.maximum(np.linalg.norm(rig.heads[below[chain]] - rig.heads[chain], axis=-1),
                             rig.lengths[chain])
        cost[chain] = (inward + outward) / size
        best = int(np.argmin(cost))
        if not np.isfinite(cost[best]):
            break  # only protected bones left: the caller's own list is longer than the limit
        kept[best] = False
        twin = mirror[best]
        if twin != best and kept[twin] and np.isclose(cost[twin], cost[best], rtol=1e-3, atol=1e-9):
            kept[twin] = False
    return kept


def _kept_parent(rig: Rig, kept: np.ndarray) -> np.ndarray:
    """(J,) each bone's nearest kept strict ancestor (-1: none)."""
    up = np.full(rig.joint_count, -1, np.int64)
    for j in rig.topological_order:
        parent = rig.parents[j]
        if parent >= 0:
            up[j] = parent if kept[parent] else up[parent]
    return up
