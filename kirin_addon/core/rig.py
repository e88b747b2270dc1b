"""The one rig model: joint names, parents, rest transforms and everything derived from them.

Rest transforms are 4x4 rigid matrices in *armature space* (Blender's `bone.matrix_local`):
rotation columns are the bone's axes (Y along the bone), translation is the bone head.
Joint order is whatever the source had; `topological_order` gives a parents-first order.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .rotations import (
    compose,
    invert_rigid,
    quat_from_axis_angle,
    quat_multiply,
    quat_to_matrix,
    rotation_between,
)

MAX_JOINTS = 256

EDGE_SELF, EDGE_PARENT, EDGE_CHILD, EDGE_SIBLING, EDGE_OTHER = range(5)

_SIDE_PATTERNS = [
    # (regex, replacement for the mirror side) on lower-cased names; order matters.
    (r"left", "right"),
    (r"right", "left"),
    (r"(?<![a-z])l(?![a-z])", "r"),
    (r"(?<![a-z])r(?![a-z])", "l"),
]


class RigError(ValueError):
    """A rig that Kirin cannot work with; the message is shown to the user as is."""


def mirror_name(name: str) -> str | None:
    """The name of the opposite-side joint by the usual conventions, or None if unsided."""
    low = name.lower()
    for pattern, repl in _SIDE_PATTERNS:
        if re.search(pattern, low):
            return re.sub(pattern, repl, low, count=1)
    return None


def side_of(name: str) -> int:
    """-1 for a left-named joint, +1 for right, 0 when the name says nothing."""
    low = name.lower()
    if "left" in low or re.search(r"(?<![a-z])l(?![a-z])", low):
        return -1
    if "right" in low or re.search(r"(?<![a-z])r(?![a-z])", low):
        return 1
    return 0


@dataclass
class Rig:
    names: list[str]
    parents: np.ndarray
    rest: np.ndarray
    tails: np.ndarray
    deform: np.ndarray = field(default=None)  # type: ignore[assignment]
    connected: np.ndarray = field(default=None)  # type: ignore[assignment]
    # Parent-relative rest transforms exactly as the host stores them (Blender keeps its own
    # float32 copy); derived from `rest` when absent.
    local_rest: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.names = [str(n) for n in self.names]
        self.parents = np.asarray(self.parents, dtype=np.int64)
        self.rest = np.asarray(self.rest, dtype=np.float64)
        self.tails = np.asarray(self.tails, dtype=np.float64)
        count = len(self.names)
        if self.deform is None:
            self.deform = np.ones(count, dtype=bool)
        if self.connected is None:
            # Connected = the head sits on the parent's tail (what Blender's use_connect means).
            has_parent = self.parents >= 0
            gap = np.linalg.norm(self.tails[np.maximum(self.parents, 0)] - self.rest[:, :3, 3], axis=-1)
            self.connected = has_parent & (gap <= 1e-6 * max(self.body_size, 1e-12))
        self.deform = np.asarray(self.deform, dtype=bool)
        self.connected = np.asarray(self.connected, dtype=bool)

    # ----------------------------------------------------------------- validation
    def validate(self, max_joints: int = MAX_JOINTS, min_length: float = 1e-6) -> None:
        """Raise RigError with a user-facing message when the rig cannot be animated."""
        count = len(self.names)
        if count == 0:
            raise RigError("The armature has no bones.")
        if count > max_joints:
            raise RigError(f"The armature has {count} bones; Kirin handles at most {max_joints}.")
        if len(set(self.names)) != count:
            raise RigError("Bone names must be unique.")
        shapes = {
            "parents": (self.parents.shape, (count,)),
            "rest": (self.rest.shape, (count, 4, 4)),
            "tails": (self.tails.shape, (count, 3)),
        }
        for what, (got, want) in shapes.items():
            if got != want:
                raise RigError(f"Rig {what} has shape {got}, expected {want}.")
        if np.any(self.parents >= count) or np.any(self.parents < -1):
            raise RigError("A bone's parent index is out of range.")
        _ = self.topological_order  # raises on cycles
        if not np.all(np.isfinite(self.rest)) or not np.all(np.isfinite(self.tails)):
            raise RigError("The rest pose contains NaN or infinite values.")
        short = np.flatnonzero(self.lengths <= min_length * max(self.body_size, 1e-9))
        if short.size:
            listed = ", ".join(self.names[i] for i in short[:5])
            raise RigError(f"Zero-length bones: {listed}{' …' if short.size > 5 else ''}.")

    # ----------------------------------------------------------------- structure
    @property
    def joint_count(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        return self.names.index(name)

    @cached_property
    def roots(self) -> np.ndarray:
        return np.flatnonzero(self.parents < 0)

    @cached_property
    def main_root(self) -> int:
        """The root carrying the trajectory: the one with the most descendants."""
        sizes = [self.descendant_count[r] for r in self.roots]
        return int(self.roots[int(np.argmax(sizes))])

    @cached_property
    def children(self) -> list[list[int]]:
        kids: list[list[int]] = [[] for _ in self.names]
        for j, p in enumerate(self.parents):
            if p >= 0:
                kids[p].append(j)
        return kids

    @cached_property
    def topological_order(self) -> np.ndarray:
        order: list[int] = []
        stack = [int(r) for r in reversed(self.roots)]
        while stack:
            j = stack.pop()
            order.append(j)
            stack.extend(reversed(self.children[j]))
        if len(order) != self.joint_count:
            raise RigError("The bone hierarchy has a cycle.")
        return np.asarray(order, dtype=np.int64)

    @cached_property
    def depth(self) -> np.ndarray:
        depth = np.zeros(self.joint_count, dtype=np.int64)
        for j in self.topological_order:
            p = self.parents[j]
            depth[j] = 0 if p < 0 else depth[p] + 1
        return depth

    @cached_property
    def levels(self) -> list[np.ndarray]:
        """Joints grouped by depth, for vectorised forward kinematics."""
        return [np.flatnonzero(self.depth == d) for d in range(int(self.depth.max()) + 1)]

    @cached_property
    def descendant_count(self) -> np.ndarray:
        count = np.zeros(self.joint_count, dtype=np.int64)
        for j in self.topological_order[::-1]:
            p = self.parents[j]
            if p >= 0:
                count[p] += count[j] + 1
        return count

    def subtree(self, joint: int) -> np.ndarray:
        """(J,) mask of `joint` and every joint below it."""
        inside = np.zeros(self.joint_count, dtype=bool)
        inside[joint] = True
        for j in self.topological_order:
            if self.parents[j] >= 0 and inside[self.parents[j]]:
                inside[j] = True
        return inside

    @cached_property
    def hop_distance(self) -> np.ndarray:
        """(J,J) number of bones between two joints; different root trees are J apart."""
        count = self.joint_count
        dist = np.full((count, count), count, dtype=np.int64)
        adjacency = self.children
        neighbours = [list(adjacency[j]) + ([int(self.parents[j])] if self.parents[j] >= 0 else [])
                      for j in range(count)]
        for start in range(count):
            dist[start, start] = 0
            frontier = [start]
            while frontier:
                nxt = []
                for j in frontier:
                    for k in neighbours[j]:
                        if dist[start, k] == count:
                            dist[start, k] = dist[start, j] + 1
                            nxt.append(k)
                frontier = nxt
        return dist

    @cached_property
    def edge_types(self) -> np.ndarray:
        """(J,J) EDGE_SELF / PARENT / CHILD / SIBLING / OTHER of joint j as seen from joint i."""
        count = self.joint_count
        types = np.full((count, count), EDGE_OTHER, dtype=np.int64)
        idx = np.arange(count)
        has_parent = self.parents >= 0
        types[idx[has_parent], self.parents[has_parent]] = EDGE_PARENT
        types[self.parents[has_parent], idx[has_parent]] = EDGE_CHILD
        same_parent = (self.parents[:, None] == self.parents[None, :]) & has_parent[:, None]
        types[same_parent] = EDGE_SIBLING
        types[idx, idx] = EDGE_SELF
        return types

    @cached_property
    def end_effectors(self) -> np.ndarray:
        return np.asarray([j for j in range(self.joint_count) if not self.children[j]], dtype=np.int64)

    # ----------------------------------------------------------------- geometry
    @property
    def heads(self) -> np.ndarray:
        return self.rest[:, :3, 3]

    @property
    def rest_rotations(self) -> np.ndarray:
        return self.rest[:, :3, :3]

    @cached_property
    def lengths(self) -> np.ndarray:
        return np.linalg.norm(self.tails - self.heads, axis=-1)

    @cached_property
    def rest_local(self) -> np.ndarray:
        """(J,4,4) rest transform of each joint relative to its parent (identity parent for roots)."""
        if self.local_rest is not None:
            return np.asarray(self.local_rest, dtype=np.float64)
        local = self.rest.copy()
        has_parent = self.parents >= 0
        local[has_parent] = invert_rigid(self.rest[self.parents[has_parent]]) @ self.rest[has_parent]
        return local

    @cached_property
    def body_size(self) -> float:
        """Largest side of the bounding box of all heads and tails (the unit of 'body size')."""
        points = np.concatenate([self.heads, self.tails])
        return float(np.max(points.max(0) - points.min(0)))

    def foot_candidates(self, up: np.ndarray | None = None, tolerance: float = 0.1) -> np.ndarray:
        """Joints that touch the ground at rest: the lowest joint of each chain ending near the floor."""
        up = np.array([0.0, 0.0, 1.0]) if up is None else np.asarray(up, dtype=np.float64)
        height = self.heads @ up
        tail_height = self.tails @ up
        floor = min(height.min(), tail_height.min())
        near = tolerance * max(self.body_size, 1e-9)
        feet = []
        for leaf in self.end_effectors:
            chain = [int(leaf)]
            while self.parents[chain[-1]] >= 0 and len(self.children[self.parents[chain[-1]]]) == 1:
                chain.append(int(self.parents[chain[-1]]))
            lowest = min(chain, key=lambda j: height[j])
            if min(height[lowest], tail_height[lowest]) - floor <= near:
                feet.append(lowest)
        return np.asarray(sorted(set(feet)), dtype=np.int64)

    @cached_property
    def mirror_pairs(self) -> list[tuple[int, int]]:
        """Left/right joint pairs: by name where names say it, else by reflected rest position."""
        lookup = {n.lower(): i for i, n in enumerate(self.names)}
        pairs: dict[int, int] = {}
        for i, name in enumerate(self.names):
            other = mirror_name(name)
            if other is not None and other in lookup and lookup[other] != i:
                pairs[i] = lookup[other]
        if not pairs:
            pairs = self._geometric_mirror_pairs()
        return sorted({(min(a, b), max(a, b)) for a, b in pairs.items()})

    def _geometric_mirror_pairs(self) -> dict[int, int]:
        heads = self.heads - self.heads.mean(0)
        best: dict[int, int] = {}
        best_err = np.inf
        size = max(self.body_size, 1e-9)
        for axis in range(3):
            reflected = heads.copy()
            reflected[:, axis] *= -1
            dist = np.linalg.norm(heads[:, None] - reflected[None], axis=-1)
            dist[self.depth[:, None] != self.depth[None, :]] = np.inf
            match = np.argmin(dist, axis=1)
            err = float(np.mean(dist[np.arange(self.joint_count), match])) / size
            if err < best_err:
                best_err = err
                best = {i: int(m) for i, m in enumerate(match)
                        if m != i and match[m] == i and abs(heads[i, axis]) > 0.01 * size}
        return best if best_err < 0.05 else {}

    # ----------------------------------------------------------------- transforms
    def transformed(self, matrix: np.ndarray) -> Rig:
        """The same rig under a similarity transform (rotation * uniform scale + translation)."""
        matrix = np.asarray(matrix, dtype=np.float64)
        linear = matrix[:3, :3]
        scale = float(np.cbrt(np.linalg.det(linear)))
        rotation = linear / scale
        rest = self.rest.copy()
        rest[:, :3, :3] = rotation @ self.rest[:, :3, :3]
        rest[:, :3, 3] = self.heads @ linear.T + matrix[:3, 3]
        tails = self.tails @ linear.T + matrix[:3, 3]
        local = None
        if self.local_rest is not None:
            local = np.array(self.local_rest, dtype=np.float64)
            local[:, :3, 3] *= scale
            local[self.roots] = rest[self.roots]
        return Rig(list(self.names), self.parents.copy(), rest, tails, self.deform.copy(),
                   self.connected.copy(), local)

    def summary(self) -> dict:
        return {
            "joints": self.joint_count,
            "roots": int(self.roots.size),
            "end_effectors": int(self.end_effectors.size),
            "body_size": self.body_size,
        }


def bone_frame(head: np.ndarray, tail: np.ndarray, roll: np.ndarray | float = 0.0) -> np.ndarray:
    """(…,3,3) bone axes with Y along head→tail, like Blender's edit bones (roll about Y)."""
    direction = np.asarray(tail, dtype=np.float64) - np.asarray(head, dtype=np.float64)
    align = rotation_between(np.broadcast_to([0.0, 1.0, 0.0], direction.shape), direction)
    twist = quat_from_axis_angle(np.broadcast_to([0.0, 1.0, 0.0], direction.shape), np.asarray(roll))
    return quat_to_matrix(quat_multiply(align, twist))


