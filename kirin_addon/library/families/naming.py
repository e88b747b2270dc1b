"""Joint names: the naming styles of real rigs (Mixamo, Rigify, glTF, Quaternius, Unreal, 3ds Max Biped,
arbitrary tokens), inventing a consistent word where a style has none for a part."""

from __future__ import annotations

import numpy as np

from ...core.creature import LEFT, RIGHT
from .builder import BoneKey, pick

NAMING_STYLES = ("mixamo", "rigify", "gltf", "quaternius", "unreal", "bip", "arbitrary")

_TRUNK = {  # role: (CamelCase word, snake_case word, numbered chain)
    "pelvis": ("Hips", "pelvis", False), "spine": ("Spine", "spine", True), "neck": ("Neck", "neck", True),
    "head": ("Head", "head", False), "jaw": ("Jaw", "jaw", False), "tail": ("Tail", "tail", True),
    "ear": ("Ear", "ear", False), "horn": ("Horn", "horn", False), "antenna": ("Antenna", "antenna", True),
    "mandible": ("Mandible", "mandible", False), "chelicera": ("Chelicera", "chelicera", False),
    "pedipalp": ("Palp", "palp", True), "abdomen": ("Abdomen", "abdomen", True),
    "hood": ("Hood", "hood", False),
    "dorsal_fin": ("DorsalFin", "fin_dorsal", False), "anal_fin": ("AnalFin", "fin_anal", False),
    "caudal_fin": ("CaudalFin", "fin_caudal", False),
}
_VERTEBRATE_SEGS = ("girdle", "upper", "lower", "meta", "digit", "digit_end")
_ARTHROPOD_SEGS = ("coxa", "femur", "tibia", "metatarsus", "tarsus")
_LIMB_TABLE = {  # style: group: words for the group's segments, in order
    "mixamo": {
        "arm": "Shoulder Arm ForeArm Hand HandIndex1 HandIndex2", "leg": "Hip UpLeg Leg Foot ToeBase Toe_End",
        "front": "Shoulder Arm ForeArm Hand HandToe HandToe_End",
        "hind": "Hip UpLeg Leg Foot ToeBase Toe_End",
        "wing": "WingShoulder WingArm WingForeArm WingHand WingFinger1 WingFinger2",
        "arthro": "Coxa Femur Tibia Metatarsus Tarsus", "pecfin": "PectoralFin", "pelfin": "PelvicFin"},
    "rigify": {
        "arm": "shoulder upper_arm forearm hand f_index f_index_end",
        "leg": "pelvis thigh shin foot toe toe_end",
        "front": "shoulder upper_arm forearm hand f_toe f_toe_end",
        "hind": "pelvis thigh shin foot toe toe_end",
        "wing": "wing_root wing wing_fore wing_hand wing_finger wing_finger_tip",
        "arthro": "coxa femur tibia metatarsus tarsus", "pecfin": "fin_pectoral", "pelfin": "fin_pelvic"},
    "quaternius": {
        "arm": "Shoulder UpperArm LowerArm Hand Fingers FingersEnd",
        "leg": "Hip UpperLeg LowerLeg Foot Toe ToeEnd",
        "front": "FrontShoulder FrontUpperLeg FrontLowerLeg FrontFoot FrontToe FrontToeEnd",
        "hind": "BackHip BackUpperLeg BackLowerLeg BackFoot BackToe BackToeEnd",
        "wing": "WingRoot Wing1 Wing2 Wing3 Wing4 Wing5", "arthro": "Coxa Femur Tibia Metatarsus Tarsus",
        "pecfin": "FinFront", "pelfin": "FinBack"},
    "unreal": {
        "arm": "clavicle upperarm lowerarm hand index_01 index_02",
        "leg": "hip thigh calf foot ball ball_end",
        "front": "scapula_front upperleg_front lowerleg_front foot_front toe_front toe_end_front",
        "hind": "hip_back thigh_back calf_back foot_back toe_back toe_end_back",
        "wing": "wing_root wing_01 wing_02 wing_03 wing_04 wing_05",
        "arthro": "coxa femur tibia metatarsus tarsus",
        "pecfin": "fin_pectoral", "pelfin": "fin_pelvic"},
    "bip": {  # 3ds Max Biped: quadruped front legs are arms, the hind leg's extra link is HorseLink
        "arm": "Clavicle UpperArm Forearm Hand Finger0 Finger0Nub", "leg": "Hip Thigh Calf Foot Toe0 Toe0Nub",
        "front": "Clavicle UpperArm Forearm Hand Finger0 Finger0Nub",
        "hind": "Hip Thigh Calf HorseLink Foot Toe0",
        "wing": "WingClavicle Wing1 Wing2 Wing3 Wing4 Wing5", "arthro": "Coxa Femur Tibia Metatarsus Tarsus",
        "pecfin": "PectoralFin", "pelfin": "PelvicFin"},
}
_LIMB_WORDS = {
    style: {group: dict(zip(_ARTHROPOD_SEGS if group == "arthro" else ("fin",) if "fin" in group
                            else _VERTEBRATE_SEGS, words.split(), strict=False))
            for group, words in table.items()}
    for style, table in _LIMB_TABLE.items()
}
# Letters and prefixes that never read as a side ('l'/'r' on their own would, see rig.mirror_name).
_TOKEN_LETTERS = "abcdefghjkmnpqstuvwxyz"
_TOKEN_PREFIXES = ("jnt", "b", "node", "bn", "joint", "def", "grp", "obj", "sk", "x", "ctrl", "j")


