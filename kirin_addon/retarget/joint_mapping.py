"""Automatic joint mapping between two rigs of different topology and naming, for retargeting.

`auto_map_joints(source, target)` says, for every target joint, which source joint it follows
(or None: the retargeter keeps it at rest relative to its parent). Both rigs must already be in
the canonical frame (+Z up, −Y forward, +X the creature's left, unit body size, origin at the
main root on the ground), so their rest geometry is directly comparable; deform flags count.
`mapping_to_text` / `mapping_from_text` give an editable "target = source" text form,
`validate_mapping` checks one.

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
* side: +1 same side (by name, else by the sign of x), −1 one centred and one sided; opposite
  sides are forbidden outright. leaf: −1 when one joint is an end effector and the other is not.
  hub: +1 for the two hubs, +0.5 for the two main roots where those differ. deform: 1 when one
  bone deforms and the other does not. under: 1 when one is a root bone under the body (above
  the hub, lower than a third of its height: a "Root" on the floor) and the other is not, so the
  hips never follow a floor bone.

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

import re
from dataclasses import dataclass

import numpy as np

from ..core.rig import Rig

__all__ = [
    "JointName",
    "parse_joint_name",
    "name_similarity",
    "joint_scores",
    "auto_map_joints",
    "mapping_to_text",
    "mapping_from_text",
    "validate_mapping",
]

# Weights of the score (see the module docstring).
W_NAME, W_POSITION, W_DIRECTION, W_UP, W_DOWN, W_ALONG, W_SIDE, W_LEAF, W_ROOTS, BIAS = (
    2.5, 1.0, 0.5, 0.5, 0.5, 0.75, 0.5, 0.25, 1.0, 0.75)
AXIAL_CONFLICT = -0.3  # name score of two different parts of the spine/neck/head axis
END_MISMATCH = 1.0  # name penalty of an end site ("HeadTop_End") against a real joint
W_DEFORM = 0.5  # penalty of a deforming bone against one that does not deform
W_UNDER = 1.0  # penalty of a root bone under the body ("Root" on the floor) against a body joint
HELPER_MISMATCH = 0.25  # name penalty of a helper (twist, IK …) against an ordinary bone; the tree
# structure does the rest: an IK control is the foot only where the leg chain has none (Quaternius)
SIGMA_POSITION = 0.12  # body sizes
SIGMA_PATH = 0.10  # body sizes
SIGMA_ALONG = 0.10  # fraction of a chain
_SIDE_EPS = 0.02  # |x| below this (body sizes) counts as the centre line
GAP = 0.3  # cost of skipping a joint between mapped ones
ANCESTRY = 1.0  # cost of a mapped joint whose image is not below its nearest mapped ancestor's image
_ALIGN_ROUNDS = 4  # alignments at most, each ruling out the pairs that lost a source joint
_HUB_BRANCH = 0.3  # a branch this long relative to the longest one makes a joint the hub
_UNDER = 1 / 3  # a joint above the hub lower than this fraction of its height is a root bone under the body
_FLOOR = 0.05  # body sizes: a tree with a head lower than this reaches the floor

# --------------------------------------------------------------------------- names

# Word boundaries inside a name: "LeftUpLeg", "LHipJoint", "Spine1".
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])"
                    r"|(?<=[0-9])(?=[A-Za-z])")
_NOISE = frozenset({
    "def", "org", "mch", "mixamorig", "armature", "bip", "biped", "valve", "bn", "bone", "bones", "jnt",
    "joint", "joints", "jt", "cc", "base", "skeleton", "skel", "rig", "deform", "grp", "node", "sk",
})
_LEFT = frozenset({"l", "left", "lft", "lt"})
_RIGHT = frozenset({"r", "right", "rgt", "rt"})
_END = frozenset({"end", "nub", "tip", "endsite", "site"})
_HELPER = frozenset({
    "ik", "fk", "pole", "target", "ctrl", "control", "ctl", "helper", "twist", "roll", "tweak", "socket",
    "weapon", "prop", "attach", "offset", "mechanism",
})
_FRONT = re.compile(r"front|frnt|fore(?!arm|finger|head)")
# "Back" means hind next to a limb word, before or after it ("BackLowerLeg", "thigh_back_l": the
# separators are gone from the core); alone ("Back", "LowerBack", "spine_back") it is the spine.
_LIMB_WORDS = ("leg", "foot", "feet", "paw", "hoof", "thigh", "shin", "calf", "toe", "knee", "ankle", "hip",
               "heel", "hock")
_HIND = re.compile(r"hind|(?<!fo)rear"
                   rf"|back(?=\w*(?:{'|'.join(_LIMB_WORDS)}|shoulder))"
                   rf"|(?:{'|'.join(f'(?<={w})' for w in _LIMB_WORDS)})back")

# (pattern on the joined name, part, limb kind, limb segment, confidence); first match wins, so
# specific words come before the words they contain ("forearm" before "arm", "ear").
_PARTS: list[tuple[re.Pattern[str], str, str | None, str | None, float]] = [
    (re.compile(p), part, kind, segment, conf) for p, part, kind, segment, conf in [
        (r"thumb|pollex", "limb", "front", "thumb", 1.0),
        (r"index|pointer", "limb", "front", "index", 1.0),
        (r"pinky|pinkie|little", "limb", "front", "pinky", 1.0),
        (r"upperbody|lowerbody|spine|chest|torso|abdomen|belly|waist|stomach|ribcage|thorax|lumbar"
         r"|thoracic|trunk|back", "spine", None, None, 1.0),
        (r"neck|cervical", "neck", None, None, 1.0),
        (r"tail", "tail", None, None, 1.0),
        (r"middle", "limb", "front", "middle", 1.0),
        (r"ring", "limb", "front", "ring", 1.0),
        (r"fingers?|digits?|claws?|phalan", "limb", None, "digit", 0.7),
        (r"toe", "limb", "hind", "digit", 1.0),
        (r"clavicle|collar|scapula", "limb", "front", "girdle", 1.0),
        (r"shoulder", "limb", "front", "girdle", 1.0),  # unsided "Shoulders": see parse_joint_name
        (r"forearm|lowerarm|lowarm|elbow|ulna|radius", "limb", "front", "lower", 1.0),
        (r"upperarm|uparm|humerus|bicep", "limb", "front", "upper", 1.0),
        (r"upperleg|upleg|thigh|femur", "limb", "hind", "upper", 1.0),
        (r"lowerleg|lowleg|shin|calf|knee|tibia|shank|crus", "limb", "hind", "lower", 1.0),
        (r"hand|wrist|palm|manus", "limb", "front", "end", 1.0),
        (r"foot|feet|ankle|paw|hoof|heel", "limb", "hind", "end", 1.0),
        (r"arm", "limb", "front", "upper", 0.5),
        (r"leg", "limb", "hind", "lower", 0.5),
        (r"hip|pelvis|haunch", "limb", "hind", "girdle", 0.7),  # unsided: the hips
        (r"wing", "limb", "front", None, 0.5),
        (r"cog|centerofgravity|centerofmass", "hips", None, None, 1.0),
        (r"root|body|master|origin|world|main", "root", None, None, 0.7),
        (r"jaw|chin|mandible", "jaw", None, None, 1.0),
        (r"eyelid|lid", "eyelid", None, None, 1.0),
        (r"eye", "eye", None, None, 1.0),
        (r"ear", "ear", None, None, 1.0),
        (r"tongue", "tongue", None, None, 1.0),
        (r"nose|snout|muzzle|beak", "nose", None, None, 1.0),
        (r"lip", "lip", None, None, 1.0),
        (r"brow", "brow", None, None, 1.0),
        (r"teeth|tooth", "teeth", None, None, 1.0),
        (r"mouth", "mouth", None, None, 1.0),
        (r"cheek", "cheek", None, None, 1.0),
        (r"head|skull|cranium", "head", None, None, 1.0),
        (r"breast", "breast", None, None, 1.0),
        (r"hair", "hair", None, None, 1.0),
        (r"horn|antler", "horn", None, None, 1.0),
        (r"fin", "fin", None, None, 0.7),
    ]
]
_AXIAL = frozenset({"hips", "root", "spine", "neck", "head"})
_FACE = frozenset({"jaw", "eyelid", "eye", "ear", "tongue", "nose", "lip", "brow", "teeth", "mouth", "cheek"})
_FINGERS = frozenset({"thumb", "index", "middle", "ring", "pinky", "digit"})


@dataclass(frozen=True)
class JointName:
    """What a joint's name says. side: +1 left (+X), −1 right, 0 centre or not said."""

    side: int
    part: str | None  # "hips", "spine", "neck", "head", "limb", "tail", "jaw", … or None
    kind: str | None  # limbs: "front" (arms, fore legs, wings) or "hind" (legs); None if unknown
    segment: str | None  # limbs: girdle/upper/lower/end/digit or a finger name
    confidence: float
    helper: bool  # twist, IK, pole … bones
    end: bool  # end sites: "_End", "Nub", "Tip"
    core: str  # what is left of the name once side words, numbers and prefixes are gone


