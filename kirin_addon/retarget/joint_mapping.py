"""Automatic joint mapping between two rigs of different topology and naming, for retargeting.

`auto_map_joints(source, target)` says, for every target joint, which source joint it follows
(or None: the retargeter keeps it at rest relative to its parent). Both rigs must already be in
the canonical frame (+Z up, −Y forward, +X the creature's left, unit body size, origin at the
main root on the ground), so their rest geometry is directly comparable; deform flags count.
`mapping_text` gives an editable "target = source" text form and checks a mapping; the names are
read by `joint_names`, the hierarchies aligned by `tree_alignment`.

Score. Every (target t, source s) pair gets a score w(t, s), worth mapping where w > 0:

    w = 2.5·name + 1.0·position + 0.5·direction + 0.5·upstream + 0.5·downstream + 0.75·along
        + 0.5·side + 0.25·leaf + 1.0·hub − 0.5·deform − 1.0·under − 0.75,   and w = −∞ across sides.

* name ∈ [−1, 1]: names are parsed (`parse_joint_name`) into side, body part, limb kind
  (front: arms, fore legs, wings; hind: legs), limb segment (girdle, upper, lower, end, digit or
  a finger) and a confidence, after stripping namespaces and prefixes ("mixamorig:", "DEF-",
  "Armature_", "Bip01", "b_"), Blender/glTF numbering (".001", "_012") and separators, with
  synonyms (thigh = upleg = femur, shin = calf = leg, foot = paw = hoof, hand = wrist …);
  "front"/"fore" and "hind"/"rear"/"back" next to a limb word ("BackLowerLeg", "thigh_back_l")
  say which pair of legs ("Back", "LowerBack" alone are the spine).
  Same part: +confidence (ambiguous words such as "Leg" or "Arm" count half); the same limb's
  other segment: −0.3·confidence; two different parts of the spine/neck/head axis: −0.3 (the
  geometry decides: Rigify calls the neck "spine.004"); front against hind limbs, or limbs
  against the axis: −1; a name that says nothing ("Bone.012", "Joint_5"): 0. Helper bones
  (twist, IK, pole) lose 0.25 and end sites ("HeadTop_End", "Nub") 1.0 against ordinary bones,
  and a limb segment's continuation ("thigh.L.001" after "thigh.L") keeps a fifth of its
  score against a segment's first bone.
* position: 2·exp(−d²/2σ²) − 1 for the distance d between the heads (σ = 0.12 body sizes);
  where a root bone stands under the body, well below the hub (Quaternius' "Body" under the
  belly), heads are measured from the floor below the hub instead of the canonical origin.
* direction: cosine between the rest bone directions.
* upstream / downstream: 2·exp(−Δ²/2σ²) − 1 (σ = 0.1 body sizes) on the path length along the
  bones from the hub (where the limbs meet: the hips of a humanoid, below any ground root) and
  on the longest path down to a leaf. Path lengths do not change between an A-pose and a T-pose.
* along: the same with σ = 0.1 on the joint's relative position along its chain (a run of
  joints between branchings, ignoring short side branches such as twist bones), 0 at the first
  joint: it aligns chains split into different numbers of bones.
* side: +1 same side (by name; else a joint above named joints of both sides is the centre, and any
  other takes its parent's side or, under a centred parent, is sided where it steps out sideways from
  it: `_sides`), −1 one centred and one sided; opposite sides are forbidden outright. leaf: −1 when
  one joint is an end effector and the other is not. hub: +1 for the two hubs, +0.5 for the two main
  roots where those differ. deform: 1 when one bone deforms and the other does not. under: 1 when
  one is a root bone under the body (above the hub, lower than a third of its height: a "Root" on
  the floor) and the other is not, so the hips never follow a floor bone.

The hub is the first joint below the main root with two major branches; a root bone under the
body that carries the legs beside the hips leads to its heaviest branch. The path features and
the alignment follow the rig's hierarchy with one change: a tree standing on the floor beside
the body's (a separate IK foot control at the paw; legs under a floor "Root" beside the hips)
hangs from the body's joint nearest to it where that is a chain's end on its side or the hub.

Structure. The mapping is one-to-one and maximises the sum of w over mapped pairs minus 0.3 for
every joint skipped between mapped ones and minus 1.0 for every break of ancestry ("the image of
a joint's nearest mapped ancestor is an ancestor of its image"). Ancestry is a preference, not a
rule: the retargeter copies each joint's world-space rotation delta, so a pair that breaks it
still moves the right mesh (ears beside the head, where the target has them under it). It is
found by dynamic programming over both hierarchies (Zhang's constrained alignment of unordered
trees: a subtree maps into one subtree, sibling subtrees into disjoint subtrees through a
bipartite assignment at each branching, and joints without a counterpart are skipped on either
side), where a target subtree may instead go, at the penalty, into the best source subtree
unrelated to its parent's image; a pair that then lost its source joint to a better one is
ruled out and the alignment redone. A greedy pass adds the remaining positive pairs worth more
than the ancestry they break (two sibling chains under one source joint, a thumb and an index
finger both under Rigify's "palm.01"; a head above the ears beside it); helper bones keep
ancestry. Extra target joints (five spine bones against one, fingers on a rig without) stay
unmapped; a source joint never drives two target joints.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.rig import Rig
from .joint_names import JointName, name_similarity, parse_joint_name
from .tree_alignment import ANCESTRY, align_trees

__all__ = ["joint_scores", "auto_map_joints"]

# Weights of the score (see the module docstring).
W_NAME, W_POSITION, W_DIRECTION, W_UP, W_DOWN, W_ALONG, W_SIDE, W_LEAF, W_ROOTS, BIAS = (
    2.5, 1.0, 0.5, 0.5, 0.5, 0.75, 0.5, 0.25, 1.0, 0.75)
W_DEFORM = 0.5  # penalty of a deforming bone against one that does not deform
W_UNDER = 1.0  # penalty of a root bone under the body ("Root" on the floor) against a body joint
SIGMA_POSITION = 0.12  # body sizes
SIGMA_PATH = 0.10  # body sizes
SIGMA_ALONG = 0.10  # fraction of a chain
_SIDE_EPS = 0.02  # |x| below this (body sizes) counts as the centre line
_SIDE_SLOPE = 1.0  # a joint steps out sideways from a centred parent: |Δx| at least this × its step in y, z
_ALIGN_ROUNDS = 4  # alignments at most, each ruling out the pairs that lost a source joint
_HUB_BRANCH = 0.3  # a branch this long relative to the longest one makes a joint the hub
_UNDER = 1 / 3  # a joint above the hub lower than this fraction of its height is a root bone under the body
_FLOOR = 0.05  # body sizes: a tree with a head lower than this reaches the floor

# --------------------------------------------------------------------------- features


@dataclass
class _Features:
    positions: np.ndarray  # (J,3) heads, unit body size, from the floor below the main root (or hub)
    directions: np.ndarray  # (J,3) unit bone directions (zero for zero-length bones)
    sides: np.ndarray  # (J,) +1 left, −1 right, 0 centre
    upstream: np.ndarray  # (J,) path length from the hub (negative above it)
    downstream: np.ndarray  # (J,) longest path length down to a leaf tail
    along: np.ndarray  # (J,) relative position along the joint's chain, 0 at its start, ~1 at its end
    rank: np.ndarray  # (J,) how many ancestors in a row are the same limb segment ("thigh.001": 1)
    leaves: np.ndarray  # (J,) bool
    main_root: int
    hub: int  # where the limbs meet (the hips of a humanoid), see _features
    ancestors: np.ndarray  # (J,J) bool, [a, j]: a is a proper ancestor of j in `tree`
    names: list[JointName]
    deform: np.ndarray  # (J,) bool
    under: np.ndarray  # (J,) bool: root bones under the body, see _features
    helper: np.ndarray  # (J,) bool: twist, IK … bones by name; they keep ancestry
    tree: Rig  # the hierarchy the alignment follows, see _body_tree


def _major_children(rig: Rig, offsets: np.ndarray, downstream: np.ndarray, names: list[JointName],
                    hung: frozenset[int] = frozenset()) -> list[list[int]]:
    """Children that carry the body on. Short side branches (twist bones, IK targets, a breast
    bone), helper bones (but those `hung` from the body, see _body_tree) and named end sites do
    not, so they neither end a chain nor make a hub. A child's reach is how far its subtree goes
    beyond the joint's own bone (a twist bone goes nowhere)."""
    major: list[list[int]] = []
    for j in range(rig.joint_count):
        own = rig.lengths[j]
        reach = {c: max(offsets[c] + downstream[c] - own, 0.0) for c in rig.children[j]
                 if c in hung or not (names[c].helper or names[c].end)}
        longest = max(reach.values(), default=0.0)
        major.append([c for c, r in reach.items() if r >= _HUB_BRANCH * longest])
    return major


