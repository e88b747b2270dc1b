"""What the joints of an artist's rig are for, read from its skeleton in the canonical frame.

Real rigs are not the project's procedural creatures: a leg chain often stops at the shin while the
foot hangs from an IK control bone under the root (Quaternius' `IKBackLeg.L → FFB.L`, `Foot.L`
beside `Body`), pole targets float in front of the knees, and the body root may sit on the floor
below the hips. The roles found here are the ones the gait controllers drive (pelvis, spine, neck,
head, tail, legs, arms), plus, for every joint outside the body's tree, the body joint it follows
rigidly (a foot control follows the end of its leg). Where a leg chain stops short of its foot, a
tip joint is added at the foot control's head, so the leg solved by IK ends on the ground; where a
shin carries the foot in its skin (a mech's spike), at that skin's lowest point; where a foot bone
ends the leg along the sole (no toe bone), at its tail, the toe it rolls over.

numpy only; canonical frame (+Z up, facing −Y, left on +X, body size 1, feet near z = 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.creature import CENTRE, LEFT, RIGHT
from ..core.rest_pose_cues import control_joints
from ..core.rig import Rig, side_of
from ..core.skinning import SkinnedMesh

# A chain end counts as on the ground when its lowest point is this close to the floor (body sizes).
GROUND = 0.12
# A joint outside the body follows the body joint whose head is nearest, when that is this close…
FOLLOW_NEAR = 0.35
# … and one this close to a body leaf's head extends that leaf: the leg's tip is put there.
SAME_POINT = 0.03
# Chain joints whose heads are within this of the lowest one are the foot: the ankle of a foot flat on
# the floor, with its toes (a human ankle is ~0.045 of the body's height above its sole).
FOOT_LEVEL = 0.06
# … and within this share of the leg's drop: a giant's short legs under a long body (an Apatosaurus' knee
# stands 0.06 body sizes up, half its leg) keep their knees.
FOOT_SHARE = 0.25
# A leaf bone reaching the floor from this high (body sizes) is a shin carrying its foot (a mech's spike):
# a foot's own bones start lower (a human ankle ~0.045, a horse's fetlock ~0.08).
SHIN = 0.15
# … when the lowest vertex it carries is this close to the skin's lowest (body sizes).
SOLE = 0.02
# A leaf bone whose head (an ankle) stands at most this high and whose tail lies on the floor pointing
# forward (within ~45°: this share of its length forward) lies along the sole: its tail is the toes'.
ANKLE_HIGH = 0.09
ALONG_SOLE = 0.7
# A limb's chain must drop from its highest joint to its end by at least this share of its length to be
# a leg (a spider's legs arch up first; a chain lying on the floor does not drop).
DROP_SHARE = 0.25
# A branch beside the body whose top is this high (body sizes) and whose end is on the floor is a leg.
LEG_TOP = 0.15
# Joints further than this from the midline are on a side (body sizes).
SIDE = 0.02
# The floor-touching leaves of one foot (toes, heel) lie within this of each other (body sizes).
FOOT_SPREAD = 0.08
FAMILY_BY_LEGS = {2: "biped", 4: "quadruped", 6: "hexapod", 8: "spider"}
# An arm is a wing when its skin reaches this many leg lengths from its shoulder (a bird's wing: 4; a
# robot's long mitts: 1.7, a person's arm 0.8–1.2) and lies flat (its thinnest spread under WING_FLAT of
# its chord's: a bird's 0.37, arms and mitts 0.5–0.65); or when its bones are named wings.
WING_REACH = 2.5
WING_FLAT = 0.45


class RoleError(ValueError):
    """A rig whose legs cannot be found; the message is user-facing."""


@dataclass(frozen=True)
class LegRole:
    chain: tuple[int, ...]  # girdle → foot (joint indices of the working rig: tips included)
    foot: int
    toe: int  # -1: none
    side: int  # LEFT, CENTRE or RIGHT
    position: str  # "front", "middle", "hind" or "" (bipeds)


@dataclass
class RigRoles:
    """Roles on the working rig: the canonical rig with a tip joint appended where a leg stops short."""

    rig: Rig  # the working rig (joints 0..J-1 are the user's, then the tips)
    joint_count: int  # the user's joints
    family: str
    pelvis: int
    spine: list[int]
    neck: list[int]
    head: int
    tail: list[int]
    legs: list[LegRole]
    arms: list[list[int]]
    # joint outside the body tree → the working-rig joint it follows rigidly (its whole subtree comes along)
    followers: dict[int, int] = field(default_factory=dict)
    # the user's roots the working rig hangs from the body (legs an artist left as roots of their own)
    hung: tuple[int, ...] = ()

    @property
    def above_pelvis(self) -> list[int]:
        """The joints the pelvis hangs from (a root bone on the floor beneath the body), root first."""
        return _ancestors(self.rig, self.pelvis)[::-1]

    @property
    def tips(self) -> list[int]:
        return list(range(self.joint_count, self.rig.joint_count))


def followers_attached(roles: RigRoles, tips: bool = True) -> Rig:
    """The working rig with each follower branch hung from the joint it follows (the pelvis for those that
    follow the ground), so that whatever moves the body carries foot controls with their legs and never
    drags a separate root through the floor. `tips` False: the user's joints alone, a follower of a tip
    hung from the leg's end the tip is appended to (rigidly the same)."""
    rig = roles.rig
    if not roles.followers and tips:
        return rig
    parents = rig.parents.copy()
    for top, anchor in roles.followers.items():
        anchor = roles.pelvis if anchor < 0 else anchor
        while not tips and anchor >= roles.joint_count:
            anchor = int(rig.parents[anchor])
        parents[top] = anchor
    count = rig.joint_count if tips else roles.joint_count
    return Rig(list(rig.names[:count]), parents[:count], rig.rest[:count], rig.tails[:count],
               rig.deform[:count])


