"""The canonical frame: +Z up, facing −Y, the creature's left on +X, unit body size.

A `CanonicalFrame` is the similarity x_c = scale · R · (x − origin) from a rig's *armature
space* into that frame: R is a proper rotation, `scale` makes the body size 1 (the largest extent
of the rest heads and tails) and `origin` is the main root's projection onto the floor (the
lowest rest joint, or the mesh's lowest vertex when a mesh is given).

`detect_canonical_frame` chooses R among the 24 axis-aligned orientations. Each hypothesis (up u,
forward f, left l = u × f) gets a weighted sum of cues computed from the rest pose alone, in the
rig's own axes, so that the choice follows the rig however it is turned, scaled or placed:

* side names — joints named left/right (".L", "Left", "_R_" …) lie towards the creature's left;
* mirror symmetry — the lateral axis is the one across which the joints mirror onto themselves
  (flat rigs and straight chains mirror trivially and say nothing);
* ground — standing, two or more separate legs touch the lowest plane, spread apart, with the
  centre of mass lifted above and over them, and more legs beat fewer (a dog on four feet, not on
  its hind legs and tail); a snake lies on it. Heads, faces, tails, fingers, wings and trunk
  joints ("Spine", "Hips", "Body") are never legs, so a rig on its face, back or tail gets none
  of this credit;
* foot names — feet, toes, paws, hooves and leg IK targets are the lowest joints, the rest of the
  body well above them;
* hanging limbs — legs hang down from hips and shoulders: the share of limb length pointing down;
* head and tail — the face (jaw, mouth, nose, beak …) or head leads the tail end (or the root),
  or, on a creature standing on two legs, tops it; "front"/"hind" limb names agree;
* toes — toes reach forward of the ankle;
* high front — a standing horizontal body (a quadruped) holds its head end above its tail end.

A small prior for the Blender convention (world +Z up, −Y forward) only breaks ties: it decides
for rigs without the evidence (an unnamed fish spine, a bare cylinder), and
`CanonicalFrame.confidence` — the evidence margin over the runner-up — says when it may have
(`CanonicalFrame.guessed`). Rigs read from a +Y-up file outside Blender (glTF, most BVH) should
pass `Y_UP_TO_Z_UP` as `world_matrix`, so that the prior knows which way is up.

The engine never imports bpy; this module uses numpy only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .rig import Rig, mirror_name, side_of
from .rotations import axis_rotations

AXIS_NAMES = ("+X", "-X", "+Y", "-Y", "+Z", "-Z")

# glTF and most BVH files are +Y up, facing +Z: this is how Blender's importers turn them (+Y → +Z,
# +Z → −Y). Pass it as `world_matrix` for such a rig read from a file, outside Blender.
Y_UP_TO_Z_UP = np.array([
    [1.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, -1.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 1.0],
])
Y_UP_TO_Z_UP.flags.writeable = False

# Weights of the evidence (each cue scores in [−1, 1] or [0, 1] before weighting).
W_SIDE_NAMES = 3.0
W_SYMMETRY = 2.0
W_GROUND = 2.0
W_FOOT_NAMES = 1.5
W_HANGING = 1.5
W_HEAD_TAIL = 1.5
W_TOES = 0.75
W_HIGH_FRONT = 0.75
# The prior: up along world +Z, forward along world −Y. Its largest effect on a comparison is
# PRIOR_SPAN, so evidence margins above that can never be overturned by it.
W_PRIOR_UP = 0.25
W_PRIOR_FORWARD = 0.125
PRIOR_SPAN = W_PRIOR_UP + W_PRIOR_FORWARD

_CONTACT = 0.03  # body sizes: a joint this close to the lowest plane touches the ground
_REACH = 0.08  # body sizes: legs touch fully up to _CONTACT above the floor, not at all from here
_THIN = 0.08  # body sizes: a rig flatter than this along an axis is trivially symmetric across it
_CONTROL_NAME = re.compile(r"pole|target", re.IGNORECASE)  # IK pole / aim targets float off the body
_WORDS = {
    "face": ("jaw", "mouth", "nose", "nostril", "snout", "muzzle", "beak", "tongue", "teeth", "tooth",
             "lip", "chin", "eye", "brow", "cheek", "face", "fang", "tusk", "pincer", "mandible"),
    "head": ("head", "neck", "skull", "ear", "horn", "antenna"),
    "tail": ("tail",),
    "finger": ("finger", "index", "thumb", "pinky", "middle", "ring", "palm", "knuckle"),
    "wing": ("wing", "fin", "flipper", "feather"),
    "foot": ("foot", "feet", "toe", "paw", "hoof", "heel", "sole", "claw"),
    "trunk": ("body", "spine", "pelvis", "torso", "abdomen", "chest", "root", "hip", "back", "belly",
              "waist"),
}
_LIMB_WORDS = ("leg", "foot", "feet", "paw", "shoulder", "thigh", "hip", "knee", "ankle", "hoof", "limb")


def axis_vector(name: str) -> np.ndarray:
    """Unit vector of an axis label: "+X", "-Y", "Z" (= "+Z") …"""
    label = str(name).strip().upper()
    if label in ("X", "Y", "Z"):
        label = "+" + label
    if label not in AXIS_NAMES:
        raise ValueError(f"Unknown axis {name!r}; use one of {', '.join(AXIS_NAMES)}.")
    vector = np.zeros(3)
    vector["XYZ".index(label[1])] = 1.0 if label[0] == "+" else -1.0
    return vector


def axis_name(vector: np.ndarray) -> str:
    """Label of the signed coordinate axis nearest to a vector (inverse of `axis_vector`)."""
    k = int(np.argmax(np.abs(vector)))
    return ("+" if vector[k] > 0 else "-") + "XYZ"[k]


@dataclass(frozen=True, eq=False)
class CanonicalFrame:
    """x_c = scale · rotation · (x − origin) for x in armature space.

    `up_axis` / `forward_axis` name the rig's up and forward in world axes (the armature's axes
    after its world matrix; armature axes when there is none). `confidence` is the evidence margin
    of the chosen orientation over the best other one (inf when overrides fixed it); `notes` lists
    the evidence behind the choice.
    """

    rotation: np.ndarray  # (3,3) proper rotation, armature axes -> canonical axes
    scale: float  # canonical units per armature unit (1 / body size)
    origin: np.ndarray  # (3,) armature-space point that maps to the canonical origin
    up_axis: str = "+Z"
    forward_axis: str = "-Y"
    confidence: float = float("inf")
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        rotation = np.array(self.rotation, dtype=np.float64).reshape(3, 3)
        origin = np.array(self.origin, dtype=np.float64).reshape(3)
        rotation.flags.writeable = False
        origin.flags.writeable = False
        object.__setattr__(self, "rotation", rotation)
        object.__setattr__(self, "origin", origin)
        object.__setattr__(self, "scale", float(self.scale))

    @property
    def guessed(self) -> bool:
        """True when the evidence was too weak and the Blender-convention prior may have decided."""
        return self.confidence <= PRIOR_SPAN

    def matrix(self) -> np.ndarray:
        """4x4 similarity from armature space to the canonical frame."""
        out = np.eye(4)
        out[:3, :3] = self.scale * self.rotation
        out[:3, 3] = -self.scale * (self.rotation @ self.origin)
        return out

    def inverse_matrix(self) -> np.ndarray:
        """4x4 similarity from the canonical frame back to armature space."""
        out = np.eye(4)
        out[:3, :3] = self.rotation.T / self.scale
        out[:3, 3] = self.origin
        return out

    def to_canonical_points(self, points: np.ndarray) -> np.ndarray:
        """Armature-space points (…,3) in the canonical frame."""
        points = np.asarray(points, dtype=np.float64)
        return self.scale * ((points - self.origin) @ self.rotation.T)

    def from_canonical_points(self, points: np.ndarray) -> np.ndarray:
        """Canonical points (…,3) back in armature space."""
        points = np.asarray(points, dtype=np.float64)
        return (points @ self.rotation) / self.scale + self.origin

    def to_canonical_rotations(self, rotations: np.ndarray) -> np.ndarray:
        """Armature-space rotations (world deltas, …,3,3) in canonical axes: Rc · R · Rcᵀ."""
        rotations = np.asarray(rotations, dtype=np.float64)
        return self.rotation @ rotations @ self.rotation.T

    def from_canonical_rotations(self, rotations: np.ndarray) -> np.ndarray:
        """Canonical rotations (…,3,3) back in armature axes: Rcᵀ · R · Rc."""
        rotations = np.asarray(rotations, dtype=np.float64)
        return self.rotation.T @ rotations @ self.rotation


# ---------------------------------------------------------------------------- axes
_PROPER_PERMUTATIONS = axis_rotations()
_AXES = [axis_vector(n) for n in AXIS_NAMES]


@dataclass(frozen=True)
class _Hypothesis:
    up_name: str
    forward_name: str
    up: np.ndarray
    forward: np.ndarray
    left: np.ndarray
    lateral: int  # index of the left axis
    up_index: int  # index of `up` in AXIS_NAMES
    prior: float


def _hypotheses() -> list[_Hypothesis]:
    """The 24 (up, forward) pairs of perpendicular signed axes, with the Blender prior of each."""
    out = []
    for a, up in enumerate(_AXES):
        for b, forward in enumerate(_AXES):
            if a // 2 == b // 2:
                continue
            left = np.cross(up, forward)
            prior = W_PRIOR_UP * float(up[2] > 0.5) + W_PRIOR_FORWARD * float(forward[1] < -0.5)
            out.append(_Hypothesis(AXIS_NAMES[a], AXIS_NAMES[b], up, forward, left,
                                   int(np.argmax(np.abs(left))), a, prior))
    return out


_HYPOTHESES = _hypotheses()


def _world_rotation(world_matrix: np.ndarray | None) -> np.ndarray:
    """The proper rotation of an object matrix (its scale removed)."""
    if world_matrix is None:
        return np.eye(3)
    linear = np.asarray(world_matrix, dtype=np.float64)[:3, :3]
    if not np.all(np.isfinite(linear)) or np.linalg.det(linear) <= 0:
        raise ValueError("The armature's world matrix is singular or mirrored (negative scale).")
    u, _, vt = np.linalg.svd(linear)
    return u @ vt


def _nearest_axes(rotation: np.ndarray) -> np.ndarray:
    """The axis permutation nearest to a rotation: which world axis each armature axis plays."""
    scores = [float(np.sum(p * rotation)) for p in _PROPER_PERMUTATIONS]
    return _PROPER_PERMUTATIONS[int(np.argmax(scores))]


def _frame_rows(up: np.ndarray, forward: np.ndarray) -> np.ndarray:
    """Rotation whose rows are the canonical axes (left, back, up) in source coordinates."""
    return np.stack([np.cross(up, forward), -forward, up])


# ---------------------------------------------------------------------------- names
def _tokens(name: str) -> list[str]:
    """Lower-case words of a bone name, split at separators, digits and camelCase humps."""
    return [t.lower() for t in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+", name)]


def _has_word(tokens: list[str], words: tuple[str, ...]) -> bool:
    # Prefixes keep plurals and compounds ("Eyelid", "HeadTop", "Toes") without matching "forearm".
    return any(t.startswith(words) for t in tokens)


@lru_cache(maxsize=4096)
def _name_info(name: str) -> tuple[dict[str, bool], int, int, str | None]:
    """What a bone name says: word classes, front (+1) / hind (−1) limb, side (−1 left, +1 right)
    and the mirror-side name. Cached: detection runs often on the same rigs."""
    tokens = _tokens(name)
    words = {key: _has_word(tokens, ws) for key, ws in _WORDS.items()}
    limb = _has_word(tokens, _LIMB_WORDS + _WORDS["foot"])
    words["trunk"] = words["trunk"] and not limb  # "Spine", "Hips", but not "BackLeg"
    words["leg_ik"] = "ik" in tokens and _has_word(tokens, ("leg",) + _WORDS["foot"])
    return words, _limb_end(tokens), side_of(name), mirror_name(name)


def _limb_end(tokens: list[str]) -> int:
    """+1 for a front limb ("FrontLeg", "ForeFoot"), −1 for a hind one ("BackLeg"), else 0."""
    for i, t in enumerate(tokens):
        limb_follows = _has_word(tokens[i + 1:], _LIMB_WORDS)
        if t == "front" or (t == "fore" and limb_follows):
            return 1
        if t in ("hind", "rear") or (t == "back" and limb_follows):
            return -1
    return 0


# ---------------------------------------------------------------------------- the body
@dataclass
class _Body:
    """The rig's body joints in normalised coordinates (box centred, unit body size)."""

    rig: Rig
    joints: np.ndarray  # (n,) rig indices of the body joints
    heads: np.ndarray  # (n,3)
    points: np.ndarray  # (2n,3) heads then tails
    parent: np.ndarray  # (n,) row of the nearest body ancestor, −1 for none
    limb: np.ndarray  # (n,) rig index of the top of the unbranched chain holding the joint
    words: dict[str, np.ndarray]  # word class -> (n,) bool
    limb_end: np.ndarray  # (n,) +1 front limb, −1 hind limb, 0
    support: np.ndarray  # (n,) may be a leg: not head, face, tail, finger, wing, trunk or main root
    rests: np.ndarray  # (n,) may lie on the floor: not head, face, finger or wing
    centre: np.ndarray  # (3,) centre of mass, bones weighted by length
    order: np.ndarray  # (n,) rows, parents before children


