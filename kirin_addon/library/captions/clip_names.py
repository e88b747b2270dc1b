"""Authored clip names ("Gallop_Jump", "AnimalArmature|Walk", "Jump_toIdle", "01_01") read as
descriptions: tokens, lemmas, actions, segments, the family's usual actions."""

from __future__ import annotations

import random
import re

import numpy as np

from ...core.creature import FAMILIES
from .description import MotionDescription
from .lexicon import _LEXICON, _STOPWORDS, species_family
from .paraphrase import paraphrases
from .phrasing import _manner_kind

_CLIP_ACTIONS = {
    "walk": "walk", "stroll": "walk", "trot": "trot", "jog": "trot", "pace": "pace", "canter": "canter",
    "lope": "canter", "gallop": "gallop", "bound": "bound", "pronk": "pronk", "stot": "pronk", "sit": "sit",
    "lie": "lie_down", "lay": "lie_down", "sleep": "lie_down", "standup": "stand_up", "getup": "stand_up",
    "rear": "rear_up", "jump": "jump", "leap": "jump", "hop": "hop", "survey": "look_around",
    "lookaround": "look_around", "look": "look_around", "sniff": "sniff", "smell": "sniff", "shake": "shake",
    "wag": "wag_tail", "idle": "idle", "stand": "idle", "breathe": "idle", "rest": "idle", "eat": "eat",
    "graze": "eat", "feed": "eat", "drink": "eat", "attack": "attack", "die": "death", "dead": "death",
    "death": "death", "hit": "hit", "hitreact": "hit", "react": "hit", "hurt": "hit", "damage": "hit",
    "flinch": "hit", "recoil": "hit",
    "run": "run", "sprint": "run", "crouch": "crouch", "squat": "crouch", "wave": "wave", "turn": "turn",
    "flap": "flap", "glide": "glide", "soar": "glide", "peck": "peck", "fly": "fly", "flight": "fly",
    "hover": "fly", "takeoff": "takeoff", "land": "land", "slither": "slither", "crawl": "slither",
    "sidewind": "sidewind", "coil": "coil", "strike": "strike", "swim": "swim", "roar": "roar",
    "halt": "stop", "tpose": "idle", "sneak": "walk", "limp": "walk",
    **{action: action for action in _LEXICON},
}
_CLIP_BIGRAMS = {
    ("look", "around"): "look_around", ("lie", "down"): "lie_down", ("lay", "down"): "lie_down",
    ("sit", "down"): "sit", ("stand", "up"): "stand_up", ("get", "up"): "stand_up", ("rear", "up"): "rear_up",
    ("wag", "tail"): "wag_tail", ("tail", "wag"): "wag_tail", ("hit", "react"): "hit",
    ("take", "off"): "takeoff", ("t", "pose"): "tpose", ("in", "place"): "inplace",
    ("head", "low"): "headlow", ("full", "speed"): "fullspeed", ("top", "speed"): "topspeed",
}
_ATTACK_KINDS = frozenset({"headbutt", "bite", "kick", "punch", "claw", "slash", "swipe", "stomp", "tailwhip",
                           "ram", "gore", "sting", "charge", "slam", "tackle"})
_CLIP_DIRECTIONS = {"left": "left", "l": "left", "right": "right", "r": "right", "forward": "forward",
                    "fwd": "forward", "front": "forward", "back": "backward", "backward": "backward",
                    "bwd": "backward", "circle": "in a circle", "inplace": "in place"}
_CLIP_SPEEDS = {"fast": "quickly", "quick": "quickly", "slow": "slowly", "slowly": "slowly",
                "quickly": "quickly", "brisk": "briskly", "briskly": "briskly", "rapidly": "rapidly",
                "sluggishly": "sluggishly", "fullspeed": "at full speed", "topspeed": "at top speed"}
# "very slowly", "extremely fast": the next speed word one bucket further out.
_INTENSIFIERS = frozenset({"very", "extremely", "really", "super"})
_INTENSIFIED = {"slowly": "very slowly", "quickly": "very fast", "briskly": "very fast",
                "rapidly": "very fast"}
_CLIP_MANNER = {"headlow": "with a lowered head", "tpose": "in a T-pose", "limp": "limping",
                "sneak": "stealthily", "stealth": "stealthily", "injured": "injured", "drunk": "drunk",
                "happy": "happy", "sad": "sad", "angry": "angry", "tired": "tired", "scared": "scared"}
_TRANSITIONS = frozenset({"to", "into", "then", "2"})
_LOCOMOTION = frozenset({"walk", "trot", "pace", "canter", "gallop", "bound", "run", "hop", "swim", "fly",
                         "slither", "sidewind", "tripod_gait", "wave_gait", "glide", "move"})