def rig_from_bones(
    names: list[str],
    parents: list[int] | np.ndarray,
    heads: np.ndarray,
    tails: np.ndarray,
    rolls: np.ndarray | float = 0.0,
    deform: np.ndarray | None = None,
) -> Rig:
    """Build a Rig from edit-bone style heads, tails and rolls."""
    heads = np.asarray(heads, dtype=np.float64)
    tails = np.asarray(tails, dtype=np.float64)
    rolls = np.broadcast_to(np.asarray(rolls, dtype=np.float64), (len(names),))
    rest = compose(bone_frame(heads, tails, rolls), heads)
    return Rig(list(names), np.asarray(parents, dtype=np.int64), rest, tails, deform)


class RigBuilder:
    """Collects bones by name, parent, head and tail (edit-bone style), then builds the Rig.

    `parent` may be an index, a bone name, or None/-1 for a root; `add` returns the new index.
    """

    def __init__(self) -> None:
        self.names: list[str] = []
        self.parents: list[int] = []
        self.heads: list[np.ndarray] = []
        self.tails: list[np.ndarray] = []

    def add(self, name: str, parent: int | str | None, head, tail) -> int:
        if isinstance(parent, str):
            parent = self.names.index(parent)
        self.names.append(name)
        self.parents.append(-1 if parent is None else int(parent))
        self.heads.append(np.asarray(head, dtype=np.float64))
        self.tails.append(np.asarray(tail, dtype=np.float64))
        return len(self.names) - 1

    def chain(self, prefix: str, parent: int | str | None, points: list) -> list[int]:
        """Bones prefix0, prefix1, … through consecutive points, each the child of the last."""
        out = []
        for k in range(len(points) - 1):
            parent = self.add(f"{prefix}{k}", parent, points[k], points[k + 1])
            out.append(parent)
        return out

    def build(self, rolls: np.ndarray | float = 0.0) -> Rig:
        return rig_from_bones(self.names, self.parents, np.array(self.heads), np.array(self.tails), rolls)


def posed_rig(rig: Rig, pose: np.ndarray) -> Rig:
    """The rig with `pose` (J,4,4 armature-space joint transforms, e.g. one frame's forward kinematics)
    as its rest: a folded zero pose (a CMU BVH's) replaced by a pose that stands."""
    lengths = np.linalg.norm(rig.tails - rig.heads, axis=1)
    tails = pose[:, :3, 3] + pose[:, :3, 1] * lengths[:, None]
    rest = np.array(pose, dtype=np.float64)
    return Rig(list(rig.names), rig.parents.copy(), rest, tails, rig.deform.copy())


def rig_key(rig: Rig) -> str:
    """A rig's identity (names, parents, rest to 1e-6): the feature cache's rigs and the motion bank's
    fits are keyed by it."""
    digest = hashlib.sha1()
    digest.update("|".join(rig.names).encode())
    digest.update(rig.parents.astype(np.int64).tobytes())
    digest.update(np.round(rig.rest, 6).tobytes())
    return digest.hexdigest()