def _words(name: str) -> list[str]:
    name = re.sub(r"^.*[:|]", "", name)  # namespaces: "mixamorig:", "Armature|"
    return [w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub(" ", name).lower()) if w]


def _part_at_start(text: str) -> bool:
    return any(p.match(text) for p, *_ in _PARTS)


def parse_joint_name(name: str) -> JointName:
    """Normalise a joint name and read its side and body part."""
    side = 0
    helper = end = False
    kept: list[str] = []
    for word in _words(name):
        if word in _LEFT or word in _RIGHT:
            side = side or (1 if word in _LEFT else -1)
            continue
        for word_side, w in ((1, "left"), (-1, "right")):  # glued: "lefthand", "handright"
            if word.startswith(w) or word.endswith(w):
                side = side or word_side
                word = word[len(w):] if word.startswith(w) else word[: -len(w)]
        # Glued single-letter sides: "lhand", "rFoot" (but not "ring", "leg", "lowerarm").
        if len(word) >= 4 and word[0] in "lr" and _part_at_start(word[1:]) and not _part_at_start(word):
            side = side or (1 if word[0] == "l" else -1)
            word = word[1:]
        if word.isdigit() or word in _NOISE or (len(word) == 1 and word not in "lr"):
            continue
        if word in _END:
            end = True
            continue
        if word in _HELPER:
            helper = True
            continue
        kept.append(word)
    core = "".join(kept)
    qualifier = None
    front, hind = _FRONT.search(core), _HIND.search(core)
    if front or hind:
        match = front or hind
        qualifier = "front" if front else "hind"
        text = core[: match.start()] + core[match.end():]
    elif side and core == "back":  # "Back.L": the spine is never sided, a hind limb is
        qualifier, text = "hind", ""
    else:
        text = core
    part = kind = segment = None
    confidence = 0.0
    for pattern, p_part, p_kind, p_segment, p_conf in _PARTS:
        if pattern.search(text):
            part, kind, segment, confidence = p_part, p_kind, p_segment, p_conf
            break
    if part == "limb" and segment == "girdle" and side == 0:
        # "Hips"/"Pelvis" and a quadruped's unsided "Shoulders" are parts of the axis.
        part, kind, segment = ("hips", None, None) if "shoulder" not in text else ("spine", None, None)
        confidence = 1.0 if part == "hips" else 0.5
    if part == "limb" and qualifier is not None:
        kind = qualifier
    if part is None and qualifier is not None:
        part, kind, confidence = "limb", qualifier, 0.5
    return JointName(side, part, kind, segment, confidence, helper, end, core)