def _find_hub(rig: Rig, major: list[list[int]]) -> int:
    """The body's centre, where limbs meet: the first joint below the main root with two major
    branches. A chain of single children leads down to it, and so does a root bone under the
    body that carries the legs beside the hips (Quaternius' "Root" on the floor): its heaviest
    branch is the body."""
    heights = rig.heads[:, 2]
    hub = rig.main_root
    while True:
        if len(major[hub]) == 1:
            hub = major[hub][0]
            continue
        body = max(major[hub], key=lambda c: rig.descendant_count[c], default=None)
        if body is not None and heights[hub] < _UNDER * heights[body]:
            return body  # the hips, though a single chain (the spine) may go on from them
        break
    return hub if major[hub] else rig.main_root  # a plain chain: measure from its root


def _upstream(rig: Rig, offsets: np.ndarray, hub: int) -> np.ndarray:
    """Path length from the hub (negative above it; from its own root in another tree)."""
    from_root = np.zeros(rig.joint_count)
    tree_root = np.arange(rig.joint_count)
    for j in rig.topological_order:
        p = rig.parents[j]
        if p >= 0:
            from_root[j] = from_root[p] + offsets[j]
            tree_root[j] = tree_root[p]
    return np.where(tree_root == tree_root[hub], from_root - from_root[hub], from_root)