def _body_joints(rig: Rig) -> np.ndarray:
    """All joints but IK pole targets and aim targets, which riggers park far off the body."""
    keep = np.array([not _CONTROL_NAME.search(n) for n in rig.names])
    return np.flatnonzero(keep) if keep.sum() >= 2 else np.arange(rig.joint_count)


def _limb_top(rig: Rig, joint: int) -> int:
    """The first joint of the unbranched chain holding `joint`: one per leg, tail, finger …"""
    j = joint
    while rig.parents[j] >= 0 and len(rig.children[rig.parents[j]]) == 1:
        j = int(rig.parents[j])
    return j


def _make_body(rig: Rig, heads: np.ndarray, tails: np.ndarray) -> _Body:
    joints = _body_joints(rig)
    points = np.concatenate([heads[joints], tails[joints]])
    low, high = points.min(0), points.max(0)
    size = float(np.max(high - low))
    if not size > 0:
        raise ValueError("The rig has no extent: all its joints are at one point.")
    middle = 0.5 * (low + high)
    points = (points - middle) / size
    count = len(joints)
    body_heads = points[:count]
    rows = {int(j): i for i, j in enumerate(joints)}
    parent = np.full(count, -1, dtype=np.int64)
    for i, j in enumerate(joints):
        p = int(rig.parents[j])
        while p >= 0 and p not in rows:
            p = int(rig.parents[p])
        parent[i] = rows.get(p, -1)
    info = [_name_info(rig.names[j]) for j in joints]
    words = {key: np.array([i[0][key] for i in info], dtype=bool) for key in (*_WORDS, "leg_ik")}
    aloft = words["face"] | words["head"] | words["finger"] | words["wing"]
    support = ~(aloft | words["tail"] | words["trunk"]) & (joints != rig.main_root)
    linked = parent >= 0
    lengths = np.linalg.norm(body_heads[linked] - body_heads[parent[linked]], axis=-1)
    if lengths.sum() > 1e-9:
        middles = 0.5 * (body_heads[linked] + body_heads[parent[linked]])
        centre = (lengths[:, None] * middles).sum(0) / lengths.sum()
    else:
        centre = body_heads.mean(0)
    return _Body(
        rig=rig,
        joints=joints,
        heads=body_heads,
        points=points,
        parent=parent,
        limb=np.array([_limb_top(rig, int(j)) for j in joints], dtype=np.int64),
        words=words,
        limb_end=np.array([i[1] for i in info], dtype=np.int64),
        support=support,
        rests=~aloft,
        centre=centre,
        order=np.argsort(_depths(parent), kind="stable"),
    )