def planting_joints(roles: RigRoles) -> list[int]:
    """Per leg, the user's joint that is planted: the foot itself, or the foot control that follows a tip."""
    feet = []
    for leg in roles.legs:
        joint = leg.foot
        if joint >= roles.joint_count:
            controls = [top for top, anchor in roles.followers.items() if anchor == leg.foot]
            joint = controls[0] if controls else leg.chain[-2]
        feet.append(int(joint))
    return feet


# ----------------------------------------------------------------------------- tree helpers
def _ancestors(rig: Rig, joint: int) -> list[int]:
    out = []
    parent = int(rig.parents[joint])
    while parent >= 0:
        out.append(parent)
        parent = int(rig.parents[parent])
    return out


def _common_ancestor(rig: Rig, joints: list[int]) -> int:
    """The deepest joint that is (or is an ancestor of) every joint in `joints`."""
    paths = [[j, *_ancestors(rig, j)][::-1] for j in joints]
    common = -1
    for level in zip(*paths, strict=False):
        if len(set(level)) != 1:
            break
        common = level[0]
    if common < 0:
        raise RoleError("The legs of this rig hang from different roots: Kirin cannot find its body.")
    return int(common)


def _path(rig: Rig, top: int, bottom: int) -> list[int]:
    """Joints from just below `top` down to `bottom` (top an ancestor of bottom)."""
    path = [bottom]
    while path[-1] != top:
        path.append(int(rig.parents[path[-1]]))
    return path[::-1][1:]


# ----------------------------------------------------------------------------- the body and its followers
def _body_top(rig: Rig, control: np.ndarray) -> int:
    """The joint whose subtree is the body. Below a root that carries foot controls and pole targets
    beside the body (Quaternius' floor-level `Bone`, `Root`), the body is its biggest child; a root
    that legs hang down from is the body's own top. Controls (`control_joints`: IK targets, props, a
    Rigify rig's ORG- copies) count for nothing: neither as size nor as legs hanging down."""
    body = ~control
    sizes = body.astype(np.int64)  # body joints in each joint's subtree
    for j in rig.topological_order[::-1]:
        if rig.parents[j] >= 0:
            sizes[rig.parents[j]] += sizes[j]
    top = int(rig.roots[int(np.argmax(sizes[rig.roots]))])
    while rig.children[top]:
        kids = [int(k) for k in rig.children[top] if sizes[k]]
        if not kids:
            return top
        biggest = kids[int(np.argmax(sizes[kids]))]
        others = [k for k in kids if k != biggest]
        if not others and not rig.deform[top] and rig.deform.any():
            top = biggest  # a bare transform above the rig's own root (Rigify's `root`)
            continue
        if not others or any(_lowest(rig, k, body) < rig.heads[top, 2] - SAME_POINT for k in others):
            return top
        if any(_stands_down(rig, k, body) for k in others):  # legs from a floor-level root beside the hips
            return top
        top = biggest
    return top