def _chain_positions(rig: Rig, offsets: np.ndarray, major: list[list[int]], hub: int) -> np.ndarray:
    """Relative position along each joint's chain (a run between branchings along single major
    children): the path length from the chain's first head over the chain's whole length (its
    last bone included)."""
    along = np.zeros(rig.joint_count)
    for start in range(rig.joint_count):
        p = rig.parents[start]
        if p >= 0 and major[p] == [start] and start != hub:
            continue  # not the start of a chain; the hub always starts one (a ground root ends above it)
        chain = [start]
        while len(major[chain[-1]]) == 1 and major[chain[-1]][0] != hub:
            chain.append(major[chain[-1]][0])
        cumulative = np.concatenate([[0.0], np.cumsum(offsets[chain[1:]])])
        total = cumulative[-1] + rig.lengths[chain[-1]]
        along[chain] = cumulative / total if total > 0 else 0.0
    return along


def _ancestors(rig: Rig) -> np.ndarray:
    """(J,J) bool, [a, j]: a is a proper ancestor of j."""
    ancestors = np.zeros((rig.joint_count, rig.joint_count), dtype=bool)
    for j in rig.topological_order:
        p = rig.parents[j]
        if p >= 0:
            ancestors[:, j] = ancestors[:, p]
            ancestors[p, j] = True
    return ancestors


def _reach(rig: Rig) -> tuple[np.ndarray, np.ndarray]:
    """Each joint's distance from its parent's head, and its longest path down to a leaf's tail."""
    heads, parents = rig.heads, rig.parents
    offsets = np.zeros(rig.joint_count)
    has_parent = parents >= 0
    offsets[has_parent] = np.linalg.norm(heads[has_parent] - heads[parents[has_parent]], axis=1)
    downstream = rig.lengths.copy()
    for j in rig.topological_order[::-1]:
        for c in rig.children[j]:
            downstream[j] = max(downstream[j], offsets[c] + downstream[c])
    return offsets, downstream