def _depths(parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parent), dtype=np.int64)
    for i in range(len(parent)):
        p = parent[i]
        while p >= 0:
            depth[i] += 1
            p = parent[p]
    return depth


def _highest_below(body: _Body, height: np.ndarray) -> np.ndarray:
    """(n,) the greatest height among each joint and all its body descendants."""
    top = height.copy()
    for i in body.order[::-1]:
        p = body.parent[i]
        if p >= 0:
            top[p] = max(top[p], top[i])
    return top


# ---------------------------------------------------------------------------- evidence
def _side_direction(body: _Body) -> np.ndarray:
    """(3,) unit vector from right-named towards left-named joints (zero when names say nothing)."""
    names = [body.rig.names[j] for j in body.joints]
    info = [_name_info(n) for n in names]
    lookup = {n.lower(): i for i, n in enumerate(names)}
    diffs = []
    for i, (_, _, side, other) in enumerate(info):
        j = lookup.get(other) if other is not None else None
        if j is not None and j != i and side < 0:
            diffs.append(body.heads[i] - body.heads[j])
    if diffs:
        total = np.sum(diffs, axis=0)
    else:  # sides named but not paired ("arm_joint_L__4_" / "arm_joint_R"): compare the groups
        sides = np.array([i[2] for i in info])
        if not (np.any(sides < 0) and np.any(sides > 0)):
            return np.zeros(3)
        total = body.heads[sides < 0].mean(0) - body.heads[sides > 0].mean(0)
    norm = float(np.linalg.norm(total))
    return total / norm if norm > 1e-9 else np.zeros(3)