def name_similarity(a: JointName, b: JointName) -> float:
    """How much two parsed names agree, in [−1, 1] (0 when either says nothing)."""
    if a.part is None or b.part is None:
        score = 0.8 if a.part is None and b.part is None and a.core and a.core == b.core else 0.0
    elif a.part == "limb" and b.part == "limb":
        conf = min(a.confidence, b.confidence)
        if a.kind is not None and b.kind is not None and a.kind != b.kind:
            score = -1.0
        elif a.segment is None or b.segment is None:
            score = 0.3 * conf
        elif a.segment == b.segment:
            score = conf
        elif a.segment in _FINGERS and b.segment in _FINGERS:
            score = 0.4 * conf if "digit" in (a.segment, b.segment) else -0.6
        else:
            score = -0.3 * conf
    elif a.part == b.part:
        score = min(a.confidence, b.confidence)
    elif {a.part, b.part} == {"hips", "root"}:
        score = 0.5
    elif a.part in _AXIAL and b.part in _AXIAL:
        score = AXIAL_CONFLICT
    elif a.part in _FACE and b.part in _FACE:
        score = -0.5
    else:
        score = -1.0
    if a.core and b.core:  # a name that says nothing ("Bone.012") may well be an end site
        if a.helper != b.helper:
            score -= HELPER_MISMATCH
        if a.end != b.end:
            score -= END_MISMATCH
    return score


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


