"""Captions for the motion library: paraphrases, a held-out caption style, and clip-name parsing.

A `MotionDescription` says what a clip shows (species, family, canonical action, speed,
direction, manner, and optional segments for transitions). From it:

* `paraphrases(desc, n, seed)` gives n distinct English captions (the training style), varied in
  subject ("a wolf", "the canine", "grey wolf"), verb synonyms ("trots", "jogs", "moves at a
  brisk trot"), tense/aspect (present, progressive, gerund fragment), modifier order and frame
  ("The clip shows ...", "In this clip, ..."). Captions ending in "." (or "?") are sentences and
  start with a capital; the others are lowercase fragments ("wolf trotting forward, then sitting
  down"). Distinct means different words (`caption_key`), not just case or punctuation.
* `heldout_caption(desc, seed)` gives one caption in a style the paraphrases never use, for
  testing generalisation: imperatives and requests built on the verb's base form ("Make the
  wolf trot onward.", "Could the wolf trot onward?", "Your wolf should ...") and terse tags
  ("wolf | trot | forward | brisk"), with their own speed and direction phrasings. Paraphrases use
  only third-person and -ing verb forms, never the held-out templates' fixed words
  (make, have, let, your, should, must, could) nor "|" or "?".
* `describe_clip_name(name, species, family)` turns authored clip names ("Gallop_Jump",
  "AnimalArmature|Walk", "Jump_toIdle", "01_01") into descriptions.

Speed words are relative to size: legged creatures use the Froude-like number v / sqrt(g·L)
(L the hip height), legless ones (serpent, fish) body lengths per second, each compared with a
nominal value for the action. Stationary actions (sit, idle, eat, ...) ignore a numeric speed
and a "forward"/"in place" direction (an explicit speed_word is still used).

Pure Python; deterministic for a given seed.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field

import numpy as np

from ..core.creature import FAMILIES

__all__ = [
    "ACTIONS", "DIRECTIONS", "HELDOUT_TEMPLATES", "PARAPHRASE_TEMPLATES", "SPEED_BUCKETS",
    "ActionWords", "MotionDescription", "VerbPhrase", "action_words", "caption_key", "chain",
    "clip_paraphrases", "describe_clip_name", "heldout_caption", "heldout_captions", "lexicon", "paraphrases",
    "species_family", "species_words", "speed_bucket", "speed_word", "subject_nouns",
]

# ---------------------------------------------------------------------------------------------
# Verb phrases
# ---------------------------------------------------------------------------------------------

SPEED_BUCKETS = ("very_slow", "slow", "moderate", "fast", "very_fast")
_SLOWISH = frozenset({None, "very_slow", "slow", "moderate"})
_FASTISH = frozenset({None, "fast", "very_fast"})
_UNTIMED = frozenset({None})

_IRREGULAR_THIRD = {"be": "is", "have": "has", "do": "does", "go": "goes"}
_DOUBLE_FINAL = {
    "trot", "hop", "sit", "run", "swim", "jog", "stop", "flap", "wag", "plod", "step", "spin", "dig",
    "grab", "nap", "bob", "skip", "drop", "slip", "trip", "get", "set", "let", "stot", "scan", "squat",
    "wrap", "snap", "pat",
}


def _third(verb: str) -> str:
    if verb in _IRREGULAR_THIRD:
        return _IRREGULAR_THIRD[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _gerund(verb: str) -> str:
    if verb in _DOUBLE_FINAL:
        return verb + verb[-1] + "ing"
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")) and verb != "be":
        return verb[:-1] + "ing"
    return verb + "ing"


@dataclass(frozen=True)
class VerbPhrase:
    """One way to say an action. Forms may hold '^' (where adverbs and a short direction go,
    e.g. "walk ^ with a tripod gait") and '{its}'/'{itself}' (resolved per species)."""

    base: str
    third: str
    gerund: str
    speeds: frozenset | None = None  # speed buckets it fits (None: no speed mentioned); None: any

    def fits(self, bucket: str | None) -> bool:
        return self.speeds is None or bucket in self.speeds


def _phrase(spec: str) -> VerbPhrase:
    """'stroll-' → slow-ish only, 'sprint+' → fast-ish only, 'x*' → only with no speed word;
    'a|b|c' gives base|third|gerund explicitly; otherwise the first word is inflected."""
    speeds = None
    if spec[-1] in "-+*":
        speeds = {"-": _SLOWISH, "+": _FASTISH, "*": _UNTIMED}[spec[-1]]
        spec = spec[:-1]
    if "|" in spec:
        base, third, gerund = spec.split("|")
        return VerbPhrase(base, third, gerund, speeds)
    head, _, rest = spec.partition(" ")
    tail = (" " + rest) if rest else ""
    return VerbPhrase(spec, _third(head) + tail, _gerund(head) + tail, speeds)


@dataclass(frozen=True)
class ActionWords:
    """The words for one canonical action: verb phrases (the first is canonical) and the nouns
    usable in "at a brisk trot"."""

    action: str
    phrases: tuple[VerbPhrase, ...]
    nouns: tuple[str, ...] = ()


# action id → (verb phrase specs, gait nouns)
_LEXICON: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "walk": (("walk", "stroll-", "amble-", "step along", "plod along-"), ("walk",)),
    "trot": (("trot", "jog", "trot along"), ("trot",)),
    "pace": (("pace", "move ^ with a pacing gait", "trot ^ with a lateral gait"), ()),
    "canter": (("canter", "lope", "canter along"), ("canter", "lope")),
    "gallop": (("gallop", "run ^ at full speed*", "race+", "sprint+", "run flat out*"), ("gallop",)),
    "bound": (("bound", "leap along", "move ^ in long bounds", "bound along"), ()),
    "pronk": (("pronk", "stot", "bounce ^ on stiff legs", "spring ^ on stiff legs"), ()),
    "sit": (("sit down", "sit", "settle into a sitting position"), ()),
    "lie_down": (("lie down", "lie on the ground", "settle onto the ground",
                  "stretch out on the ground"), ()),
    "stand_up": (("stand up", "get up", "rise to {its} feet", "get back on {its} feet"), ()),
    "rear_up": (("rear up", "rise onto {its} hind legs", "rear", "stand up on {its} hind legs"), ()),
    "jump": (("jump", "leap", "spring", "take a leap"), ()),
    "look_around": (("look around", "glance around", "survey {its} surroundings", "scan the area",
                     "look about"), ()),
    "sniff": (("sniff", "sniff around", "sniff the ground", "sniff the air"), ()),
    "shake": (("shake {itself} off", "shake {itself}", "give {itself} a shake", "shake {its} body"), ()),
    "wag_tail": (("wag {its} tail", "swish {its} tail", "wave {its} tail",
                  "wag {its} tail from side to side"), ()),
    "idle": (("stand still", "stand idle", "stay still", "idle", "rest", "wait"), ()),
    "eat": (("eat", "feed", "chew on food", "have a meal", "eat some food"), ()),
    "attack": (("attack", "lunge", "strike out", "launch an attack", "lash out"), ()),
    "death": (("die", "collapse", "fall down dead", "drop dead", "keel over", "slump to the ground"), ()),
    "hit": (("flinch", "recoil", "react to a hit", "get hit", "take a hit", "stagger from a blow"), ()),
    "run": (("run", "jog-", "sprint+", "dash+", "race+", "hurry+"), ("run",)),
    "crouch": (("crouch", "crouch down", "squat down", "duck down", "hunker down"), ()),
    "wave": (("wave", "wave {its} hand", "wave hello", "give a wave"), ()),
    "turn": (("turn", "change direction", "pivot", "wheel around"), ()),
    "stop": (("stop", "come to a halt", "halt", "come to a stop"), ()),
    "dance": (("dance", "move ^ to a rhythm", "perform a dance", "do a little dance"), ()),
    "hop": (("hop", "hop along", "bounce along", "jump along"), ()),
    "flap": (("flap {its} wings", "beat {its} wings", "flutter", "flap"), ()),
    "glide": (("glide", "soar", "sail ^ through the air", "float ^ on the wind",
               "coast ^ on outstretched wings"), ()),
    "peck": (("peck", "peck at the ground", "peck for food", "pick at the ground"), ()),
    "tripod_gait": (("walk ^ with a tripod gait", "scuttle along", "move ^ with an alternating tripod gait",
                     "scurry"), ()),
    "wave_gait": (("walk ^ with a wave gait", "creep along-", "crawl", "crawl ^ with a wave-like gait"), ()),
    "slither": (("slither", "undulate", "wriggle", "glide ^ across the ground", "move ^ in waves"), ()),
    "sidewind": (("sidewind", "move ^ by sidewinding", "loop ^ sideways across the ground",
                  "sidewind ^ across the sand"), ()),
    "coil": (("coil up", "coil", "curl up", "wind {itself} into a coil", "wrap {itself} into coils"), ()),
    "strike": (("strike", "lunge and bite|lunges and bites|lunging and biting", "lash out", "strike at prey"),
               ()),
    "swim": (("swim", "swim along", "move ^ through the water", "cruise ^ through the water",
              "glide ^ through the water"), ()),
    "fly": (("fly", "fly along", "fly ^ through the air", "wing {its} way"), ()),
    "roar": (("roar", "let out a roar", "bellow",
              "throw {its} head back and roar|throws {its} head back and roars"
              "|throwing {its} head back and roaring"), ()),
    "takeoff": (("take off", "lift off", "launch ^ into the air", "take flight", "take to the air"), ()),
    "land": (("land", "touch down", "come down to land", "alight"), ()),
    "move": (("move", "move about", "travel|travels|travelling"), ()),
}

# (family, action) → verb phrase specs replacing the default ones
_FAMILY_PHRASES: dict[tuple[str, str], tuple[str, ...]] = {
    ("biped", "sit"): ("sit down", "sit", "take a seat", "sit down on the ground"),
    ("biped", "idle"): ("stand still", "stand idle", "stand around", "wait", "idle"),
    ("biped", "attack"): ("attack", "strike", "lash out", "launch an attack", "swing at an enemy"),
    ("biped", "turn"): ("turn", "turn around", "change direction", "pivot"),
    ("bird", "idle"): ("stand still", "perch quietly", "rest", "idle", "stay still"),
    ("bird", "walk"): ("walk", "strut", "waddle", "step along"),
    ("fish", "idle"): ("hover", "hold still in the water", "idle", "drift gently", "stay still"),
    ("fish", "turn"): ("turn", "change course", "wheel around", "swing around"),
    ("fish", "glide"): ("glide", "coast ^ through the water", "drift"),
    ("fish", "attack"): ("attack", "lunge", "snap at prey", "strike"),
    ("serpent", "idle"): ("lie still", "rest", "stay still", "wait motionless"),
    ("serpent", "turn"): ("turn", "change direction", "curve around"),
    ("hexapod", "walk"): ("walk", "crawl", "scuttle along", "creep along-"),
    ("spider", "walk"): ("walk", "crawl", "scuttle along", "creep along-"),
    ("hexapod", "idle"): ("stay still", "rest", "wait motionless", "keep still", "idle"),
    ("spider", "idle"): ("stay still", "rest", "wait motionless", "keep still", "idle"),
    ("spider", "jump"): ("jump", "leap", "pounce"),
}

ACTIONS: dict[str, tuple[str, ...]] = {
    "quadruped": ("walk", "trot", "pace", "canter", "gallop", "bound", "pronk", "sit", "lie_down", "stand_up",
                  "rear_up", "jump", "look_around", "sniff", "shake", "wag_tail", "idle", "eat", "attack",
                  "death", "hit", "turn", "stop"),
    "biped": ("walk", "run", "jump", "crouch", "idle", "wave", "turn", "attack", "death", "hit", "sit",
              "stand_up", "look_around", "stop", "dance"),
    "bird": ("hop", "flap", "glide", "peck", "walk", "idle", "fly", "takeoff", "land", "look_around"),
    "hexapod": ("tripod_gait", "wave_gait", "walk", "idle", "turn", "attack", "death"),
    "spider": ("tripod_gait", "wave_gait", "walk", "idle", "turn", "attack", "jump", "death"),
    "serpent": ("slither", "sidewind", "coil", "strike", "idle", "turn"),
    "fish": ("swim", "turn", "idle", "glide", "attack"),
    "dragon": ("walk", "gallop", "fly", "glide", "roar", "takeoff", "land", "idle", "attack", "turn",
               "death"),
}
"""Canonical actions typical of each family (every action in the lexicon works for any family)."""

# Actions that stay in place: a numeric speed and a "forward"/"in place" direction are not said.
_STATIONARY = frozenset({
    "sit", "lie_down", "stand_up", "rear_up", "look_around", "sniff", "shake", "wag_tail", "idle", "eat",
    "attack", "death", "hit", "crouch", "wave", "peck", "coil", "strike", "roar", "stop",
})

_GAIT_VERBS_DIR = ("move", "go")
_GAIT_VERBS_NODIR = ("move along", "move")


def lexicon() -> tuple[str, ...]:
    """Every canonical action id."""
    return tuple(_LEXICON)


def _check_action(action: str) -> None:
    if action not in _LEXICON:
        raise ValueError(f"Unknown action {action!r}; expected one of {', '.join(_LEXICON)}.")


def _words(family: str, action: str, label: str = "") -> ActionWords:
    _check_action(action)
    specs, nouns = _LEXICON[action]
    specs = _FAMILY_PHRASES.get((family, action), specs)
    words = _label_words(label) if action == "move" else ""
    if words:
        art = _article(words)
        specs = (f"perform {art} {words} motion", f"do {art} {words} move",
                 f"carry out {art} {words} movement", f"perform {art} {words} move")
    return ActionWords(action, tuple(_phrase(s) for s in specs), nouns)


def action_words(family: str, action: str, species: str = "", label: str = "") -> set[str]:
    """Every surface form an action may take in a caption (base, third person, gerund, gait
    noun), with '^' removed and possessives resolved for the species."""
    out: set[str] = set(_words(family, action, label).nouns)
    for p in _words(family, action, label).phrases:
        for form in (p.base, p.third, p.gerund):
            out.add(_resolve(" ".join(form.replace("^", " ").split()), species))
    return out


# ---------------------------------------------------------------------------------------------
# Species
# ---------------------------------------------------------------------------------------------

# species → (typical family, nouns: the species first, then synonyms and hypernyms)
_SPECIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "wolf": ("quadruped", ("wolf", "grey wolf", "canine", "animal")),
    "dog": ("quadruped", ("dog", "canine", "pup", "hound", "animal")),
    "fox": ("quadruped", ("fox", "red fox", "animal")),
    "horse": ("quadruped", ("horse", "stallion", "mare", "equine", "animal")),
    "deer": ("quadruped", ("deer", "stag", "doe", "animal")),
    "cat": ("quadruped", ("cat", "feline", "kitty", "animal")),
    "bear": ("quadruped", ("bear", "brown bear", "grizzly", "animal")),
    "cow": ("quadruped", ("cow", "heifer", "bovine", "animal")),
    "rat": ("quadruped", ("rat", "rodent", "animal")),
    "shiba inu": ("quadruped", ("shiba inu", "shiba", "dog", "canine", "animal")),
    "husky": ("quadruped", ("husky", "sled dog", "dog", "canine", "animal")),
    "alpaca": ("quadruped", ("alpaca", "camelid", "animal")),
    "donkey": ("quadruped", ("donkey", "burro", "equine", "animal")),
    "bull": ("quadruped", ("bull", "bovine", "animal")),
    "human": ("biped", ("human", "person", "figure", "character")),
    "person": ("biped", ("person", "human", "figure", "character")),
    "knight": ("biped", ("knight", "armoured knight", "warrior", "soldier", "character")),
    "robot": ("biped", ("robot", "android", "machine", "character")),
    "goblin": ("biped", ("goblin", "little monster", "creature")),
    "man": ("biped", ("man", "guy", "person")),
    "woman": ("biped", ("woman", "lady", "person")),
    "pigeon": ("bird", ("pigeon", "dove", "bird")),
    "eagle": ("bird", ("eagle", "bird of prey", "raptor", "bird")),
    "chicken": ("bird", ("chicken", "hen", "bird")),
    "parrot": ("bird", ("parrot", "bird")),
    "bee": ("bird", ("bee", "honeybee", "insect", "bug")),
    "ant": ("hexapod", ("ant", "insect", "bug")),
    "beetle": ("hexapod", ("beetle", "insect", "bug")),
    "tarantula": ("spider", ("tarantula", "spider", "arachnid")),
    "jumping spider": ("spider", ("jumping spider", "spider", "arachnid")),
    "spider": ("spider", ("spider", "arachnid")),
    "snake": ("serpent", ("snake", "serpent", "reptile")),
    "cobra": ("serpent", ("cobra", "snake", "serpent", "reptile")),
    "dragon": ("dragon", ("dragon", "winged beast", "creature")),
    "trout": ("fish", ("trout", "fish")),
    "shark": ("fish", ("shark", "predator", "fish")),
    "tuna": ("fish", ("tuna", "fish")),
    "dolphin": ("fish", ("dolphin", "marine mammal", "animal")),
    "whale": ("fish", ("whale", "cetacean", "marine mammal")),
    "manta ray": ("fish", ("manta ray", "manta", "ray", "fish")),
    "koi": ("fish", ("koi", "carp", "fish")),
    "pufferfish": ("fish", ("pufferfish", "puffer", "blowfish", "fish")),
    "swordfish": ("fish", ("swordfish", "fish")),
    "apatosaurus": ("quadruped", ("apatosaurus", "sauropod", "dinosaur")),
    "stegosaurus": ("quadruped", ("stegosaurus", "dinosaur")),
    "triceratops": ("quadruped", ("triceratops", "dinosaur")),
    "parasaurolophus": ("quadruped", ("parasaurolophus", "hadrosaur", "dinosaur")),
}

_FAMILY_NOUNS = {
    "quadruped": "animal", "biped": "character", "bird": "bird", "hexapod": "insect", "spider": "spider",
    "serpent": "snake", "dragon": "creature", "fish": "fish",
}
_POSSESSIVE = {"man": ("his", "himself"), "woman": ("her", "herself"), "human": ("their", "themselves"),
               "person": ("their", "themselves"), "knight": ("their", "themselves")}


def _norm_species(species: str) -> str:
    return " ".join(species.lower().replace("_", " ").replace("-", " ").split())


def species_words(species: str) -> list[str]:
    """The species noun first, then synonyms and hypernyms (dog → dog, canine, pup, hound,
    animal); an unknown species is used as given."""
    key = _norm_species(species)
    return list(_SPECIES[key][1]) if key in _SPECIES else [key or "creature"]


def species_family(species: str) -> str | None:
    """The family a known species usually has (None if unknown)."""
    entry = _SPECIES.get(_norm_species(species))
    return entry[0] if entry else None


def subject_nouns(species: str, family: str) -> list[str]:
    """The nouns captions may use for the subject: species_words, plus the family's generic
    noun for a species this module does not know."""
    words = species_words(species)
    if _norm_species(species) not in _SPECIES and _FAMILY_NOUNS.get(family) not in words:
        words.append(_FAMILY_NOUNS.get(family, "creature"))
    return words


def _resolve(text: str, species: str) -> str:
    its, itself = _POSSESSIVE.get(_norm_species(species), ("its", "itself"))
    return text.replace("{its}", its).replace("{itself}", itself)


_AN_EXCEPTIONS = ("uni", "use", "usu", "eu", "one", "ur")


def _article(phrase: str) -> str:
    word = phrase.strip().lower()
    if word.startswith(("hour", "honest", "heir")):
        return "an"
    if word[:1] in "aeiou" and not word.startswith(_AN_EXCEPTIONS):
        return "an"
    return "a"


# ---------------------------------------------------------------------------------------------
# Speed, direction, manner
# ---------------------------------------------------------------------------------------------

_G = 9.81
_DEFAULT_SIZE = {"quadruped": 0.5, "biped": 0.9, "bird": 0.12, "hexapod": 0.01, "spider": 0.02,
                 "serpent": 1.0, "dragon": 1.5, "fish": 0.4}
_LEGLESS = frozenset({"serpent", "fish"})
# nominal v / sqrt(g L) of each action for legged bodies
_NOMINAL_FROUDE = {"walk": 0.5, "trot": 0.9, "pace": 0.9, "canter": 1.4, "gallop": 2.2, "bound": 1.6,
                   "pronk": 0.8, "run": 1.05, "hop": 0.6, "jump": 1.0, "tripod_gait": 0.9, "wave_gait": 0.35,
                   "fly": 8.0, "glide": 8.0, "takeoff": 3.0, "land": 3.0, "flap": 3.0, "turn": 0.3,
                   "stop": 0.3, "move": 0.5}
# nominal body lengths per second for legless bodies
_NOMINAL_BODY_LENGTHS = {"swim": 1.0, "glide": 0.8, "slither": 0.3, "sidewind": 0.4, "turn": 0.3,
                         "move": 0.5}

_SPEED_PHRASES = {
    "very_slow": ("very slowly", "at a crawl", "at a snail's pace", "sluggishly"),
    "slow": ("slowly", "at a leisurely pace", "unhurriedly", "at an easy pace"),
    "moderate": ("at a steady pace", "at a moderate pace", "at an even pace", "steadily"),
    "fast": ("quickly", "briskly", "at a brisk pace", "rapidly"),
    "very_fast": ("at full speed", "very fast", "at top speed", "flat out"),
}
_SPEED_ADJECTIVES = {
    "very_slow": ("very slow", "sluggish"), "slow": ("slow", "leisurely", "relaxed", "easy"),
    "moderate": ("steady", "moderate", "even"), "fast": ("brisk", "quick", "fast"),
    "very_fast": ("full", "flat-out", "breakneck"),
}
_HELDOUT_SPEED_PHRASES = {
    "very_slow": ("ever so slowly", "extremely slowly"), "slow": ("nice and slow", "without hurrying"),
    "moderate": ("at a normal speed", "at a regular tempo"), "fast": ("fast", "speedily"),
    "very_fast": ("as fast as possible", "at maximum speed"),
}
_SPEED_TAGS = {"very_slow": "very slow", "slow": "slow", "moderate": "medium", "fast": "brisk",
               "very_fast": "max speed"}

DIRECTIONS = ("forward", "backward", "left", "right", "turning left", "turning right", "in a circle",
              "in place")
_SHORT, _LONG = True, False
_DIRECTION_PHRASES: dict[str, tuple[bool, tuple[str, ...]]] = {
    "forward": (_SHORT, ("forward", "forwards", "ahead", "straight ahead")),
    "backward": (_SHORT, ("backward", "backwards", "in reverse")),
    "left": (_SHORT, ("to the left", "left", "leftward", "sideways to the left")),
    "right": (_SHORT, ("to the right", "right", "rightward", "sideways to the right")),
    "turning left": (_LONG, ("while turning left", "while veering left", "along a curve to the left",
                             "in a leftward arc")),
    "turning right": (_LONG, ("while turning right", "while veering right", "along a curve to the right",
                              "in a rightward arc")),
    "in a circle": (_SHORT, ("in a circle", "in circles", "around in a circle", "in a loop")),
    "in place": (_SHORT, ("in place", "on the spot", "in one spot")),
}
_HELDOUT_DIRECTION_PHRASES: dict[str, tuple[bool, tuple[str, ...]]] = {
    "forward": (_SHORT, ("onward", "toward the front")),
    "backward": (_SHORT, ("rearward", "in a backward direction")),
    "left": (_SHORT, ("over to {its} left", "toward {its} left side")),
    "right": (_SHORT, ("over to {its} right", "toward {its} right side")),
    "turning left": (_LONG, ("bending round to {its} left", "on a left-hand bend")),
    "turning right": (_LONG, ("bending round to {its} right", "on a right-hand bend")),
    "in a circle": (_SHORT, ("round and round", "on a circular path")),
    "in place": (_LONG, ("without going anywhere", "while staying put")),
}
_TURN_PHRASES = {"left": ("to the left", "left", "leftward"), "right": ("to the right", "right", "rightward")}

def stated_direction(text: str) -> str | None:
    """The direction of travel a sentence states, as a DIRECTIONS entry ("a dog walks backwards"
    → "backward"; "veering left" → "turning left"), or None when it names none. The longest
    phrase wins ("while turning left" over "left"), so turns are not read as sideways moves."""
    words = " " + re.sub(r"[^a-z]+", " ", text.lower()) + " "
    phrases = []
    for table in (_DIRECTION_PHRASES, _HELDOUT_DIRECTION_PHRASES):
        for direction, (_, forms) in table.items():
            phrases += [(form.replace("{its}", "its"), direction) for form in forms]
    for side in ("left", "right"):
        phrases += [(f"turning {side}", f"turning {side}"), (f"veering {side}", f"turning {side}")]
    for phrase, direction in sorted(phrases, key=lambda item: -len(item[0])):
        if f" {phrase} " in words:
            return direction
    return None

_HELDOUT_TURN_PHRASES = {"left": ("toward {its} left side",), "right": ("toward {its} right side",)}
_DIRECTION_TAGS = {"turning left": "turn-left", "turning right": "turn-right", "in a circle": "circle",
                   "in place": "in-place"}

_PREPOSITIONS = frozenset({"with", "from", "like", "as", "in", "on", "while", "without", "into", "toward",
                           "towards", "at", "by", "through", "under", "over", "after", "before"})
_LY_ADJECTIVES = frozenset({"friendly", "lonely", "elderly", "ugly", "lovely", "curly", "woolly", "lively",
                            "sickly", "wobbly", "burly", "surly", "gangly"})
_ADJECTIVES = frozenset({"old", "young", "big", "small", "tiny", "huge", "grey", "gray", "brown", "black",
                         "white", "red", "golden", "calm", "alert", "proud", "drunk", "weak", "strong", "shy",
                         "fat", "thin", "giant", "wild", "tame", "sick", "sad", "mad", "bold", "wet", "cold",
                         "hot", "lame", "slim", "stiff"})
_ADJECTIVE_SUFFIXES = ("ful", "ous", "ive", "ish", "less", "ed", "able", "ible", "ic", "y", "ent", "ant",
                       "al")


def _manner_kind(phrase: str) -> str:
    """'adv' (playfully), 'adj' (tired), 'pp' (with a limp), 'ing' (limping) or 'noun' (headbutt)."""
    words = phrase.lower().split()
    if not words:
        return "noun"
    if words[0] in _PREPOSITIONS:
        return "pp"
    if words[-1].endswith("ly") and words[-1] not in _LY_ADJECTIVES:
        return "adv"
    if len(words) == 1 and words[0].endswith("ing") and len(words[0]) > 5:
        return "ing"
    if words[0].endswith("ing") and len(words) > 1:
        return "ing"
    if words[-1] in _ADJECTIVES or words[-1] in _LY_ADJECTIVES or words[-1].endswith(_ADJECTIVE_SUFFIXES):
        return "adj"
    return "noun"


def _is_adverb(text: str) -> bool:
    last = text.split()[-1]
    return last.endswith("ly") or text in ("fast", "very fast")


def speed_bucket(family: str, action: str, speed: float, leg_length: float | None = None) -> str:
    """The speed bucket (one of SPEED_BUCKETS) of `speed` m/s for this action and body size.

    leg_length is the hip height for legged families and the body length for serpents and fish;
    None or ≤ 0 takes a typical size for the family."""
    size = leg_length if leg_length and leg_length > 0 else _DEFAULT_SIZE.get(family, 0.5)
    speed = abs(float(speed))
    if family in _LEGLESS:
        ratio = (speed / size) / _NOMINAL_BODY_LENGTHS.get(action, 0.5)
    else:
        ratio = (speed / math.sqrt(_G * size)) / _NOMINAL_FROUDE.get(action, 0.45)
    for bucket, limit in zip(SPEED_BUCKETS, (0.55, 0.8, 1.25, 1.7), strict=False):
        if ratio < limit:
            return bucket
    return "very_fast"


def speed_word(family: str, action: str, speed: float, leg_length: float | None = None) -> str:
    """A word for `speed` m/s relative to the action's usual speed at this size: "very slowly",
    "slowly", "at a steady pace", "quickly" or "at full speed"."""
    return _SPEED_PHRASES[speed_bucket(family, action, speed, leg_length)][0]


def _bucket_of_word(word: str) -> str | None:
    w = word.strip().lower()
    for table in (_SPEED_PHRASES, _SPEED_ADJECTIVES, _HELDOUT_SPEED_PHRASES):
        for bucket, phrases in table.items():
            if w in phrases:
                return bucket
    return None


# ---------------------------------------------------------------------------------------------
# Descriptions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MotionDescription:
    """What a clip shows.

    species: e.g. "wolf" (any string; known ones get synonyms). family: one of FAMILIES.
    action: a canonical action id (see ACTIONS / lexicon()). speed: root speed in m/s or None.
    speed_word: a word that overrides the computed one ("briskly"). direction: one of DIRECTIONS
    (other strings are used verbatim) or None. manner: adverbs ("playfully"), adjectives ("tired",
    put on the subject), -ing words ("limping"), prepositional phrases ("with a limp") or nouns
    ("headbutt" → "with a headbutt"). leg_length: hip height (legless: body length) in metres for
    the speed word; None takes a typical size. label: raw words of an authored clip name; only
    said for the generic "move" action ("performs a roll motion").

    segments: when given, the motion is these parts in order ("walks, then trots, then sits
    down"); `action` should be the first part's (it is used for tags), the parts' own species and
    family are ignored, and of the parent's own fields only manner adjectives (on the subject)
    are used. Nested segments are flattened.
    """

    species: str
    family: str
    action: str
    speed: float | None = None
    speed_word: str | None = None
    direction: str | None = None
    manner: tuple[str, ...] = ()
    segments: tuple[MotionDescription, ...] = ()
    leg_length: float | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"Unknown family {self.family!r}; expected one of {', '.join(FAMILIES)}.")
        _check_action(self.action)
        if isinstance(self.manner, str):
            object.__setattr__(self, "manner", (self.manner,) if self.manner else ())
        else:
            object.__setattr__(self, "manner", tuple(m for m in self.manner if m and m.strip()))
        if not all(isinstance(s, MotionDescription) for s in self.segments):
            raise TypeError("segments must be MotionDescription objects.")
        object.__setattr__(self, "segments", tuple(self.segments))

    def parts(self) -> tuple[MotionDescription, ...]:
        """The motion's parts in order (itself when it has no segments)."""
        if not self.segments:
            return (self,)
        return tuple(p for s in self.segments for p in s.parts())

    def bucket(self) -> str | None:
        """The speed bucket said in captions: None (nothing said), one of SPEED_BUCKETS, or
        "other" (a speed_word this module does not know, said verbatim)."""
        if self.speed_word:
            return _bucket_of_word(self.speed_word) or "other"
        if self.speed is None or self.action in _STATIONARY:
            return None
        return speed_bucket(self.family, self.action, self.speed, self.leg_length)


def chain(first: MotionDescription, *rest: MotionDescription) -> MotionDescription:
    """A description of `first` followed by `rest` (e.g. walk, then trot, then sit)."""
    if not rest:
        return first
    return MotionDescription(first.species, first.family, first.parts()[0].action, segments=(first, *rest))


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------


def _rng(seed: int | random.Random | np.random.Generator | None, salt: str = "") -> random.Random:
    """A Random from a seed; an int seed is mixed with `salt` (the description), so that clips
    sharing a seed still get different template orders."""
    if isinstance(seed, random.Random):
        return seed
    if isinstance(seed, np.random.Generator):
        return random.Random(int(seed.integers(2**62)))
    return random.Random(f"{0 if seed is None else int(seed)}:{salt}")


def _and(items: list[str]) -> str:
    items = [i for i in items if i]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


@dataclass
class _Part:
    phrase: VerbPhrase
    adverbs: list[str] = field(default_factory=list)
    short_dir: str = ""
    pps: list[str] = field(default_factory=list)
    long_dir: str = ""
    trailing: list[str] = field(default_factory=list)
    adjectives: list[str] = field(default_factory=list)
    frontable: list[str] = field(default_factory=list)
    adverbs_first: bool = True

    def clause(self, form: str, skip: str = "") -> str:
        text = getattr(self.phrase, form)
        head, _, tail = text.partition("^")
        if (self.short_dir or self.long_dir) and not tail.strip():
            # "hops along forward" → "hops forward", "moves about to the left" → "moves to the left"
            head = re.sub(r"^(mov\w*) about\s*$|^(.*) along\s*$", r"\1\2", head)
        adv = _and([a for a in self.adverbs if a != skip])
        mid = [adv, self.short_dir] if self.adverbs_first else [self.short_dir, adv]
        words = [head.strip(), *mid, tail.strip(), *[p for p in self.pps if p != skip], self.long_dir]
        out = " ".join(w for w in words if w)
        if self.trailing:
            out += ", " + ", ".join(self.trailing)
        return out


def _pick(rng: random.Random, options: tuple[str, ...] | list[str], canonical: bool) -> str:
    return options[0] if canonical else rng.choice(list(options))


def _build_part(part: MotionDescription, family: str, rng: random.Random, canonical: bool, heldout: bool,
                adjectives_on_subject: bool, allow_gait: bool = True) -> _Part:
    bucket = part.bucket()
    said = {w for m in part.manner for w in m.lower().split()}
    words = _words(family, part.action, " ".join(w for w in part.label.split() if w.lower() not in said))
    phrases = [p for p in words.phrases if p.fits(bucket if bucket != "other" else "moderate")]
    if bucket == "other":
        phrases = [p for p in phrases if p.speeds is None] or phrases
    direction = _direction(part, rng, canonical, heldout)
    speed_text = ""
    gait_pp = ""
    use_gait = (allow_gait and not heldout and not canonical and words.nouns and bucket != "other"
                and rng.random() < 0.3)
    if use_gait:
        noun = rng.choice(words.nouns)
        adj = rng.choice(_SPEED_ADJECTIVES[bucket]) if bucket else ""
        gait_pp = f"at {_article(adj or noun)} {adj} {noun}".replace("  ", " ")
        verbs = _GAIT_VERBS_NODIR if not direction[0] else \
            _GAIT_VERBS_DIR[:1] if part.direction == "in place" else _GAIT_VERBS_DIR
        out = _Part(_phrase(rng.choice(verbs)))
    else:
        out = _Part(_pick(rng, phrases, canonical))
        if bucket == "other":
            speed_text = part.speed_word.strip()
        elif bucket is not None:
            table = _HELDOUT_SPEED_PHRASES if heldout else _SPEED_PHRASES
            given = part.speed_word.strip().lower() if part.speed_word else ""
            if canonical and given in table[bucket]:
                speed_text = given
            else:
                speed_text = _pick(rng, table[bucket], canonical)
    out.adverbs_first = canonical or rng.random() < 0.5
    if speed_text:
        (out.adverbs if _is_adverb(speed_text) else out.pps).append(speed_text)
        out.frontable.append(speed_text)
    if gait_pp:
        out.pps.append(gait_pp)
    text, short = direction
    if short:
        out.short_dir = text
    else:
        out.long_dir = text
    for m in part.manner:
        m = " ".join(m.split())
        kind = _manner_kind(m)
        if kind == "adv":
            out.adverbs.append(m)
            out.frontable.append(m)
        elif kind == "adj":
            if adjectives_on_subject:
                out.adjectives.append(m)
            else:
                out.trailing.append(f"looking {m}")
        elif kind == "ing":
            out.trailing.append(m)
        elif kind == "pp":
            out.pps.append(m)
        else:
            out.pps.append(f"with {_article(m)} {m}")
    return out


def _direction(part: MotionDescription, rng: random.Random, canonical: bool,
               heldout: bool) -> tuple[str, bool]:
    """(phrase, is_short) for the part's direction; ("", True) when nothing is said."""
    d = (part.direction or "").strip().lower()
    if not d:
        return "", True
    if part.action == "turn":
        side = d.replace("turning ", "")
        table = _HELDOUT_TURN_PHRASES if heldout else _TURN_PHRASES
        if side in table:
            return _pick(rng, table[side], canonical), True
        if d in ("forward", "backward"):
            return "", True
    elif part.action in _STATIONARY and d in ("forward", "in place"):
        return "", True
    table = _HELDOUT_DIRECTION_PHRASES if heldout else _DIRECTION_PHRASES
    if d in table:
        short, phrases = table[d]
        return _pick(rng, phrases, canonical), short
    return d, False


def _join(clauses: list[str], rng: random.Random, canonical: bool) -> str:
    """Parts in order: 'a, then b, then c' / 'a and then b' / 'a, then b, and finally c'."""
    if len(clauses) == 1:
        return clauses[0]
    style = 0 if canonical else rng.randrange(3)
    if style == 1:
        return (", ".join(clauses[:-1]) + ", and then " + clauses[-1]) if len(clauses) > 2 else \
            f"{clauses[0]} and then {clauses[1]}"
    if style == 2 and len(clauses) > 2:
        return ", then ".join(clauses[:-1]) + ", and finally " + clauses[-1]
    return ", then ".join(clauses)


def _subject(desc: MotionDescription, adjectives: list[str], rng: random.Random, canonical: bool) -> str:
    nouns = subject_nouns(desc.species, desc.family)
    if canonical:
        noun = nouns[0]
    else:
        noun = rng.choices(nouns, weights=[3.0] + [1.0] * (len(nouns) - 1))[0]
    adjs = [a for a in adjectives if a.lower() not in noun.split()]
    return (", ".join(adjs) + " " + noun) if adjs else noun


def _tidy(text: str, sentence: bool) -> str:
    text = " ".join(text.split())
    text = re.sub(r"\s+([,.?])", r"\1", text)
    text = re.sub(r",+", ",", text)
    if sentence:
        text = text[0].upper() + text[1:]
    return text


# Paraphrase templates. {a}/{the}/{bare}: subject with an indefinite/definite/no article;
# {v3}: the parts in the third person; {ger}: in the -ing form; {front}: a speed or manner phrase
# moved to the front; {g1}/{v3rest}: the first part as -ing / the others in the third person.
# Templates ending in "." are sentences (capitalised); the others are lowercase fragments.
PARAPHRASE_TEMPLATES: tuple[str, ...] = (
    "{a} {v3}.",
    "{the} {v3}.",
    "{a} is {ger}.",
    "{the} is {ger}.",
    "{a} {ger}.",
    "{a} {ger}",
    "{bare} {ger}",
    "We see {a} {ger}.",
    "The clip shows {a} {ger}.",
    "An animation of {a} {ger}.",
    "In this clip, {the} {v3}.",
    "{a} can be seen {ger}.",
    "{front}, {a} {v3}.",
    "{a} starts by {g1}, then {v3rest}.",
    "After {g1}, {the} {v3rest}.",
)

# Held-out templates: {vb} is the parts in the base form; {tags} terse fields. Their fixed words
# (make, have, let, your, should, must, could, "?", "|") never occur in paraphrases.
HELDOUT_TEMPLATES: tuple[str, ...] = (
    "Make {the} {vb}.",
    "Have {the} {vb}.",
    "Let {the} {vb}.",
    "Your {bare} should {vb}.",
    "{the} must {vb}.",
    "Could {the} {vb}?",
    "{bare} | {tags}",
)


def _eligible(templates: tuple[str, ...], multi: bool, frontable: bool) -> list[str]:
    out = []
    for t in templates:
        if ("{g1}" in t or "{v3rest}" in t) and not multi:
            continue
        if "{front}" in t and (multi or not frontable):
            continue
        out.append(t)
    return out


def _render(desc: MotionDescription, template: str, rng: random.Random, canonical: bool,
            heldout: bool) -> str:
    parts = desc.parts()
    multi = len(parts) > 1
    built = [_build_part(p, desc.family, rng, canonical, heldout, adjectives_on_subject=not multi,
                         allow_gait="{front}" not in template) for p in parts]
    subject_adjs = built[0].adjectives if not multi else \
        [m for m in desc.manner if _manner_kind(m) == "adj"]
    noun = _subject(desc, subject_adjs, rng, canonical)
    fields = {"a": f"{_article(noun)} {noun}", "the": f"the {noun}", "bare": noun}
    if "{tags}" in template:
        fields["bare"] = _subject(desc, [], rng, canonical)  # adjectives are among the tags
        fields["tags"] = _tags(desc, parts)
    elif heldout:
        fields["vb"] = _join([b.clause("base") for b in built], rng, canonical)
    else:
        fields["v3"] = _join([b.clause("third") for b in built], rng, canonical)
        fields["ger"] = _join([b.clause("gerund") for b in built], rng, canonical)
        if multi:
            fields["g1"] = built[0].clause("gerund")
            fields["v3rest"] = _join([b.clause("third") for b in built[1:]], rng, canonical)
        if "{front}" in template:
            front = rng.choice(built[0].frontable)
            fields["front"] = front
            fields["v3"] = built[0].clause("third", skip=front)
    text = _resolve(template.format(**fields), desc.species)
    return _tidy(text, sentence=text.endswith((".", "?")))


def _tags(desc: MotionDescription, parts: tuple[MotionDescription, ...]) -> str:
    fields = []
    for p in parts:
        bucket = p.bucket()
        speed = p.speed_word if bucket == "other" else (_SPEED_TAGS[bucket] if bucket else "")
        d = (p.direction or "").lower()
        fields.append([p.action.replace("_", " "), _DIRECTION_TAGS.get(d, d), speed, *p.manner])
    if len(parts) == 1:
        return " | ".join(f for f in fields[0] if f)
    return " > ".join(" ".join(f for f in fs if f) for fs in fields)


def caption_key(caption: str) -> str:
    """A caption's words, lowercase, without punctuation: captions differing only in case or
    punctuation are the same paraphrase."""
    return " ".join(re.findall(r"[a-z0-9'-]+", caption.lower()))


def paraphrases(desc: MotionDescription, n: int = 6,
                seed: int | random.Random | np.random.Generator | None = 0) -> list[str]:
    """n distinct captions of `desc` in the training style, deterministic for a given seed (an
    int, a random.Random or a numpy Generator). The first is the plain canonical sentence
    ("A wolf trots forward."); the others cycle through PARAPHRASE_TEMPLATES in a random order
    with random synonyms, articles and modifier orders."""
    rng = _rng(seed, repr(desc))
    multi = len(desc.parts()) > 1
    frontable = bool(_build_part(desc, desc.family, random.Random(0), True, False, True).frontable)
    templates = _eligible(PARAPHRASE_TEMPLATES, multi, frontable)
    out = [_render(desc, PARAPHRASE_TEMPLATES[0], rng, canonical=True, heldout=False)]
    seen = {caption_key(out[0])}
    attempts = 0
    while len(out) < n:
        order = templates[:]
        rng.shuffle(order)
        for template in order:
            caption = _render(desc, template, rng, canonical=False, heldout=False)
            if caption_key(caption) not in seen:
                seen.add(caption_key(caption))
                out.append(caption)
                if len(out) >= n:
                    break
        attempts += 1
        if attempts > 50 + 10 * n:
            raise RuntimeError(f"Could not find {n} distinct captions for {desc}.")
    return out[:n]


def heldout_caption(desc: MotionDescription,
                    seed: int | random.Random | np.random.Generator | None = 0) -> str:
    """One caption in the held-out style (imperatives, requests, terse tags; see module docs)."""
    rng = _rng(seed, repr(desc))
    return _render(desc, rng.choice(HELDOUT_TEMPLATES), rng, canonical=False, heldout=True)


def heldout_captions(desc: MotionDescription, n: int = 3,
                     seed: int | random.Random | np.random.Generator | None = 0) -> list[str]:
    """Up to n distinct held-out captions."""
    rng = _rng(seed, repr(desc))
    out: list[str] = []
    for _ in range(20 * n):
        caption = heldout_caption(desc, rng)
        if caption not in out:
            out.append(caption)
            if len(out) >= n:
                break
    return out


# ---------------------------------------------------------------------------------------------
# Authored clip names
# ---------------------------------------------------------------------------------------------

_STOPWORDS = frozenset({"armature", "animalarmature", "anim", "animation", "action", "mixamo", "com", "layer",
                        "take", "clip", "loop", "cycle", "root", "baselayer", "default", "skeleton", "rig",
                        "and", "the", "a", "anima", "motion"})
# word (lemma) → canonical action
_CLIP_ACTIONS = {
    "walk": "walk", "stroll": "walk", "trot": "trot", "jog": "trot", "pace": "pace", "canter": "canter",
    "lope": "canter", "gallop": "gallop", "bound": "bound", "pronk": "pronk", "stot": "pronk", "sit": "sit",
    "lie": "lie_down", "lay": "lie_down", "sleep": "lie_down", "standup": "stand_up", "getup": "stand_up",
    "rear": "rear_up", "jump": "jump", "leap": "jump", "hop": "hop", "survey": "look_around",
    "lookaround": "look_around", "look": "look_around", "sniff": "sniff", "smell": "sniff", "shake": "shake",
    "wag": "wag_tail", "idle": "idle", "stand": "idle", "breathe": "idle", "rest": "idle", "eat": "eat",
    "graze": "eat", "feed": "eat", "drink": "eat", "attack": "attack", "die": "death", "dead": "death",
    "death": "death", "hit": "hit", "hitreact": "hit", "react": "hit", "hurt": "hit", "damage": "hit",
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
    ("head", "low"): "headlow",
}
_ATTACK_KINDS = frozenset({"headbutt", "bite", "kick", "punch", "claw", "slash", "swipe", "stomp", "tailwhip",
                           "ram", "gore", "sting", "charge", "slam", "tackle"})
_CLIP_DIRECTIONS = {"left": "left", "l": "left", "right": "right", "r": "right", "forward": "forward",
                    "fwd": "forward", "front": "forward", "back": "backward", "backward": "backward",
                    "bwd": "backward", "circle": "in a circle", "inplace": "in place"}
_CLIP_SPEEDS = {"fast": "quickly", "quick": "quickly", "slow": "slowly", "slowly": "slowly",
                "quickly": "quickly"}
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


def _label_words(label: str) -> str:
    words = [w for w in label.lower().split() if w.isalpha() and w not in _STOPWORDS]
    return " ".join(words)


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
    # bigrams first, then lemmas
    toks: list[str] = []
    i = 0
    while i < len(raw):
        if i + 1 < len(raw) and (raw[i], raw[i + 1]) in _CLIP_BIGRAMS:
            toks.append(_CLIP_BIGRAMS[(raw[i], raw[i + 1])])
            i += 2
        else:
            toks.append(raw[i] if raw[i].isdigit() else _lemma(raw[i]))
            i += 1
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
            target["speed_word"] = _CLIP_SPEEDS[tok]
        elif tok in _CLIP_MANNER:
            target["manner"].append(_CLIP_MANNER[tok])
        elif _manner_kind(tok) in ("adv", "adj", "ing"):
            target["manner"].append(tok)  # other words ("Eat_Grass") stay only in the label
    label = " ".join(raw)
    if not segs:
        return MotionDescription(species, family, "move", label=label, direction=pending["direction"],
                                 speed_word=pending["speed_word"], manner=tuple(pending["manner"]))
    if len(segs) > 1 and segs[0]["action"] == "idle" and not segs[1]["explicit"]:
        segs[1]["manner"] = segs[0]["manner"] + segs[1]["manner"]
        segs[1]["direction"] = segs[1]["direction"] or segs[0]["direction"]
        segs.pop(0)
    if len(segs) > 1 and segs[-1]["action"] == "idle" and not segs[-1]["explicit"] \
            and segs[-2]["action"] in ("sit", "lie_down", "crouch", "coil"):
        segs.pop()
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
    if len(parts) == 1:
        return parts[0]
    return MotionDescription(species, family, parts[0].action, segments=tuple(parts), label=label)


def clip_paraphrases(clip_name: str, species: str, family: str, n: int = 6,
                     seed: int | random.Random | np.random.Generator | None = 0) -> list[str]:
    """paraphrases(describe_clip_name(...)): captions for an authored clip (≥ n, distinct)."""
    return paraphrases(describe_clip_name(clip_name, species, family), n=n, seed=seed)