def _separate_legs_hung(rig: Rig, body_top: int, control: np.ndarray) -> tuple[Rig, tuple[int, ...]]:
    """The rig with every leg an artist left as a root of its own (Quaternius' FBX red fox: the spine, the
    tail and each leg a root) hung from the body joint nearest its top, and those roots: a root beside the
    body whose chain stands down to the floor and whose top is near a body joint."""
    body = rig.subtree(body_top) & ~control
    joints = np.flatnonzero(body)
    parents = rig.parents.copy()
    hung = []
    for root in rig.roots:
        root = int(root)
        if rig.subtree(root)[body_top] or control[root] or not _stands_down(rig, root, ~control):
            continue  # the body's own root, a control, or no leg
        distance = np.linalg.norm(rig.heads[joints] - rig.heads[root], axis=1)
        if distance.min() <= FOLLOW_NEAR:
            parents[root] = int(joints[int(np.argmin(distance))])
            hung.append(root)
    if not hung:
        return rig, ()
    connected = rig.connected.copy()
    connected[hung] = False  # hung beside its new parent, not on its tail
    return Rig(list(rig.names), parents, rig.rest, rig.tails, rig.deform, connected), tuple(hung)


def _stands_down(rig: Rig, top: int, body: np.ndarray) -> bool:
    """Whether a branch is a leg standing on the floor: its top high above the rig's lowest point, its
    end down on it (the Quaternius women's legs hang from the floor-level `Root`, beside the `Hips`)."""
    floor = float(min(rig.heads[body, 2].min(), rig.tails[body, 2].min()))
    return rig.heads[top, 2] - floor > LEG_TOP and _lowest(rig, top, body) - floor <= SAME_POINT


def _lowest(rig: Rig, top: int, body: np.ndarray) -> float:
    inside = rig.subtree(top) & body
    return float(min(rig.heads[inside, 2].min(), rig.tails[inside, 2].min()))


def _with_tips(rig: Rig, tips: list[tuple[int, np.ndarray]]) -> Rig:
    """The rig with a zero-rotation leaf joint at each (parent, head) in `tips`."""
    if not tips:
        return rig
    count = rig.joint_count
    rest = np.concatenate([rig.rest, np.repeat(np.eye(4)[None], len(tips), axis=0)])
    tails = np.concatenate([rig.tails, np.zeros((len(tips), 3))])
    for k, (parent, head) in enumerate(tips):
        rest[count + k, :3, :3] = rig.rest[parent, :3, :3]
        rest[count + k, :3, 3] = head
        direction = head - rig.heads[parent]
        tails[count + k] = head + 0.25 * direction
    names = [*rig.names, *[f"{rig.names[p]} (tip)" for p, _ in tips]]
    parents = np.concatenate([rig.parents, [p for p, _ in tips]])
    deform = np.concatenate([rig.deform, np.zeros(len(tips), dtype=bool)])
    return Rig(names, parents, rest, tails, deform)


Tips = list[tuple[int, np.ndarray]]  # (parent, head) of each tip joint to add