def _symmetry(points: np.ndarray) -> np.ndarray:
    """(3,) how well the points mirror onto themselves across each axis: 1 exactly, 0 not at all.

    The error is the mean distance from each point to the nearest point of the mirrored set
    (body sizes, each clipped at 0.1); 0.04 and above counts as not symmetric.
    """
    errors = np.zeros(3)
    diff = points[:, None] - points[None]
    total = np.sum(diff**2, axis=-1)
    for k in range(3):
        level = total - diff[..., k] ** 2  # squared distance in the mirror plane
        pair_sum = points[:, None, k] + points[None, :, k]
        centre = float(np.median(points[:, k]))
        for step in range(3):
            dist = level + (pair_sum - 2.0 * centre) ** 2  # |p_i − mirror(p_j)|²
            match = np.argmin(dist, axis=1)
            if step < 2:  # re-centre on the midpoints of matched pairs (the median ignores outliers)
                centre = float(np.median(0.5 * pair_sum[np.arange(len(points)), match]))
        nearest = np.sqrt(dist[np.arange(len(points)), match])
        errors[k] = float(np.mean(np.minimum(nearest, 0.1)))
    quality = np.clip(1.0 - errors / 0.04, 0.0, 1.0)
    # A flat rig mirrors across its own plane trivially, and a straight chain across every plane:
    # that says nothing about its sides.
    thin = np.ptp(points, axis=0) < _THIN
    quality[thin] = 0.0
    return quality if thin.sum() < 2 else np.zeros(3)


