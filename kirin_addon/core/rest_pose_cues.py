"""What a rig's rest pose says about which way is up and forward: the cues `canonical` weighs.

Side names, mirror symmetry, legs on the ground, foot names, hanging limbs, head and tail, toes and
a raised front end, each measured per signed axis of the rig (`AXES`) from the rest pose alone; see
the `canonical` module docstring for what each cue means. numpy only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .rig import Rig, mirror_name, side_of


def _signed_axis(index: int) -> np.ndarray:
    vector = np.zeros(3)
    vector[index // 2] = -1.0 if index % 2 else 1.0
    return vector


# The six signed axes in the order of `canonical.AXIS_NAMES` (+X, −X, +Y, −Y, +Z, −Z).
AXES = [_signed_axis(index) for index in range(6)]

_CONTACT = 0.03  # body sizes: a joint this close to the lowest plane touches the ground
_REACH = 0.08  # body sizes: legs touch fully up to _CONTACT above the floor, not at all from here
_THIN = 0.08  # body sizes: a rig flatter than this along an axis is trivially symmetric across it
_ON_BODY = 0.05  # body sizes: a control this close to a bone of the body lies on the body
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


def control_joints(rig: Rig) -> np.ndarray:
    """(J,) bool: bones outside the creature's body, read from what deforms, never from names: bones that
    deform nothing, with no deforming bone below them, and that are not the end bone of a deforming
    chain (a short leaf from its parent's tail, as exporters add) — IK and pole targets, props and
    weapons, the ORG-/MCH- copies of a Rigify rig. All False where the rig says nothing of deforming
    (every bone deforms, or none)."""
    deform = np.asarray(rig.deform, dtype=bool)
    control = np.zeros(rig.joint_count, dtype=bool)
    if deform.all() or not deform.any():
        return control
    carries = deform.copy()
    for j in rig.topological_order[::-1]:
        if carries[j] and rig.parents[j] >= 0:
            carries[rig.parents[j]] = True
    size = max(rig.body_size, 1e-12)
    lengths = rig.lengths
    for j in rig.topological_order:
        parent = int(rig.parents[j])
        if carries[j]:
            continue
        # What is left may be an end bone: from the tail of a deforming bone (or of an end bone, which
        # carries nothing either), no longer than it. A bone hanging from a non-deforming bone of the body
        # (a pole target under a root `Body`) is a control.
        if parent < 0 or control[parent] or (carries[parent] and not deform[parent]):
            control[j] = True
            continue
        gap = float(np.linalg.norm(rig.heads[j] - rig.tails[parent]))
        from_tail = gap <= 0.25 * lengths[parent] + 1e-3 * size
        # (Blender's FBX importer makes an `_end` leaf as long as its parent.)
        control[j] = not (from_tail and lengths[j] <= max(1.1 * lengths[parent], 0.05 * size))
    return control


def _off_the_body(rig: Rig, control: np.ndarray) -> np.ndarray:
    """(J,) the controls that lie off the body: head or tail further than _ON_BODY from every bone of
    the body (pole targets in front of the knees, a sword's blade). A control on the body (a foot's IK
    target at the ankle, a Rigify ORG- copy of a bone) shows where the body is as well as its bone."""
    body = np.flatnonzero(~control)
    if not control.any() or body.size == 0:
        return control
    start, end = rig.heads[body], rig.tails[body]
    axis = end - start
    length2 = np.maximum(np.sum(axis**2, axis=1), 1e-18)
    off = np.zeros_like(control)
    limit = _ON_BODY * max(rig.body_size, 1e-12)
    for j in np.flatnonzero(control):
        for point in (rig.heads[j], rig.tails[j]):
            t = np.clip(np.sum((point - start) * axis, axis=1) / length2, 0.0, 1.0)
            gap = np.linalg.norm(start + t[:, None] * axis - point, axis=1).min()
            off[j] |= bool(gap > limit)
    return off


def body_joints(rig: Rig) -> np.ndarray:
    """All joints but the controls that lie off the body (`control_joints`) and, by name, IK pole and
    aim targets, which riggers park far off the body."""
    off = _off_the_body(rig, control_joints(rig))
    # A hint the other way: a control named as a leg's IK target or a foot marks where a foot stands
    # (the spider's `Leg1IK.L` on the floor, under a leg whose tip the file does not give).
    off &= np.array([not (_name_info(n)[0]["leg_ik"] or _name_info(n)[0]["foot"]) for n in rig.names])
    keep = ~off & np.array([not _CONTROL_NAME.search(n) for n in rig.names])
    return np.flatnonzero(keep) if keep.sum() >= 2 else np.arange(rig.joint_count)


def _limb_top(rig: Rig, joint: int) -> int:
    """The first joint of the unbranched chain holding `joint`: one per leg, tail, finger …"""
    j = joint
    while rig.parents[j] >= 0 and len(rig.children[rig.parents[j]]) == 1:
        j = int(rig.parents[j])
    return j


def _make_body(rig: Rig, heads: np.ndarray, tails: np.ndarray) -> _Body:
    joints = body_joints(rig)
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
    # Where names say nothing ("Bone.007"), the shape does: limbs come in pairs, a tail or a neck alone.
    unnamed = ~np.any(np.stack(list(words.values())), axis=0) & np.array([i[1] == 0 == i[2] for i in info])
    unnamed &= np.array([not _has_word(_tokens(rig.names[j]), _LIMB_WORDS) for j in joints])
    paired, digits = _paired(rig, joints, heads, tails)
    support &= ~unnamed | (paired & ~digits)
    words["finger"] |= unnamed & digits
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


def _paired(rig: Rig, joints: np.ndarray, heads: np.ndarray,
            tails: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n,) each body joint lies on a limb that has a twin, and (n,) on a digit. A limb: an unbranched
    chain ending in a leaf; its twin: another with as many bones and about its length (±20 %, through the
    heads from the joint it hangs from: a leaf's tail is often an importer's guess). Legs and
    arms come in pairs; a tail, a neck with its head, a trunk come alone. Digits (fingers, toes): limbs
    three or more to a joint that has a twin itself (a hand, a paw; not a spider's body, which is one).
    Read from the bones alone, whichever way is up."""
    tops = np.array([_limb_top(rig, int(j)) for j in joints])
    chains: dict[int, tuple[int, float]] = {}
    for top in set(tops.tolist()):
        rows = np.flatnonzero(tops == top)
        members = set(joints[rows].tolist())
        if any(c not in members for j in members for c in rig.children[j]):
            continue  # the chain branches below: not a limb's end
        order = rows[np.argsort(rig.depth[joints[rows]])]
        # Through the heads from the joint the limb hangs from: a leaf's tail is often an importer's guess.
        start = int(rig.parents[top])
        points = heads[([start] if start >= 0 else []) + joints[order].tolist()]
        chains[top] = (len(order), float(np.linalg.norm(np.diff(points, axis=0), axis=1).sum()))
    twins, digits = set(), set()
    for top, (count, length) in chains.items():
        for other, (count2, length2) in chains.items():
            if other == top or count2 != count:
                continue
            # One bone alone says little of its length: one-bone limbs from one joint are twins (IK foot
            # controls under a root: the rest pose may hold one foot forward).
            if abs(length2 - length) <= 0.2 * max(length, length2) or (
                    count == 1 and rig.parents[other] == rig.parents[top]):
                twins.add(top)
                break
        parent = int(rig.parents[top])
        siblings = [k for k in rig.children[parent] if k in chains] if parent >= 0 else []
        if len(siblings) >= 3 and _has_twin(rig, parent):
            digits.add(top)
    return np.array([int(t) in twins for t in tops]), np.array([int(t) in digits for t in tops])


def _has_twin(rig: Rig, joint: int) -> bool:
    """Another joint at the same depth with as many joints below it and about its length (±20 %): the
    other side's hand of a hand."""
    lengths = rig.lengths
    same = (rig.depth == rig.depth[joint]) & (rig.descendant_count == rig.descendant_count[joint])
    same &= np.abs(lengths - lengths[joint]) <= 0.2 * np.maximum(lengths, lengths[joint])
    return int(np.count_nonzero(same)) >= 2


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
    for a, up in enumerate(AXES):
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
        if float(height.max()) - floor <= _CONTACT:
            # Every joint on one plane: a centreline rig (a snake rearing up, a fish) has its mirror
            # plane there, not its floor, and a snake flat on the floor looks the same: the plane
            # says nothing of which way is up.
            lying = 0.0
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
        for a, up in enumerate(AXES):
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
        for a, up in enumerate(AXES):
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
    for a, up in enumerate(AXES):
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


def _end_heights(body: _Body, up: np.ndarray, forward: np.ndarray) -> float:
    """How much higher the front end of a horizontal body is than its back end, −1..1.

    A quadruped's head end (neck raised) stands above its tail end. Upright bodies (longer along
    up than along forward, like a biped, whose front end is its toes) are left out.
    """
    height = body.heads @ up
    ahead = body.heads @ forward
    length, tall = float(np.ptp(ahead)), float(np.ptp(height))
    horizontal = float(np.clip(2.0 * length / max(tall, 1e-9) - 1.0, 0.0, 1.0))
    if horizontal == 0.0:
        return 0.0
    front = ahead >= ahead.max() - 0.15
    back = ahead <= ahead.min() + 0.15
    return horizontal * float(np.clip((height[front].mean() - height[back].mean()) / 0.1, -1.0, 1.0))


@dataclass
class RestPoseEvidence:
    """The cues of one rest pose, per axis or per orientation (see the `canonical` module docstring)."""

    side: np.ndarray  # (3,) unit vector towards left-named joints, or zero
    symmetry: np.ndarray  # (3,) mirror symmetry across each axis, 0..1
    ground: np.ndarray  # (6,) standing / lying plausibility per signed up axis, 0..1
    legs: np.ndarray  # (6,) separate legs on the floor per signed up axis (partly touching: < 1)
    foot_lift: np.ndarray  # (6,) body height above foot-named joints per signed up axis, −1..1
    hanging: np.ndarray  # (6,) share of limb length pointing down per signed up axis, 0..1
    head_tail: np.ndarray  # (3,) head end minus tail end, body sizes
    toes: np.ndarray  # (6,3) toe minus ankle per signed up axis, body sizes
    high_front: np.ndarray  # (24,) front end above back end per orientation, −1..1


def gather_evidence(rig: Rig, heads: np.ndarray, tails: np.ndarray,
                    orientations: Sequence[tuple[np.ndarray, np.ndarray]]) -> RestPoseEvidence:
    """Every cue of the rest pose (heads and tails in the candidate axes); `high_front` for each
    (up, forward) of `orientations`."""
    body = _make_body(rig, heads, tails)
    ground, legs = _ground_scores(body)
    return RestPoseEvidence(
        side=_side_direction(body),
        symmetry=_symmetry(body.points),
        ground=ground,
        legs=legs,
        foot_lift=_foot_lift(body),
        hanging=_hanging(body),
        head_tail=_head_tail(body),
        toes=_toe_directions(body),
        high_front=np.array([_end_heights(body, up, forward) for up, forward in orientations]),
    )