def _body_tree(rig: Rig, hub: int, sides: np.ndarray, ancestors: np.ndarray) -> tuple[Rig, frozenset[int]]:
    """The hierarchy the features and the alignment follow. A tree standing on the floor beside
    the body's (a second root tree such as an IK foot control at the paw, the legs under a floor
    bone beside the hips) hangs from the body's joint nearest to it, where that is the end of a
    chain on the same side or the hub itself: the body reaches the floor through it, and world
    deltas do not care which bone is the parent. Also returns the joints hung."""
    body = np.flatnonzero(ancestors[hub])
    body = np.append(body, hub)
    line = ancestors[:, hub]  # the joints above the hub
    parents = rig.parents.copy()
    for top in range(rig.joint_count):
        p = parents[top]
        if top in body or line[top] or (p >= 0 and not line[p]):
            continue  # only the first joint of a tree beside the body's
        tree = np.append(np.flatnonzero(ancestors[top]), top)
        if rig.heads[tree, 2].min() >= _FLOOR:
            continue
        anchor = int(body[np.argmin(np.linalg.norm(rig.heads[body] - rig.heads[top], axis=1))])
        if (anchor == hub or not rig.children[anchor]) and sides[anchor] in (0, sides[top]):
            parents[top] = anchor
    hung = frozenset(np.flatnonzero(parents != rig.parents).tolist())
    if not hung:
        return rig, hung
    return Rig(list(rig.names), parents, rig.rest, rig.tails, rig.deform), hung


def _sides(rig: Rig, names: list[JointName]) -> np.ndarray:
    """+1 left, −1 right, 0 centre: by name, else by geometry (a bone starting on the centre line,
    CMU's "LHipJoint", is judged by its middle)."""
    heads, mids = rig.heads, (rig.heads + rig.tails) / 2
    x = np.where(np.abs(heads[:, 0]) > _SIDE_EPS, heads[:, 0], mids[:, 0])
    geometric = np.where(np.abs(x) > _SIDE_EPS, np.sign(x), 0).astype(np.int64)
    return np.array([n.side if n.side else g for n, g in zip(names, geometric, strict=True)], dtype=np.int64)


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
    offsets, downstream = _reach(rig)
    hub = _find_hub(rig, _major_children(rig, offsets, downstream, names))
    tree, hung = _body_tree(rig, hub, sides, _ancestors(rig))
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
                     rig.main_root, hub, ancestors, names, rig.deform.copy(), under,
                     np.array([n.helper for n in names], dtype=bool), tree)


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


# --------------------------------------------------------------------------- assignment