def _group_legs(body: _Body, rows: np.ndarray, gap: float = 0.05) -> np.ndarray:
    """Group label of each joint: one limb, or joints closer than `gap` (fingers), is one support."""
    pts = body.heads[rows]
    limbs = body.limb[rows]
    linked = (np.linalg.norm(pts[:, None] - pts[None], axis=-1) < gap) | (limbs[:, None] == limbs[None])
    label = -np.ones(rows.size, dtype=np.int64)
    groups = 0
    for start in range(rows.size):
        if label[start] >= 0:
            continue
        label[start] = groups
        stack = [start]
        while stack:
            i = stack.pop()
            for k in np.flatnonzero(linked[i] & (label < 0)):
                label[k] = groups
                stack.append(int(k))
        groups += 1
    return label


def _ground_scores(body: _Body) -> tuple[np.ndarray, np.ndarray]:
    """Per signed up axis: how plausibly the rig stands (or lies) on its lowest plane, 0..1, and
    on how many separate legs."""
    scores = np.zeros(6)
    leg_counts = np.zeros(6)
    for a, up in enumerate(_AXES):
        axis = a // 2
        height = body.heads @ up
        floor = float(height.min())
        touching = height - floor <= _CONTACT
        # Legs touch by degrees: rest poses hold a foot a little up, rigs are not exact. A leg
        # stands on its end: a joint whose bones rise on beyond it (an elbow, a lying thigh) is
        # not a foot.
        close = np.clip((_REACH - (height - floor)) / (_REACH - _CONTACT), 0.0, 1.0)
        ends = _highest_below(body, height) - floor <= _REACH
        feet = np.flatnonzero((close > 0.0) & body.support & ends)
        legs = 0.0
        if feet.size:
            label = _group_legs(body, feet)
            legs = float(sum(close[feet[label == g]].max() for g in range(label.max() + 1)))
        leg_counts[a] = legs
        reached = touching.copy()
        reached[feet] = True
        flat = np.delete(body.heads[reached], axis, axis=1)
        centre = np.delete(body.centre, axis)
        low, high = flat.min(0), flat.max(0)
        spread = float(np.linalg.norm(high - low))
        outside = float(np.linalg.norm(np.maximum(0.0, np.maximum(low - centre, centre - high))))
        elevation = float(body.centre @ up) - floor
        relative = elevation / max(float(height.max()) - floor, 1e-9)
        lifted = min(elevation / 0.1, 1.0) * min(relative / 0.3, 1.0)
        two = float(np.clip(legs - 1.0, 0.0, 1.0))  # at least two legs, or there is no stance
        standing = two * min(legs, 4.0) / 4.0 * min(spread / 0.1, 1.0) * lifted
        # Lying needs a long body (a snake) mostly on the floor: a fish's arched back is not that.
        resting = int(np.sum(touching & body.rests))
        share = resting / max(int(body.rests.sum()), 1)
        lying = 0.3 * float(np.clip((share - 0.3) / 0.4, 0.0, 1.0)) if resting >= 5 else 0.0
        # Rest poses are not balanced exactly (arms held forward): only a centre well outside
        # the footprint counts against a stance.
        balance = 1.0 - float(np.clip((outside - 0.15) / 0.25, 0.0, 1.0))
        scores[a] = max(standing, lying) * balance
    return scores, leg_counts


