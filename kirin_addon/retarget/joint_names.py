"""What a joint's name says, for the joint mapping (`joint_mapping`): side, body part, limb kind and segment.

Names are normalised (namespaces, prefixes, numbering and separators stripped, camel case split) and
matched against a table of body-part words with synonyms; `name_similarity` scores two parsed names
in [−1, 1] (see the `joint_mapping` module docstring for the rules).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["JointName", "parse_joint_name", "name_similarity"]

AXIAL_CONFLICT = -0.3  # name score of two different parts of the spine/neck/head axis
END_MISMATCH = 1.0  # name penalty of an end site ("HeadTop_End") against a real joint
HELPER_MISMATCH = 0.25  # name penalty of a helper (twist, IK …) against an ordinary bone; the tree
# structure does the rest: an IK control is the foot only where the leg chain has none (Quaternius)

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
