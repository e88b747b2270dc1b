"""The captions' vocabulary: verb phrases of every canonical action (inflected, per family), the nouns of
every known species, possessives and articles."""

from __future__ import annotations

from dataclasses import dataclass

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



# Words of a clip name that say nothing about the motion.
_STOPWORDS = frozenset({"armature", "animalarmature", "anim", "animation", "action", "mixamo", "com", "layer",
                        "take", "clip", "loop", "cycle", "root", "baselayer", "default", "skeleton", "rig",
                        "and", "the", "a", "anima", "motion"})


def _label_words(label: str) -> str:
    words = [w for w in label.lower().split() if w.isalpha() and w not in _STOPWORDS]
    return " ".join(words)