def _foot_lift(body: _Body) -> np.ndarray:
    """(6,) per signed up axis: how far the body stands above its foot-named joints, −1..1.

    Feet, toes, paws, hooves — and leg IK targets, which riggers put on the floor — are the lowest
    joints of a standing creature, the rest of the body well above; lying, the body is as low as
    the feet; upside down, below them. 0 when no joint is so named.
    """
    feet = body.words["foot"] | body.words["leg_ik"]
    out = np.zeros(6)
    if feet.any() and not feet.all():
        for a, up in enumerate(_AXES):
            height = body.heads @ up
            out[a] = float(np.clip((height[~feet].mean() - height[feet].mean()) / 0.4, -1.0, 1.0))
    return out


def _hanging(body: _Body) -> np.ndarray:
    """(6,) per signed up axis: the share of limb length that points down, 0..1.

    Limbs are the unbranched chains that end in a leaf, measured from their first joint (a hip, a
    shoulder) to their last; heads, tails and wings are left out, as they rise, droop or trail
    whichever way is up. A lone chain (a fish's spine, a cylinder) has no limbs to hang.
    """
    rows = {int(j): i for i, j in enumerate(body.joints)}
    limbs = body.support | body.words["finger"]
    vectors = []
    for leaf in body.rig.end_effectors:
        i = rows.get(int(leaf))
        if i is None or not limbs[i]:
            continue
        start = int(body.limb[i])
        if start == int(leaf):  # a one-bone limb starts at its parent
            start = int(body.rig.parents[start])
        if start < 0 or start not in rows:
            continue
        vectors.append(body.heads[i] - body.heads[rows[start]])
    out = np.zeros(6)
    if len(vectors) < 2:
        return out
    vectors = np.array(vectors)
    total = float(np.linalg.norm(vectors, axis=-1).sum())
    if total > 1e-9:
        for a, up in enumerate(_AXES):
            out[a] = float(np.maximum(0.0, -(vectors @ up)).sum()) / total
    return out


def _head_tail(body: _Body) -> np.ndarray:
    """(3,) face (or head) centroid minus tail centroid (or the main root), plus front minus hind."""
    words = body.words
    tip = words["face"] if words["face"].any() else words["head"]
    direction = np.zeros(3)
    if tip.any():
        if words["tail"].any():
            anchor = body.heads[words["tail"]].mean(0)
        else:
            root = np.flatnonzero(body.joints == body.rig.main_root)
            anchor = body.heads[root[0]] if root.size else body.centre
        direction += body.heads[tip].mean(0) - anchor
    front, hind = body.limb_end > 0, body.limb_end < 0
    if front.any() and hind.any():
        direction += body.heads[front].mean(0) - body.heads[hind].mean(0)
    return direction


def _toe_directions(body: _Body) -> np.ndarray:
    """(6,3) per signed up axis: mean level offset of the floor joints from their ankles.

    Toes reach forward of the ankle. Offsets are weighted by how steeply the ankle rises above the
    toe, so that a leg lying along the floor (a wrong up) does not pass for a foot.
    """
    out = np.zeros((6, 3))
    for a, up in enumerate(_AXES):
        height = body.heads @ up
        floor = float(height.min())
        total, count = np.zeros(3), 0
        for i in np.flatnonzero((height - floor <= _CONTACT) & body.support):
            p = body.parent[i]
            while p >= 0 and height[p] - floor <= _CONTACT:
                p = body.parent[p]
            if p < 0 or height[p] - floor > 0.35:
                continue
            offset = body.heads[i] - body.heads[p]
            rise = -float(offset @ up)
            level = offset + rise * up
            total += min(rise / max(float(np.linalg.norm(level)), 1e-9), 1.0) * level
            count += 1
        out[a] = total / max(count, 1)
    return out