# (family, action) → (action, speed_word) where the family says it differently
_FAMILY_ALIASES: dict[tuple[str, str], tuple[str, str | None]] = {
    ("quadruped", "run"): ("gallop", None), ("dragon", "run"): ("gallop", None),
    ("quadruped", "slither"): ("walk", "slowly"), ("biped", "trot"): ("run", "slowly"),
    ("biped", "gallop"): ("run", "quickly"), ("biped", "slither"): ("crouch", None),
    ("bird", "run"): ("walk", "quickly"), ("bird", "jump"): ("hop", None),
    ("serpent", "walk"): ("slither", None), ("serpent", "run"): ("slither", "quickly"),
    ("serpent", "attack"): ("strike", None),
}
for _fam in ("fish",):
    for _act in ("walk", "run", "trot", "gallop", "slither", "fly"):
        _FAMILY_ALIASES[(_fam, _act)] = ("swim", None)
for _fam in ("hexapod", "spider"):
    for _act in ("run", "trot", "gallop"):
        _FAMILY_ALIASES[(_fam, _act)] = ("walk", "quickly")
    _FAMILY_ALIASES[(_fam, "slither")] = ("walk", "slowly")


def _tokens(name: str) -> list[str]:
    s = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    s = re.sub(r"([A-Za-z])(\d)", r"\1 \2", s)
    s = re.sub(r"(\d)([A-Za-z])", r"\1 \2", s)
    return [t for t in re.split(r"[^A-Za-z0-9]+", s.lower()) if t]


def _lemma(token: str) -> str:
    """The dictionary form of a clip word ('Eating' → 'eat', 'Running' → 'run', 'Dies' → 'die')."""
    known = (_CLIP_ACTIONS.keys() | _ATTACK_KINDS | _CLIP_DIRECTIONS.keys() | _CLIP_SPEEDS.keys())
    candidates = [token]
    if token.endswith("ing") and len(token) > 4:
        stem = token[:-3]
        candidates += [stem, stem + "e"]
        if len(stem) > 2 and stem[-1] == stem[-2]:
            candidates.append(stem[:-1])
        if stem.endswith("y"):
            candidates.append(stem[:-1] + "ie")
    if token.endswith("s") and len(token) > 3:
        candidates += [token[:-1], token[:-2]]
    return next((c for c in candidates if c in known), token)


def _clip_words(clip_name: str) -> list[str]:
    """The tokens of the most specific '|' part of a name that says anything."""
    pieces = [p for p in clip_name.split("|") if p.strip()] or [clip_name]
    for piece in reversed(pieces):
        toks = _tokens(piece)
        if any(t not in _STOPWORDS and not t.isdigit() for t in toks):
            return toks
    return _tokens(pieces[-1])



def _clip_tokens(raw: list[str]) -> list[str]:
    """Bigrams first ("look around" → look_around), then lemmas; numbers as they are."""
    toks: list[str] = []
    i = 0
    while i < len(raw):
        if i + 1 < len(raw) and (raw[i], raw[i + 1]) in _CLIP_BIGRAMS:
            toks.append(_CLIP_BIGRAMS[(raw[i], raw[i + 1])])
            i += 2
        else:
            toks.append(raw[i] if raw[i].isdigit() else _lemma(raw[i]))
            i += 1
    return toks


def _read_segments(toks: list[str]) -> tuple[list[dict], dict]:
    """The actions in order, each with its manner, direction and speed word, and what came before any
    action (`pending`: manner, direction and speed word of a name with no action)."""
    segs: list[dict] = []
    pending: dict = {"manner": [], "direction": None, "speed_word": None}
    transition = False
    for k, tok in enumerate(toks):
        nxt_is_action = k + 1 < len(toks) and (toks[k + 1] in _CLIP_ACTIONS or toks[k + 1] in _ATTACK_KINDS)
        if tok in _TRANSITIONS and (tok != "2" or (segs and nxt_is_action)):
            transition = True
            continue
        if tok in _STOPWORDS or tok.isdigit():
            continue
        if tok in _INTENSIFIERS and k + 1 < len(toks) and toks[k + 1] in _CLIP_SPEEDS:
            continue  # said with the speed word
        target = segs[-1] if segs else pending
        if tok in _CLIP_ACTIONS or tok in _ATTACK_KINDS:
            action = "attack" if tok in _ATTACK_KINDS else _CLIP_ACTIONS[tok]
            if action == "turn" and segs and segs[-1]["action"] in _LOCOMOTION and not transition:
                segs[-1]["turning"] = True
                continue
            if segs and segs[-1]["action"] == action and not transition:  # "Walk_Limp": one walk
                extra = (_CLIP_MANNER.get(tok), tok if tok in _ATTACK_KINDS else None)
                segs[-1]["manner"] += [m for m in extra if m and m not in segs[-1]["manner"]]
                continue
            seg = {"action": action, "manner": list(pending["manner"]), "direction": pending["direction"],
                   "speed_word": pending["speed_word"], "explicit": transition, "turning": False}
            pending = {"manner": [], "direction": None, "speed_word": None}
            if tok in _ATTACK_KINDS:
                seg["manner"].append(tok)
            if tok in _CLIP_MANNER:
                seg["manner"].append(_CLIP_MANNER[tok])
            if tok == "hover":
                seg["direction"] = "in place"
            segs.append(seg)
            transition = False
        elif tok in _CLIP_DIRECTIONS:
            target["direction"] = _CLIP_DIRECTIONS[tok]
        elif tok in _CLIP_SPEEDS:
            word = _CLIP_SPEEDS[tok]
            if k and toks[k - 1] in _INTENSIFIERS:
                word = _INTENSIFIED.get(word, word)
            target["speed_word"] = word
        elif tok in _CLIP_MANNER:
            target["manner"].append(_CLIP_MANNER[tok])
        elif _manner_kind(tok) in ("adv", "adj", "ing"):
            target["manner"].append(tok)  # other words ("Eat_Grass") stay only in the label
    return segs, pending


