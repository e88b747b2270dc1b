"""Speed, direction and manner: speed buckets relative to body size, the phrases for each bucket and
direction (training and held-out style), and how a manner word is used (adverb, adjective, -ing, phrase)."""

from __future__ import annotations

import math
import re

from .lexicon import SPEED_BUCKETS

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