def _end_heights(body: _Body, hypothesis: _Hypothesis) -> float:
    """How much higher the front end of a horizontal body is than its back end, −1..1.

    A quadruped's head end (neck raised) stands above its tail end. Upright bodies (longer along
    up than along forward, like a biped, whose front end is its toes) are left out.
    """
    height = body.heads @ hypothesis.up
    ahead = body.heads @ hypothesis.forward
    length, tall = float(np.ptp(ahead)), float(np.ptp(height))
    horizontal = float(np.clip(2.0 * length / max(tall, 1e-9) - 1.0, 0.0, 1.0))
    if horizontal == 0.0:
        return 0.0
    front = ahead >= ahead.max() - 0.15
    back = ahead <= ahead.min() + 0.15
    return horizontal * float(np.clip((height[front].mean() - height[back].mean()) / 0.1, -1.0, 1.0))


@dataclass
class _Evidence:
    side: np.ndarray  # (3,) unit vector towards left-named joints, or zero
    symmetry: np.ndarray  # (3,) mirror symmetry across each axis, 0..1
    ground: np.ndarray  # (6,) standing / lying plausibility per signed up axis, 0..1
    legs: np.ndarray  # (6,) separate legs on the floor per signed up axis (partly touching: < 1)
    foot_lift: np.ndarray  # (6,) body height above foot-named joints per signed up axis, −1..1
    hanging: np.ndarray  # (6,) share of limb length pointing down per signed up axis, 0..1
    head_tail: np.ndarray  # (3,) head end minus tail end, body sizes
    toes: np.ndarray  # (6,3) toe minus ankle per signed up axis, body sizes
    high_front: np.ndarray  # (24,) front end above back end per hypothesis, −1..1


def _gather(rig: Rig, heads: np.ndarray, tails: np.ndarray) -> _Evidence:
    body = _make_body(rig, heads, tails)
    ground, legs = _ground_scores(body)
    return _Evidence(
        side=_side_direction(body),
        symmetry=_symmetry(body.points),
        ground=ground,
        legs=legs,
        foot_lift=_foot_lift(body),
        hanging=_hanging(body),
        head_tail=_head_tail(body),
        toes=_toe_directions(body),
        high_front=np.array([_end_heights(body, h) for h in _HYPOTHESES]),
    )


def _score(evidence: _Evidence, index: int) -> dict[str, float]:
    """The weighted evidence for one (up, forward) hypothesis, cue by cue."""
    hypothesis = _HYPOTHESES[index]
    up, forward, left, a = hypothesis.up, hypothesis.forward, hypothesis.left, hypothesis.up_index
    quality, lateral = evidence.symmetry, hypothesis.lateral
    # How much better the lateral axis mirrors than the best other axis.
    symmetry = float(quality[lateral] - max(quality[k] for k in range(3) if k != lateral))
    # The head leads the body (quadrupeds, fish) or, on a creature standing on two legs, tops it
    # (bipeds); behind and below it is wrong. Standing shows in the ground, the hanging legs or
    # the feet below the body.
    upright = 0.0
    if evidence.legs[a] <= 2.5:
        upright = max(float(evidence.ground[a]), float(evidence.hanging[a]), float(evidence.foot_lift[a]))
    head = max(float(evidence.head_tail @ forward), upright * float(evidence.head_tail @ up))
    return {
        "side": W_SIDE_NAMES * float(evidence.side @ left),
        "symmetry": W_SYMMETRY * symmetry,
        "ground": W_GROUND * float(evidence.ground[a]),
        "foot_lift": W_FOOT_NAMES * float(evidence.foot_lift[a]),
        "hanging": W_HANGING * float(evidence.hanging[a]),
        "head_tail": W_HEAD_TAIL * float(np.clip(head / 0.3, -1.0, 1.0)),
        "toes": W_TOES * float(np.clip((evidence.toes[a] @ forward) / 0.05, -1.0, 1.0)),
        # Only for a body standing on its legs: a fish's tail may curl up or down.
        "high_front": W_HIGH_FRONT * float(evidence.ground[a] * evidence.high_front[index]),
    }