def _followers(rig: Rig, body_top: int, body: np.ndarray, floor: float) -> tuple[dict[int, int], Tips]:
    """Each top joint of a branch outside the body → the body joint it follows (-1: the pelvis); tips
    to add where a foot control sits on the floor (`floor`: the lowest point of the rig but its
    controls) below the end of a leg that stops short."""
    heads = rig.heads
    above = set(_ancestors(rig, body_top))
    body_joints = np.flatnonzero(body)
    leaves = {int(j) for j in body_joints if not any(body[c] for c in rig.children[j])}
    followers: dict[int, int] = {}
    tips: Tips = []
    # The top of every branch outside the body: under a root, beside the body, or hanging inside it (a
    # prop in a hand, a pole target under the body's root bone).
    tops = [j for j in range(rig.joint_count)
            if not body[j] and j not in above
            and (rig.parents[j] < 0 or int(rig.parents[j]) in above or body[int(rig.parents[j])])]
    for top in tops:
        distance = np.linalg.norm(heads[body_joints] - heads[top], axis=1)
        nearest = int(body_joints[int(np.argmin(distance))])
        gap = float(distance.min())
        if gap <= SAME_POINT:
            followers[top] = nearest
        elif (gap <= FOLLOW_NEAR and nearest in leaves and heads[top, 2] < heads[nearest, 2]
              and heads[top, 2] - floor <= GROUND and _descends(rig, nearest)):
            # a foot control on the floor under a leg's end, not a pole target (under a grazer's head)
            existing = [k for k, (parent, _) in enumerate(tips) if parent == nearest]
            if not existing:
                tips.append((nearest, heads[top].copy()))
                existing = [len(tips) - 1]
            followers[top] = rig.joint_count + existing[0]
        elif gap <= FOLLOW_NEAR and rig.deform[rig.subtree(top)].any():  # a skinned part beside a joint
            followers[top] = nearest
        else:
            followers[top] = -1
    return followers, tips


def _untipped_leaves(rig: Rig, body: np.ndarray, tips: Tips) -> list[int]:
    """The body's leaf joints no tip hangs from yet."""
    tipped = {parent for parent, _ in tips}
    return [int(j) for j in np.flatnonzero(body)
            if not any(body[c] for c in rig.children[j]) and int(j) not in tipped]


def _spike_tips(rig: Rig, body: np.ndarray, tips: Tips, skin: SkinnedMesh | None) -> Tips:
    """Tips where a leaf bone's own skin reaches the floor from a head above the foot's level (a mech's
    spike, a hoof modelled on the shin: no foot bone below the knee) and no foot control put one: the
    leg ends at the lowest vertex that bone carries (`skin`, canonical frame), not at its head (the
    knee). Only the skin says so: a leaf's tail is no evidence (an FBX end bone's points anywhere)."""
    if skin is None or not skin.vertex_count:
        return []
    dominant = skin.dominant_joints()
    floor = float(skin.vertices[:, 2].min())
    out: Tips = []
    for j in _untipped_leaves(rig, body, tips):
        carried = skin.vertices[dominant == j]
        if rig.heads[j, 2] - floor >= SHIN and len(carried):
            lowest = carried[int(np.argmin(carried[:, 2]))]
            if lowest[2] - floor <= SOLE:
                out.append((j, lowest.copy()))
    return out


def _sole_tips(rig: Rig, body: np.ndarray, floor: float, tips: Tips) -> Tips:
    """Tips at the toes of foot bones that end the leg lying along the sole (a toe bone taken away, or
    never made): their tails, forward of their heads on the floor — the point a foot rolls over at
    heel-off, as a toe joint's head is. Only a foot's own bone (its parent, the shin, stands above the
    foot's level): a toe's end bone is no foot, and its foot rolls over the toe already."""
    out: Tips = []
    for j in _untipped_leaves(rig, body, tips):
        head, tail, parent = rig.heads[j], rig.tails[j], int(rig.parents[j])
        along = tail - head
        if (parent >= 0 and rig.heads[parent, 2] - floor > FOOT_LEVEL and tail[2] - floor <= FOOT_LEVEL
                and head[2] - floor <= ANKLE_HIGH and -along[1] >= ALONG_SOLE * np.linalg.norm(along) > 0):
            out.append((j, tail.copy()))
    return out


def _descends(rig: Rig, leaf: int) -> bool:
    """Whether a chain comes down to its end at `leaf`, as a leg's does (a head rises from its neck)."""
    parent = int(rig.parents[leaf])
    return parent < 0 or rig.heads[leaf, 2] < rig.heads[parent, 2]


# ----------------------------------------------------------------------------- legs
def _floor(rig: Rig, body: np.ndarray) -> float:
    return float(min(rig.heads[body, 2].min(), rig.tails[body, 2].min()))