def _drop_idle(segs: list[dict]) -> None:
    """A leading idle followed directly by another action is only the pose it starts from; a trailing
    idle after sit / lie down / crouch / coil is dropped."""
    if len(segs) > 1 and segs[0]["action"] == "idle" and not segs[1]["explicit"]:
        segs[1]["manner"] = segs[0]["manner"] + segs[1]["manner"]
        segs[1]["direction"] = segs[1]["direction"] or segs[0]["direction"]
        segs.pop(0)
    if len(segs) > 1 and segs[-1]["action"] == "idle" and not segs[-1]["explicit"] \
            and segs[-2]["action"] in ("sit", "lie_down", "crouch", "coil"):
        segs.pop()


def _part_descriptions(segs: list[dict], species: str, family: str, label: str) -> list[MotionDescription]:
    """One description per segment, mapped to the family's usual actions; a turn after a gait makes the
    gait's direction "turning left/right", or follows it as its own part."""
    parts = []
    for seg in segs:
        action, speed = _FAMILY_ALIASES.get((family, seg["action"]), (seg["action"], None))
        direction = seg["direction"]
        if seg["turning"]:
            if direction in ("left", "right"):
                direction = f"turning {direction}"
            else:
                parts.append(MotionDescription(species, family, action, speed_word=seg["speed_word"] or speed,
                                               direction=direction, manner=tuple(seg["manner"]), label=label))
                action, direction, speed = "turn", None, None
                seg = {**seg, "manner": [], "speed_word": None}
        parts.append(MotionDescription(species, family, action, speed_word=seg["speed_word"] or speed,
                                       direction=direction, manner=tuple(seg["manner"]),
                                       label="" if action == "move" else label))
    return parts


def describe_clip_name(clip_name: str, species: str, family: str) -> MotionDescription:
    """A description from an authored clip name and the creature it belongs to.

    Rules: the last '|' part that says anything is read ("AnimalArmature|Walk" → walk); words are
    split at '_', spaces and camelCase, and lemmatised ("Eating" → eat). Consecutive actions
    become segments in order ("Gallop_Jump" → gallop, then jump: the jump is taken as following
    the gallop), as do "to"/"into"/"then" and a "2" between actions ("Jump_toIdle" → jump, then
    idle). A leading idle followed directly by another action is only the pose it starts from
    ("Idle_HitReact_Left" → hit, to the left), and a trailing idle after sit/lie down is dropped.
    Numbers are dropped ("Idle_2" → idle). Attack kinds become manner ("Attack_Headbutt" → attack,
    manner "headbutt"; "Bite" alone → attack with "bite"); "turn" after a gait makes the gait's
    direction "turning left/right"; other words that read as adverbs/adjectives ("Walk_Happy") become
    manner, nouns ("Eat_Grass") stay only in the label.
    A name with no known action gives the generic "move" with the raw words in `label`
    ("01_01" → move, label "01 01"). Actions are mapped to the family's usual ones ("Run" for a
    quadruped → gallop, "Walk" for a fish → swim). `label` always keeps the raw words. A family
    outside FAMILIES is taken from the species (else quadruped).
    """
    if family not in FAMILIES:
        family = species_family(species) or "quadruped"
    raw = _clip_words(clip_name)
    segs, pending = _read_segments(_clip_tokens(raw))
    label = " ".join(raw)
    if not segs:
        return MotionDescription(species, family, "move", label=label, direction=pending["direction"],
                                 speed_word=pending["speed_word"], manner=tuple(pending["manner"]))
    _drop_idle(segs)
    parts = _part_descriptions(segs, species, family, label)
    if len(parts) == 1:
        return parts[0]
    return MotionDescription(species, family, parts[0].action, segments=tuple(parts), label=label)


def clip_paraphrases(clip_name: str, species: str, family: str, n: int = 6,
                     seed: int | random.Random | np.random.Generator | None = 0) -> list[str]:
    """paraphrases(describe_clip_name(...)): captions for an authored clip (≥ n, distinct)."""
    return paraphrases(describe_clip_name(clip_name, species, family), n=n, seed=seed)