def _body_tree(rig: Rig, hub: int, sides: np.ndarray, ancestors: np.ndarray,
               helper: np.ndarray) -> tuple[Rig, frozenset[int]]:
    """The hierarchy the features and the alignment follow. A tree standing on the floor beside
    the body's (a second root tree such as an IK foot control at the paw, the legs under a floor
    bone beside the hips) hangs from the body's joint nearest to it, where that is the end of a
    chain on the same side or the hub itself: the body reaches the floor through it, and world
    deltas do not care which bone is the parent. The body is every joint below the line down to
    the hub outside those trees (helper bones left out), not the hub's subtree alone: a hub found
    too deep (`_features`) must not leave the legs out. Also returns the joints hung."""
    line = ancestors[:, hub]  # the joints above the hub
    parents = rig.parents.copy()
    tops = [top for top in range(rig.joint_count)
            if top != hub and not line[top] and (parents[top] < 0 or line[parents[top]])]
    floor_trees = {}
    for top in tops:  # the first joint of each tree beside the body's that reaches the floor
        tree = np.append(np.flatnonzero(ancestors[top]), top)
        if rig.heads[tree, 2].min() < _FLOOR:
            floor_trees[top] = tree
    outside = line | helper
    for tree in floor_trees.values():
        outside[tree] = True
    outside[hub] = False
    body = np.flatnonzero(~outside)
    for top in floor_trees:
        anchor = int(body[np.argmin(np.linalg.norm(rig.heads[body] - rig.heads[top], axis=1))])
        if (anchor == hub or not rig.children[anchor]) and sides[anchor] in (0, sides[top]):
            parents[top] = anchor
    hung = frozenset(np.flatnonzero(parents != rig.parents).tolist())
    if not hung:
        return rig, hung
    return Rig(list(rig.names), parents, rig.rest, rig.tails, rig.deform), hung


def _sides(rig: Rig, names: list[JointName]) -> np.ndarray:
    """+1 left, −1 right, 0 centre: by name, else by geometry. A joint above named joints of both sides (a
    spine bone carrying both arms) is the centre; any other takes its parent's side, and under a centred
    parent (or at a root) it is sided where it steps out sideways from it by more than _SIDE_EPS, mirrored
    by a sibling (a pair of legs) or at least _SIDE_SLOPE of its step up or forward (a bone starting on the
    centre line, CMU's "LHipJoint", is judged by its middle). From the parent, not from x = 0: a capture's
    standing frame may lean, and its neck and head, 5 % of its size to one side of the hips, were read as a
    left neck and head that could not follow the target's."""
    heads, mids = rig.heads, (rig.heads + rig.tails) / 2
    named = np.array([n.side for n in names], dtype=np.int64)
    below = np.zeros((rig.joint_count, 2), dtype=bool)  # named left / right joints in the subtree
    for j in rig.topological_order[::-1]:
        below[j] |= (named[j] > 0, named[j] < 0)
        if rig.parents[j] >= 0:
            below[rig.parents[j]] |= below[j]

    def step(j: int, p: int) -> np.ndarray:
        """Where joint j stands from its parent p (its middle, where it starts on the parent's line)."""
        origin = heads[p] if p >= 0 else np.zeros(3)
        return heads[j] - origin if abs(heads[j, 0] - origin[0]) > _SIDE_EPS else mids[j] - origin

    sides = np.zeros(rig.joint_count, dtype=np.int64)
    for j in rig.topological_order:
        p = int(rig.parents[j])
        if named[j] or below[j].all():
            sides[j] = named[j]
        elif p >= 0 and sides[p]:
            sides[j] = sides[p]
        else:
            out = step(j, p)
            mirrored = p >= 0 and any(_mirror_of(out[0], step(k, p)[0]) for k in rig.children[p] if k != j)
            sideways = mirrored or abs(out[0]) >= _SIDE_SLOPE * np.hypot(out[1], out[2])
            sides[j] = int(np.sign(out[0])) if abs(out[0]) > _SIDE_EPS and sideways else 0
    return sides