def _one_foot(rig: Rig, leaves: list[int]) -> bool:
    """Floor leaves that belong to one foot: toes and heel close together, not on both sides of the
    midline (nor left and right by name)."""
    sides = {side_of(rig.names[j]) for j in leaves} - {0}
    across = rig.heads[leaves, 0]
    if len(sides) > 1 or (across.max() > SIDE and across.min() < -SIDE):  # by name, or either side
        return False
    points = rig.heads[leaves, :2]
    return float(np.max(np.linalg.norm(points[:, None] - points[None], axis=-1))) <= FOOT_SPREAD


def _leg_tops(rig: Rig, top: int, floor_leaves: set[int]) -> list[tuple[int, list[int]]]:
    """(limb top, its floor leaves) per foot: the body split at each joint where feet part ways, so a leg
    is whole with whatever twist bones, share bones and toes branch off it."""
    leaves = [j for j in np.flatnonzero(rig.subtree(top)) if j in floor_leaves]
    if not leaves:
        return []
    if _one_foot(rig, leaves) and top != rig.main_root:
        return [(top, leaves)]
    out = []
    for child in rig.children[top]:
        out += _leg_tops(rig, int(child), floor_leaves)
    return out


def _leg_roles(rig: Rig, body: np.ndarray, body_top: int, floor: float) -> list[LegRole]:
    """Leg chains: limbs of the body that drop to the ground (`floor`: the lowest point of the rig but
    its controls, foot tips included)."""
    heads, tails = rig.heads, rig.tails
    floor_leaves = {int(j) for j in np.flatnonzero(body) if not any(body[c] for c in rig.children[j])
                    and min(heads[j, 2], tails[j, 2]) - floor <= GROUND}
    legs = []
    for top, leaves in _leg_tops(rig, body_top, floor_leaves):
        leaf = min(leaves, key=lambda j: (round(float(heads[j, 2]), 3), -len(_ancestors(rig, j))))
        chain = [top, *_path(rig, top, leaf)] if leaf != top else [top]
        if len(chain) < 2:
            continue
        points = np.concatenate([heads[chain], tails[chain[-1:]]])
        length = float(np.sum(np.linalg.norm(np.diff(points, axis=0), axis=1)))
        drop = float(points[:, 2].max() - points[-2:, 2].min())  # from its highest joint down to its end
        if drop < DROP_SHARE * max(length, 1e-9):
            continue
        head_z = heads[chain, 2]
        low = head_z <= head_z.min() + min(FOOT_LEVEL, FOOT_SHARE * drop)
        foot_at = len(chain) - 1
        while foot_at > 0 and low[foot_at - 1]:  # the last run of low joints: ankle and toes, not a hip
            foot_at -= 1
        foot_at = max(foot_at, 2)  # IK needs two bones above the foot
        if foot_at >= len(chain):
            parent = int(rig.parents[chain[0]])
            if parent < 0:
                continue
            chain.insert(0, parent)
            foot_at = len(chain) - 1
        foot = chain[foot_at]
        toe = chain[foot_at + 1] if foot_at + 1 < len(chain) else -1
        side = LEFT if heads[foot, 0] > SIDE else RIGHT if heads[foot, 0] < -SIDE else CENTRE
        legs.append(LegRole(tuple(chain[:foot_at + 1]), foot, toe, side, ""))
    legs = _distinct(legs)
    if any(leg.side != CENTRE for leg in legs):  # a tail or a trunk resting on the floor is no leg
        legs = [leg for leg in legs if leg.side != CENTRE]
    return _with_positions(rig, legs)


def _distinct(legs: list[LegRole]) -> list[LegRole]:
    """One leg per chain top: branching toes give several leaves on one limb."""
    seen: dict[tuple[int, ...], LegRole] = {}
    for leg in legs:
        key = leg.chain[:2]
        if key not in seen or len(leg.chain) > len(seen[key].chain):
            seen[key] = leg
    return list(seen.values())