def _hungarian_min(cost: np.ndarray) -> list[tuple[int, int]]:
    """Minimum-cost assignment of every row of an (n, m) matrix with n <= m (numpy fallback)."""
    n, m = cost.shape
    u, v = np.zeros(n + 1), np.zeros(m + 1)
    owner = np.zeros(m + 1, dtype=np.int64)  # row (1-based) assigned to each column; column 0 is virtual
    way = np.zeros(m + 1, dtype=np.int64)
    for row in range(1, n + 1):
        owner[0] = row
        col = 0
        reduced = np.full(m + 1, np.inf)
        used = np.zeros(m + 1, dtype=bool)
        while owner[col] != 0:
            used[col] = True
            r = owner[col]
            free = ~used
            free[0] = False
            candidate = cost[r - 1] - u[r] - v[1:]
            better = free[1:] & (candidate < reduced[1:])
            reduced[1:][better] = candidate[better]
            way[1:][better] = col
            masked = np.where(free, reduced, np.inf)
            nxt = int(np.argmin(masked))
            delta = masked[nxt]
            u[owner[used]] += delta
            v[used] -= delta
            reduced[free] -= delta
            col = nxt
        while col:
            prev = way[col]
            owner[col] = owner[prev]
            col = prev
    return [(int(owner[c]) - 1, c - 1) for c in range(1, m + 1) if owner[c]]


def _assign_max(weights: np.ndarray) -> list[tuple[int, int]]:
    """Maximum-weight assignment (rows to distinct columns) of a small non-negative matrix."""
    try:  # scipy is there outside Blender; inside Blender only numpy is guaranteed
        from scipy.optimize import linear_sum_assignment
    except ImportError:
        linear_sum_assignment = None
    if linear_sum_assignment is not None:
        rows, cols = linear_sum_assignment(-weights)
        return list(zip(rows.tolist(), cols.tolist(), strict=True))
    if weights.shape[0] <= weights.shape[1]:
        return _hungarian_min(-weights)
    return [(r, c) for c, r in _hungarian_min(-weights.T)]


def _close(a: float, b: float) -> bool:
    return bool(np.isfinite(a)) and abs(a - b) <= 1e-9 * (1.0 + abs(a) + abs(b))