def _mirror_of(a: float, b: float) -> bool:
    """Whether two sideways steps from one parent mirror each other (a pair of legs or arms)."""
    return a * b < 0 and min(abs(a), abs(b)) > _SIDE_EPS and abs(a + b) <= 0.5 * max(abs(a), abs(b))


def _ranks(rig: Rig, names: list[JointName], sides: np.ndarray) -> np.ndarray:
    """How many ancestors in a row are the same limb segment ("thigh.001": 1)."""
    rank = np.zeros(rig.joint_count, dtype=np.int64)
    for j in rig.topological_order:
        p, a = rig.parents[j], names[j]
        if p >= 0 and a.part == "limb" and a.segment is not None and sides[p] == sides[j]:
            b = names[p]
            if (b.part, b.kind, b.segment) == (a.part, a.kind, a.segment):
                rank[j] = rank[p] + 1
    return rank


def _features(rig: Rig) -> _Features:
    """Everything about a rig's joints that the score compares."""
    heads, lengths = rig.heads, rig.lengths
    directions = np.where(lengths[:, None] > 1e-6, (rig.tails - heads) / np.maximum(lengths, 1e-12)[:, None],
                          0.0)
    names = [parse_joint_name(n) for n in rig.names]
    sides = _sides(rig, names)
    helper = np.array([n.helper for n in names], dtype=bool)
    offsets, downstream = _reach(rig)
    hub = _find_hub(rig, _major_children(rig, offsets, downstream, names))
    tree, hung = _body_tree(rig, hub, sides, _ancestors(rig), helper)
    # Legs whose feet stand apart (an IK foot control under the root) are short as paths: beside a
    # monster's long arms they did not count, and the hub was found in the chest (the Quaternius
    # Ninja's Torso: its hips, shins and spine were then left unmapped). With the feet hung the legs
    # have their length; the hub is looked for again.
    offsets, downstream = _reach(tree)
    again = _find_hub(tree, _major_children(tree, offsets, downstream, names, hung))
    if again != hub:
        hub = again
        tree, hung = _body_tree(rig, hub, sides, _ancestors(rig), helper)
    ancestors = _ancestors(tree)
    offsets, downstream = _reach(tree)
    major = _major_children(tree, offsets, downstream, names, hung)
    # The canonical frame fixed the unit of length (its body size leaves out IK poles parked far
    # off the body, rig.body_size does not), the floor and the origin at the main root. A root
    # bone under the body, well below the hub, may stand anywhere there (Quaternius' "Body" is
    # under the belly): heads are then compared from above the hub.
    under = ancestors[:, hub] & (heads[:, 2] < _UNDER * heads[hub, 2])
    origin = hub if under[rig.main_root] else rig.main_root
    positions = heads - np.array([heads[origin, 0], heads[origin, 1], 0.0])
    leaves = np.array([not kids for kids in tree.children])
    return _Features(positions, directions, sides, _upstream(tree, offsets, hub), downstream,
                     _chain_positions(tree, offsets, major, hub), _ranks(rig, names, sides), leaves,
                     rig.main_root, hub, ancestors, names, rig.deform.copy(), under, helper, tree)


def _name_key(name: JointName) -> tuple:
    """What name_similarity looks at: side is scored apart, the core only for unknown parts."""
    return (name.part, name.kind, name.segment, name.confidence, name.helper, name.end,
            name.core if name.part is None else bool(name.core))


def _name_scores(targets: list[JointName], sources: list[JointName]) -> np.ndarray:
    """(J_target, J_source) name_similarity, computed once per distinct kind of name."""
    t_keys: dict[tuple, int] = {}
    s_keys: dict[tuple, int] = {}
    t_index = np.array([t_keys.setdefault(_name_key(n), len(t_keys)) for n in targets], dtype=np.int64)
    s_index = np.array([s_keys.setdefault(_name_key(n), len(s_keys)) for n in sources], dtype=np.int64)
    t_first = {k: targets[int(np.argmax(t_index == i))] for k, i in t_keys.items()}
    s_first = {k: sources[int(np.argmax(s_index == i))] for k, i in s_keys.items()}
    table = np.array([[name_similarity(t_first[tk], s_first[sk]) for sk in s_keys] for tk in t_keys])
    return table.reshape(len(t_keys), len(s_keys))[t_index[:, None], s_index[None, :]]