def _override(value: str | None) -> np.ndarray | None:
    if value is None or str(value).strip().upper() in ("", "AUTO"):
        return None
    return axis_vector(value)


def rank_orientations(
    rig: Rig,
    world_matrix: np.ndarray | None = None,
    up: str | None = None,
    forward: str | None = None,
) -> list[tuple[str, str, float, dict[str, float]]]:
    """Every allowed (up, forward) in world axes with its evidence score and the cues behind it,
    best first (ties broken by the Blender-convention prior): what detection chose from."""
    relabel = _nearest_axes(_world_rotation(world_matrix))
    up_fixed, forward_fixed = _override(up), _override(forward)
    if up_fixed is not None and forward_fixed is not None and abs(float(up_fixed @ forward_fixed)) > 0.5:
        raise ValueError(f"Up {up} and forward {forward} must be perpendicular axes.")
    evidence = _gather(rig, rig.heads @ relabel.T, rig.tails @ relabel.T)
    ranked = []
    for index, h in enumerate(_HYPOTHESES):
        if (up_fixed is not None and not np.array_equal(h.up, up_fixed)) or (
                forward_fixed is not None and not np.array_equal(h.forward, forward_fixed)):
            continue
        parts = _score(evidence, index)
        ranked.append((h.up_name, h.forward_name, sum(parts.values()), parts, h.prior))
    ranked.sort(key=lambda item: -(item[2] + item[4]))
    return [item[:4] for item in ranked]


def detect_canonical_frame(
    rig: Rig,
    world_matrix: np.ndarray | None = None,
    up: str | None = None,
    forward: str | None = None,
    mesh_vertices: np.ndarray | None = None,
) -> CanonicalFrame:
    """Detect the canonical frame of a rig at rest (the module docstring lists the evidence).

    `world_matrix` is the armature object's 4x4 matrix (rotation × uniform scale + translation;
    None = identity). Detection reasons in world axes — the prior is world +Z up, and the `up` /
    `forward` overrides ("+X" … "-Z"; None or "AUTO" to detect) name world axes and are obeyed
    exactly — but the frame returned maps *armature-space* coordinates: the world matrix is folded
    in. The candidate axes are the armature's own axes, each named after the world axis it lies
    nearest to, so the frame follows the rig even on an object turned off-axis in the scene; for
    an axis-aligned object (the usual case: a glTF import is turned 90° about X) the names are the
    exact world axes. The world matrix's scale and translation cancel out (unit body size, origin
    on the rig). A mirrored or singular world matrix, an unknown axis or an up not perpendicular
    to forward raise ValueError.

    `mesh_vertices` (N,3), optional, in armature space: the skinned mesh at rest. It sets the floor
    (hence the origin), since soles lie below the ankle joints. The orientation comes from the
    joints alone: bellies, wings and hair made the ground cue worse, not better, in trials.

    Body size is the largest extent of the rest heads and tails along the canonical axes; IK pole
    and aim targets ("pole", "target" in the name), which float off the body, are left out.
    """
    ranked = rank_orientations(rig, world_matrix, up, forward)
    up_label, forward_label, score, parts = ranked[0]
    confidence = float("inf") if len(ranked) == 1 else score - max(item[2] for item in ranked[1:])

    relabel = _nearest_axes(_world_rotation(world_matrix))
    rotation = _frame_rows(axis_vector(up_label), axis_vector(forward_label)) @ relabel
    up_armature = rotation[2]
    joints = _body_joints(rig)
    body = np.concatenate([rig.heads[joints], rig.tails[joints]])
    canonical = body @ rotation.T
    body_size = float(np.max(canonical.max(0) - canonical.min(0)))
    if mesh_vertices is not None and len(np.asarray(mesh_vertices).reshape(-1, 3)):
        floor = float(np.min(np.asarray(mesh_vertices, dtype=np.float64).reshape(-1, 3) @ up_armature))
    else:
        floor = float(np.min(body @ up_armature))
    root = rig.heads[rig.main_root]
    origin = root - (float(root @ up_armature) - floor) * up_armature
    notes = tuple(f"{k}={v:+.2f}" for k, v in parts.items() if abs(v) >= 0.005)
    return CanonicalFrame(rotation, 1.0 / body_size, origin, up_label, forward_label, confidence, notes)