def _with_positions(rig: Rig, legs: list[LegRole]) -> list[LegRole]:
    """Front/middle/hind by fore–aft order on each side (bipeds say nothing)."""
    if len(legs) <= 2:
        return legs
    out = []
    for leg in legs:
        same = sorted((other for other in legs if other.side == leg.side),
                      key=lambda other: rig.heads[other.foot, 1])
        rank = same.index(leg)
        position = "front" if rank == 0 else "hind" if rank == len(same) - 1 else "middle"
        out.append(LegRole(leg.chain, leg.foot, leg.toe, leg.side, position))
    return out


# ----------------------------------------------------------------------------- the axial body
def _forward_path(rig: Rig, start: int, taken: np.ndarray, score) -> list[int]:
    """Path from `start` (exclusive) to the free descendant leaf that maximises score(head)."""
    inside = rig.subtree(start) & ~taken
    inside[start] = False
    leaves = [j for j in np.flatnonzero(inside) if not any(inside[k] for k in rig.children[j])]
    if not leaves:
        return []
    best = max(leaves, key=lambda j: score(rig.heads[j]))
    path = _path(rig, start, int(best))
    return [j for j in path if inside[j]]


def _trim_end(rig: Rig, chain: list[int]) -> list[int]:
    """A chain without its zero-length or '_end' leaf (an exporter's marker, not a bone to bend)."""
    if len(chain) > 1 and (rig.names[chain[-1]].lower().endswith("_end")
                           or np.linalg.norm(rig.heads[chain[-1]] - rig.tails[chain[-1]]) < 1e-6):
        return chain[:-1]
    return chain


def _arms(rig: Rig, pelvis: int, taken: np.ndarray) -> list[list[int]]:
    """Chains from the upper body sideways to the hands (clavicle, upper arm, forearm, hand): the free
    path from the pelvis to the leaf furthest out on each side, from where it leaves the body."""
    arms = []
    for side in (LEFT, RIGHT):
        path = _forward_path(rig, pelvis, taken, lambda h, s=side: s * h[0])
        if not path or side * rig.heads[path[-1], 0] < 0.15:
            continue
        # The arm leaves the body where the path last branches near the midline (the chest, or a neck
        # the shoulders hang from); a spine that drifts off the midline is no clavicle.
        forks = [k for k, j in enumerate(path[:-1]) if side * rig.heads[j, 0] <= 0.05
                 and sum(1 for c in rig.children[j] if not taken[c]) >= 2]
        start = forks[-1] + 1 if forks else next(
            (k for k, j in enumerate(path) if side * rig.heads[j, 0] > 0.01), None)
        if start is None or start == 0:
            continue
        arm = path[start:start + 4]
        if len(arm) >= 3:
            arms.append(arm)
    return arms if len(arms) == 2 else []


def _head_of(rig: Rig, chain: list[int], taken: np.ndarray) -> list[int]:
    """A neck-and-head chain cut at the first joint that branches (ears and jaws hang from the head)."""
    for k, j in enumerate(chain):
        if sum(1 for c in rig.children[j] if not taken[c]) >= 2:
            return chain[:k + 1]
    return chain


def _body_of_girdle(rig: Rig, pelvis: int, body: np.ndarray, legs: list[LegRole]) -> int:
    """The pelvis, or its parent where the legs' common joint carries nothing but legs (a Character
    Creator `Pelvis` beside the `Waist`, both under the `Hip`): the body hangs from the parent then."""
    leg_joints = {j for leg in legs for j in leg.chain}
    parent = int(rig.parents[pelvis])
    while parent >= 0 and body[parent]:
        kids = [int(k) for k in rig.children[pelvis]]
        carries_more = any(k not in leg_joints and rig.descendant_count[k] >= 3 for k in kids)
        if carries_more or len(rig.children[parent]) < 2:
            break
        pelvis, parent = parent, int(rig.parents[parent])
    return pelvis