def _similar(difference: np.ndarray, sigma: float) -> np.ndarray:
    """2·exp(−d²/2σ²) − 1: +1 for equal values, −1 far apart."""
    return 2.0 * np.exp(-0.5 * (difference / sigma) ** 2) - 1.0


def _scores(src: _Features, tgt: _Features) -> np.ndarray:
    """(J_target, J_source) pair scores; −inf across sides. See the module docstring."""
    names = _name_scores(tgt.names, src.names)
    # "thigh.L.001" continues "thigh.L": the segment's joint is the first of the run.
    limb_t = np.array([n.part == "limb" for n in tgt.names])
    limb_s = np.array([n.part == "limb" for n in src.names])
    runs = (tgt.rank[:, None] != src.rank[None]) & limb_t[:, None] & limb_s[None] & (names > 0)
    names[runs] *= 0.2
    distance = np.linalg.norm(tgt.positions[:, None] - src.positions[None], axis=-1)
    t_side, s_side = tgt.sides[:, None], src.sides[None]
    score = (
        W_NAME * names
        + W_POSITION * _similar(distance, SIGMA_POSITION)
        + W_DIRECTION * (tgt.directions @ src.directions.T)
        + W_UP * _similar(tgt.upstream[:, None] - src.upstream[None], SIGMA_PATH)
        + W_DOWN * _similar(tgt.downstream[:, None] - src.downstream[None], SIGMA_PATH)
        + W_ALONG * _similar(tgt.along[:, None] - src.along[None], SIGMA_ALONG)
        + W_SIDE * np.where(t_side == s_side, 1.0, -1.0)
        + W_LEAF * np.where(tgt.leaves[:, None] == src.leaves[None], 0.0, -1.0)
        - W_DEFORM * (tgt.deform[:, None] != src.deform[None])
        - BIAS
    )
    # The hubs carry the body (and, as world deltas, whatever a ground root above them does);
    # the main roots carry the trajectory. A root bone under the body is no body joint: the hips
    # never follow a "Root" at the feet, 60 % of the body away, when their own bone is there.
    score[tgt.hub, src.hub] += W_ROOTS
    if (tgt.hub, src.hub) != (tgt.main_root, src.main_root):
        score[tgt.main_root, src.main_root] += 0.5 * W_ROOTS
    score -= W_UNDER * (tgt.under[:, None] != src.under[None])
    score[t_side * s_side < 0] = -np.inf
    return score


def joint_scores(source: Rig, target: Rig) -> np.ndarray:
    """(J_target, J_source) matching scores of canonical-frame rigs (positive: worth mapping)."""
    return _scores(_features(source), _features(target))

# --------------------------------------------------------------------------- alignment


def _one_to_one(pairs: list[tuple[int, int]], score: np.ndarray) -> list[tuple[int, int]]:
    """Where subtrees placed elsewhere claimed a source joint twice, the better pair keeps it."""
    kept: list[tuple[int, int]] = []
    used: set[int] = set()
    for t, s in sorted(pairs, key=lambda pair: -score[pair]):
        if s not in used:
            kept.append((t, s))
            used.add(s)
    return kept


def _align(score: np.ndarray, tgt: _Features, src: _Features) -> list[tuple[int, int]]:
    """The alignment, one-to-one: a pair that lost its source joint to a better one is ruled out
    and the alignment redone, so that the rest of its subtree finds its best place without it."""
    score = score.copy()
    for _ in range(_ALIGN_ROUNDS):
        pairs = align_trees(score, tgt.tree, src.tree, fixed=tgt.helper)
        kept = _one_to_one(pairs, score)
        if len(kept) == len(pairs):
            break
        for pair in set(pairs) - set(kept):
            score[pair] = -np.inf
    return kept