def _style_name(style: str, key: BoneKey, variant: str, counts: dict[str, int]) -> str:
    """The name of one bone in a side-aware naming style."""
    limb = bool(key.group)
    word = _LIMB_WORDS[style][key.group][key.role] if limb else ""
    camel, snake, chain = _TRUNK.get(key.role, ("", "", False))
    i = key.index
    if style == "mixamo":
        side = {LEFT: "Left", RIGHT: "Right"}.get(key.side, "")
        if key.group == "arthro":
            return f"{variant}{side}Leg{key.n}{word}"
        if limb:
            return f"{variant}{side}{word}"
        return f"{variant}{side}{camel}{i - 1 if chain and i > 1 else ''}"
    if style == "rigify":
        side = {LEFT: ".L", RIGHT: ".R"}.get(key.side, "")
        if key.group == "arthro":
            return f"DEF-leg{key.n}_{word}{side}"
        if limb:
            return f"DEF-{word}{side}"
        if variant == "chain" and key.role in ("pelvis", "spine", "neck", "head"):
            # Rigify's own trunk: one numbered chain from the hips to the head.
            k = {"pelvis": 0, "spine": i, "neck": counts["spine"] + i,
                 "head": counts["spine"] + counts["neck"] + 1}[key.role]
            return f"DEF-spine.{k:03d}" if k else "DEF-spine"
        return f"DEF-{snake}{side}{f'.{i - 1:03d}' if chain and i > 1 else ''}"
    if style == "quaternius":
        side = {LEFT: ".L", RIGHT: ".R"}.get(key.side, "")
        if key.group == "arthro":
            return f"Leg{key.n}{word}{side}"
        return f"{word}{side}" if limb else f"{camel}{i if chain else ''}{side}"
    if style == "unreal":
        side = {LEFT: "_l", RIGHT: "_r"}.get(key.side, "")
        if key.group == "arthro":
            return f"leg_{key.n:02d}_{word}{side}"
        return f"{word}{side}" if limb else f"{snake}{f'_{i:02d}' if chain else ''}{side}"
    if style == "bip":
        side = {LEFT: "L ", RIGHT: "R "}.get(key.side, "")
        if key.group == "arthro":
            return f"Bip01 {side}Leg{key.n} {word}"
        if limb:
            return f"Bip01 {side}{word}"
        return f"Bip01 {side}{'Pelvis' if key.role == 'pelvis' else camel}{i - 1 if chain and i > 1 else ''}"
    raise ValueError(f"Unknown naming style {style!r}.")


def joint_names(keys: list[BoneKey], style: str, rng: np.random.Generator,
                counts: dict[str, int]) -> list[str]:
    """One name per bone in `style`; `counts` holds the spine and neck lengths (Rigify's one trunk chain)."""
    count = len(keys)
    if style == "gltf":  # Blender's default names, numbered in whatever order the bones were made
        return ["Bone" if k == 0 else f"Bone.{k:03d}" for k in rng.permutation(count)]
    if style == "arbitrary":
        prefix = pick(rng, _TOKEN_PREFIXES)
        sep = pick(rng, ["_", "", "-"])
        numbers = rng.choice(100 if count <= 60 else 1000, size=count, replace=False)
        letters = rng.choice(list(_TOKEN_LETTERS), size=count)
        with_letter = rng.random() < 0.6
        return [f"{prefix}{sep}{int(k):02d}{c if with_letter else ''}"
                for k, c in zip(numbers, letters, strict=True)]
    variant = ""
    if style == "mixamo":
        variant = pick(rng, ["mixamorig:", "mixamorig1:", "mixamorig2:"], [0.7, 0.2, 0.1])
    elif style == "rigify":
        variant = pick(rng, ["chain", "named"])
    names = [_style_name(style, key, variant, counts) for key in keys]
    if len(set(names)) != count:
        raise AssertionError(f"duplicate {style} names: {sorted(n for n in names if names.count(n) > 1)}")
    return names