def _tree_tables(children: list[list[int]]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Nodes grouped by height (leaves first), children padded with the sentinel index len(children)
    (one past the last node), and the child counts."""
    count = len(children)
    height = np.zeros(count, dtype=np.int64)
    order: list[int] = []
    stack = [count - 1]  # the virtual root is last and above everything
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(children[node])
    for node in reversed(order):
        if children[node]:
            height[node] = 1 + max(height[c] for c in children[node])
    levels = [np.flatnonzero(height == h) for h in range(int(height.max()) + 1)]
    width = max(1, max(len(k) for k in children))
    padded = np.full((count, width), count, dtype=np.int64)
    for node, kids in enumerate(children):
        padded[node, : len(kids)] = kids
    return levels, padded, np.array([len(k) for k in children])


def _unrelated(children: list[list[int]]) -> np.ndarray:
    """(n, n) bool: neither node is in the other's subtree (the last node is the virtual root)."""
    count = len(children)
    below = np.eye(count, dtype=bool)  # [a, j]: j is in a's subtree
    order, stack = [], [count - 1]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(children[node])
    for node in reversed(order):
        for c in children[node]:
            below[node] |= below[c]
    return ~(below | below.T)


@dataclass
class _Alignment:
    """Tables of the alignment's dynamic programme (see _align_trees). Index n_t / n_s is a rig's
    virtual root, n_t + 1 / n_s + 1 the padding's sentinel, which never wins a max."""

    t_kids: list[list[int]]
    s_kids: list[list[int]]
    gain: np.ndarray  # [t, s]: the pair's score where positive, else −inf
    unrelated: np.ndarray  # source joints (with the virtual root), see _unrelated
    gap: float
    penalty: float
    d: np.ndarray  # [t, s]: best alignment of t's subtree into s's subtree
    f: np.ndarray  # [t, s]: of t's child forest into s's child forest
    escape: np.ndarray  # [c, s]: c's subtree placed outside s's subtree and line, less the penalty (≥ 0)

    def fill_escapes(self, rows: np.ndarray) -> None:
        """Escapes of finished rows: the best d[c, s'] over s' unrelated to s, less the penalty."""
        width = self.unrelated.shape[0]
        for c in rows:
            best = np.where(self.unrelated, self.d[c, :width][None, :], -np.inf).max(axis=1)
            self.escape[c, :width] = np.maximum(best - self.penalty, 0.0)

    def escape_target(self, c: int, s: int) -> int:
        width = self.unrelated.shape[0]
        return int(np.argmax(np.where(self.unrelated[s], self.d[c, :width], -np.inf)))

    def matching(self, t: int, s: int) -> tuple[float, list[tuple[int, int]], list[int]]:
        """t's children into s's children (distinct subtrees), or each elsewhere at the penalty:
        the value, the pairs of children and the escaped children."""
        tk, sk = self.t_kids[t], self.s_kids[s]
        escapes = self.escape[tk, s]
        value = float(escapes.sum())
        pairs: list[tuple[int, int]] = []
        if tk and sk:
            gains = self.d[np.ix_(tk, sk)] - escapes[:, None]
            if len(tk) == 1 or len(sk) == 1:
                picked = [np.unravel_index(int(np.argmax(gains)), gains.shape)]
            else:
                picked = _assign_max(np.maximum(gains, 0.0))
            picked = [(int(r), int(c)) for r, c in picked if gains[r, c] > 0.0]
            value += float(sum(gains[r, c] for r, c in picked))
            pairs = [(tk[r], sk[c]) for r, c in picked]
        placed = {a for a, _ in pairs}
        return value, pairs, [c for c, e in zip(tk, escapes, strict=True) if c not in placed and e > 0.0]


def _new_alignment(score: np.ndarray, t_kids: list[list[int]], s_kids: list[list[int]], gap: float,
                   penalty: float) -> _Alignment:
    nt, ns = score.shape
    gain = np.full((nt + 1, ns + 1), -np.inf)
    gain[:nt, :ns] = np.where(score > 0.0, score, -np.inf)
    tables = [np.full((nt + 2, ns + 2), -np.inf) for _ in range(2)]
    return _Alignment(t_kids, s_kids, gain, _unrelated(s_kids), gap, penalty, *tables,
                      np.zeros((nt + 2, ns + 2)))


def _fill_block(al: _Alignment, ts: np.ndarray, tp: np.ndarray, tc: np.ndarray, ss: np.ndarray,
                sp: np.ndarray, sc: np.ndarray) -> None:
    """d and f for target joints ts (children tp, counts tc) against source joints ss, in bulk."""
    d, f, gap = al.d, al.f, al.gap
    escapes = al.escape[tp[:, :, None], ss[None, None, :]]  # (a, width_t, b); 0 for the padding
    # Children matched to children (one target child, or one source child, in bulk), the other
    # children placed elsewhere at the penalty.
    one_t = d[tp[:, :1, None], sp[None, :, :]].max(axis=-1) - escapes[:, 0]  # (a, b)
    one_s = (d[tp[:, :, None], sp[None, :, 0]] - escapes).max(axis=1)
    match = escapes.sum(axis=1) + np.maximum(np.where(tc == 1, one_t, np.where(sc == 1, one_s, 0.0)), 0.0)
    for i, j in zip(*np.nonzero((tc >= 2) & (sc >= 2)), strict=True):
        match[i, j] = al.matching(int(ts[i]), int(ss[j]))[0]
    block_f = np.maximum.reduce([
        match,
        f[ts[:, None, None], sp[None]].max(axis=-1) - gap,  # source joint skipped
        f[tp[:, :, None], ss[None, None, :]].max(axis=1) - gap,  # target joint skipped
    ])
    f[np.ix_(ts, ss)] = block_f
    d[np.ix_(ts, ss)] = np.maximum.reduce([
        block_f + al.gain[np.ix_(ts, ss)],
        block_f - 2.0 * gap,
        np.zeros_like(block_f),
        d[ts[:, None, None], sp[None]].max(axis=-1) - gap,
        d[tp[:, :, None], ss[None, None, :]].max(axis=1) - gap,
    ])


def _backtrack(al: _Alignment, nt: int, ns: int) -> list[tuple[int, int]]:
    """The pairs of the optimum, re-deriving which option gave each table entry."""
    d, f, gap = al.d, al.f, al.gap

    def f_options(t: int, s: int) -> list[tuple[float, tuple]]:
        options: list[tuple[float, tuple]] = [(al.matching(t, s)[0], ("match",))]
        options += [(f[t, c] - gap, ("f", t, c)) for c in al.s_kids[s]]
        options += [(f[c, s] - gap, ("f", c, s)) for c in al.t_kids[t]]
        return options

    def d_options(t: int, s: int) -> list[tuple[float, tuple]]:
        options: list[tuple[float, tuple]] = [(f[t, s] + al.gain[t, s], ("map",)),
                                              (f[t, s] - 2.0 * gap, ("f", t, s))]
        options += [(d[t, c] - gap, ("d", t, c)) for c in al.s_kids[s]]
        options += [(d[c, s] - gap, ("d", c, s)) for c in al.t_kids[t]]
        return options

    result: list[tuple[int, int]] = []
    stack: list[tuple] = [("d", nt, ns)]
    while stack:
        what, t, s = stack.pop()
        table, options = (d, d_options) if what == "d" else (f, f_options)
        if table[t, s] <= 0.0:
            continue
        action = next((a for value, a in options(t, s) if _close(value, table[t, s])), None)
        if action is None:  # cannot happen: the optimum is one of the options
            raise AssertionError("joint alignment backtracking failed")
        if action[0] == "map":
            result.append((t, s))
            stack.append(("f", t, s))
        elif action[0] == "match":
            _, pairs, escaped = al.matching(t, s)
            stack.extend(("d", a, b) for a, b in pairs if d[a, b] > 0.0)
            stack.extend(("d", c, al.escape_target(c, s)) for c in escaped)
        else:
            stack.append(action)
    return result


def _align_trees(score: np.ndarray, target: Rig, source: Rig, gap: float = GAP, penalty: float = ANCESTRY,
                 fixed: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Best set of (target, source) pairs, ancestry kept where it pays.

    Maximises the sum of the pairs' scores minus `gap` for every joint skipped between mapped
    ones (so a chain maps contiguously where it can: the foot, not the toe, follows a foot) and
    minus `penalty` for every target subtree placed outside the image of its parent's subtree
    (ears beside the head, legs beside the hips, an IK foot outside the leg chain).
    D[t, s]: best alignment of the subtree of t into the subtree of s; F[t, s]: of t's child
    forest into s's child forest, where each child either goes into a distinct child subtree of
    s or, at the penalty, into the best subtree unrelated to s. Each rig gets a virtual root above
    its roots. The tables are filled a block of (target height, source height) at a time,
    children before parents. Subtrees placed elsewhere may claim a source joint twice: the
    caller keeps the better pair. The subtrees of `fixed` target joints (helper bones) stay in place.
    """
    nt, ns = target.joint_count, source.joint_count
    t_kids = [list(k) for k in target.children] + [[int(r) for r in target.roots]]
    s_kids = [list(k) for k in source.children] + [[int(r) for r in source.roots]]
    t_levels, t_pad, t_count = _tree_tables(t_kids)
    s_levels, s_pad, s_count = _tree_tables(s_kids)
    al = _new_alignment(score, t_kids, s_kids, gap, penalty)
    movable = np.ones(nt + 1, dtype=bool)
    if fixed is not None:
        movable[:nt] = ~fixed
    for ts in t_levels:
        for ss in s_levels:
            _fill_block(al, ts, t_pad[ts], t_count[ts][:, None], ss, s_pad[ss], s_count[ss][None, :])
        al.fill_escapes(ts[movable[ts]])
    return _backtrack(al, nt, ns)


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
        pairs = _align_trees(score, tgt.tree, src.tree, fixed=tgt.helper)
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


# --------------------------------------------------------------------------- text and checks

_HEADER = "# Kirin joint mapping: one 'target = source' line per target joint; 'target =' keeps it at rest."


def mapping_to_text(mapping: dict[str, str | None]) -> str:
    """One "target = source" line per joint ("target =" for unmapped), after a comment header."""
    lines = [_HEADER]
    lines.extend(f"{t} = {s}" if s else f"{t} =" for t, s in mapping.items())
    return "\n".join(lines) + "\n"


def mapping_from_text(text: str, source: Rig, target: Rig) -> dict[str, str | None]:
    """Parse mapping_to_text's format; every target joint is in the result (missing lines: None).

    Blank lines and lines starting with '#' are ignored. Raises ValueError naming the first bad
    line: no '=', an unknown target or source joint, or a target listed twice.
    """
    targets, sources = set(target.names), set(source.names)
    mapping: dict[str, str | None] = {name: None for name in target.names}
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise ValueError(f"Line {number} ('{line}'): expected 'target = source'.")
        # Names may contain '=' in theory: take the split whose two sides are known joints.
        splits = [(line[:i].strip(), line[i + 1:].strip()) for i, ch in enumerate(line) if ch == "="]
        valid = [(t, s) for t, s in splits if t in targets and (not s or s in sources)]
        if not valid:
            left, right = splits[0]
            if left not in targets:
                raise ValueError(f"Line {number} ('{line}'): '{left}' is not a joint of the target rig.")
            raise ValueError(f"Line {number} ('{line}'): '{right}' is not a joint of the source rig.")
        name, value = valid[0]
        if name in seen:
            raise ValueError(f"Line {number} ('{line}'): target joint '{name}' was already mapped "
                             f"on line {seen[name]}.")
        seen[name] = number
        mapping[name] = value or None
    return mapping


def validate_mapping(mapping: dict[str, str | None], source: Rig, target: Rig) -> list[str]:
    """Raise ValueError if the mapping names joints the rigs lack; return warnings otherwise.

    Target joints missing from the mapping count as unmapped. Warnings (for the user, not
    errors): a source joint followed by several target joints, a pair on opposite sides by
    name, a pair that reverses ancestry.
    """
    if not isinstance(mapping, dict):
        raise ValueError("A joint mapping must be a dict of target joint → source joint or None.")
    targets, sources = set(target.names), set(source.names)
    for t, s in mapping.items():
        if t not in targets:
            raise ValueError(f"Mapping names '{t}', which is not a joint of the target rig.")
        if s is not None and not isinstance(s, str):
            raise ValueError(f"Mapping of '{t}' must be a source joint name or None, got {s!r}.")
        if s and s not in sources:
            raise ValueError(f"Mapping sends '{t}' to '{s}', which is not a joint of the source rig.")
    warnings: list[str] = []
    users: dict[str, list[str]] = {}
    for t, s in mapping.items():
        if s:
            users.setdefault(s, []).append(t)
    for s, ts in users.items():
        if len(ts) > 1:
            warnings.append(f"Source joint '{s}' drives several target joints: {', '.join(ts)}.")
    for t, s in mapping.items():
        if s and parse_joint_name(t).side * parse_joint_name(s).side < 0:
            warnings.append(f"'{t}' follows '{s}', which is on the other side.")
    # Ancestry: the source image of a joint's nearest mapped ancestor should be an ancestor of its image.
    image = {target.index(t): source.index(s) for t, s in mapping.items() if s}
    for t, s in image.items():
        a = int(target.parents[t])
        while a >= 0 and a not in image:
            a = int(target.parents[a])
        if a < 0 or image[a] == s:
            continue
        p = int(source.parents[s])
        while p >= 0 and p != image[a]:
            p = int(source.parents[p])
        if p < 0:
            warnings.append(f"'{target.names[t]}' follows '{source.names[s]}', which is not below "
                            f"'{source.names[image[a]]}' (followed by its ancestor '{target.names[a]}').")
    return warnings