def _nearest_mapped_ancestors(image: np.ndarray, tgt: _Features) -> np.ndarray:
    """(J_target,) each joint's nearest ancestor that has an image, −1 where none has."""
    depth = tgt.ancestors.sum(axis=0)
    candidates = np.where(tgt.ancestors & (image >= 0)[:, None], depth[:, None], -1)  # [a, j]
    return np.where(candidates.max(axis=0) >= 0, np.argmax(candidates, axis=0), -1)


def _breaks(t: int, image: np.ndarray, tgt: _Features, src: _Features) -> np.ndarray:
    """(J_source,) the ancestry cost, in units of the penalty, if t followed each source joint.

    One per mapped joint that would leave its nearest mapped ancestor's image (t itself, and the
    mapped joints just below it), and one per branch beside t whose image would come below t's
    image (a head taking the joint above the ears that hang beside it: sibling branches usually
    keep to disjoint subtrees). Infinite where t's image would be above the image of one of its
    own ancestors, and for a helper bone that would break anything (a twist bone does not take
    "upper_arm.001" over the forearm).
    """
    mapped = image >= 0
    nearest = _nearest_mapped_ancestors(image, tgt)
    a = int(nearest[t])
    below = np.flatnonzero(mapped & tgt.ancestors[t] & (nearest == a))  # t would be their nearest
    breaks = (~src.ancestors[:, image[below]]).sum(axis=1).astype(float)
    if a >= 0:
        breaks += ~src.ancestors[image[a]]
        breaks -= float((~src.ancestors[image[a], image[below]]).sum())
    beside = mapped & ~tgt.ancestors[:, t] & ~tgt.ancestors[t]
    beside[t] = False
    others = np.flatnonzero(beside)
    above = nearest[others]
    top = (above < 0)[None, :] | ~src.ancestors[:, image[np.maximum(above, 0)]]  # their branch starts below s
    breaks += (src.ancestors[:, image[others]] & top).sum(axis=1)
    strict = src.helper | tgt.helper[t]
    forbidden = src.ancestors[:, image[mapped & tgt.ancestors[:, t]]].any(axis=1) | (strict & (breaks > 0))
    return np.where(forbidden, np.inf, breaks)


def _complete(pairs: list[tuple[int, int]], score: np.ndarray, tgt: _Features, src: _Features,
              penalty: float = ANCESTRY) -> list[tuple[int, int]]:
    """Greedily add one-to-one pairs worth more than the ancestry they break (two sibling chains
    under one source joint, which the alignment cannot place: a thumb and an index finger both
    under Rigify's "palm.01"; a second root tree, such as an IK foot control)."""
    pairs = list(pairs)
    image = np.full(score.shape[0], -1, dtype=np.int64)
    for t, s in pairs:
        image[t] = s
    free = score > 0.0
    free[image >= 0, :] = False
    free[:, image[image >= 0]] = False
    candidates = np.argwhere(free)
    order = np.argsort(-score[candidates[:, 0], candidates[:, 1]], kind="stable")
    breaks: dict[int, np.ndarray] = {}
    for t, s in candidates[order]:
        t, s = int(t), int(s)
        if image[t] >= 0 or np.any(image == s):
            continue
        if t not in breaks:
            breaks[t] = _breaks(t, image, tgt, src)
        if score[t, s] - penalty * breaks[t][s] <= 0.0:
            continue
        pairs.append((t, s))
        image[t] = s
        breaks.clear()  # a new pair changes everyone else's
    return pairs


def auto_map_joints(source: Rig, target: Rig) -> dict[str, str | None]:
    """For every target joint, the source joint it follows, or None (kept at rest).

    Both rigs must be in the canonical frame. The mapping is one-to-one; it keeps ancestry where
    that costs little (world-space deltas do not need it: see the module docstring).
    """
    src, tgt = _features(source), _features(target)
    score = _scores(src, tgt)
    pairs = _complete(_align(score, tgt, src), score, tgt, src)
    mapping: dict[str, str | None] = {name: None for name in target.names}
    for t, s in pairs:
        mapping[target.names[t]] = source.names[s]
    return mapping