def detect_roles(rig: Rig, skin: SkinnedMesh | None = None) -> RigRoles:
    """The roles of a rig in the canonical frame; RoleError when it has no legs to walk on. `skin`: its
    skinned mesh in the same frame, where the caller has it (a leg without a foot bone then ends where
    its skin meets the floor: `_spike_tips`)."""
    control = control_joints(rig)
    body_top = _body_top(rig, control)
    rig, hung = _separate_legs_hung(rig, body_top, control)
    if hung:  # the legs now hang from the body: its top may lie above where it did
        body_top = _body_top(rig, control)
    body = rig.subtree(body_top) & ~control
    floor = _floor(rig, ~control)
    followers, tips = _followers(rig, body_top, body, floor)
    tips += _spike_tips(rig, body, tips, skin)
    tips += _sole_tips(rig, body, floor, tips)
    work = _with_tips(rig, tips)
    body = np.concatenate([body, np.ones(len(tips), dtype=bool)])
    grounded = np.concatenate([~control, np.ones(len(tips), dtype=bool)])  # a root on the floor counts
    legs = _leg_roles(work, body, body_top, _floor(work, grounded))
    if not legs:
        raise RoleError("Kirin found no legs on this rig: no chain of bones reaches down to the floor.")
    family = FAMILY_BY_LEGS.get(len(legs))
    if family is None:
        raise RoleError(f"Kirin found {len(legs)} legs on this rig; it walks rigs with 2, 4, 6 or 8.")
    hind = sorted(legs, key=lambda leg: -work.heads[leg.foot, 1])[:2]
    front = sorted(legs, key=lambda leg: work.heads[leg.foot, 1])[:2]
    pelvis = _common_ancestor(work, [leg.chain[0] for leg in (hind if family != "biped" else legs)])
    pelvis = _body_of_girdle(work, pelvis, body, legs)
    taken = ~body  # what is outside the body (controls, props) is no spine, arm or tail either
    for leg in legs:
        taken[list(leg.chain)] = True
        for j in leg.chain:
            taken |= work.subtree(j)
    if family == "biped":
        arms = _arms(work, pelvis, taken)
        for arm in arms:
            taken[arm] = True
        chest = _common_ancestor(work, [a[0] for a in arms]) if arms else -1
        up = _forward_path(work, pelvis, taken, lambda h: h[2])
    else:
        arms = []
        chest = _common_ancestor(work, [leg.chain[0] for leg in front])
        up = _forward_path(work, pelvis, taken, lambda h: -h[1])
    axial = _trim_end(work, up)
    if chest == pelvis and family in ("hexapod", "spider"):  # legs from one cephalothorax: no spine
        cut = 0
    elif chest in axial:
        cut = axial.index(chest) + 1
    else:  # no chest on the way: the first half bends as the spine, the rest as the neck
        cut = max(1, len(axial) // 2)
    axial = axial[:cut] + _head_of(work, axial[cut:], taken)
    spine, rest = axial[:cut], axial[cut:]
    head = rest[-1] if rest else -1
    neck = rest[:-1]
    for j in axial:
        taken[j] = True
    tail = _trim_end(work, _forward_path(work, pelvis, taken, lambda h: h[1] - 0.2 * h[2]))
    # A tail reaches back from the midline (not the fingers of a hand hanging behind the hips).
    if tail and (work.heads[tail[-1], 1] - work.heads[pelvis, 1] < 0.1 or abs(work.heads[tail[0], 0]) > 0.05):
        tail = []
    return RigRoles(work, rig.joint_count, family, pelvis, spine, neck, head, tail, legs, arms, followers,
                    hung)


def wing_like(rig: Rig, chain: list[int], leg_length: float, vertices: np.ndarray | None = None,
              dominant: np.ndarray | None = None) -> bool:
    """Whether an arm chain found on a rig is a wing: by its skin (`vertices` in the rig's frame, each
    vertex's `dominant` joint) reaching far and lying flat, or, without skin, by its bones' names."""
    if any("wing" in rig.names[j].lower() for j in chain):
        return True
    if vertices is None or dominant is None or leg_length <= 0:
        return False
    inside = rig.subtree(chain[0])
    points = vertices[inside[np.clip(dominant, 0, rig.joint_count - 1)] & (dominant < rig.joint_count)]
    if len(points) < 10:
        return False
    reach = float(np.max(np.linalg.norm(points - rig.heads[chain[0]], axis=1)))
    spread = np.linalg.svd(points - points.mean(axis=0), compute_uv=False)
    return reach > WING_REACH * leg_length and spread[2] < WING_FLAT * spread[1]
