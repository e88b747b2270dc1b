"""Captions: paraphrases per family × action, the held-out style, clip-name parsing."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from kirin.kirin_addon.core.creature import FAMILIES
from kirin.kirin_addon.library.captions import lexicon as lex
from kirin.kirin_addon.library.captions import phrasing, render
from kirin.kirin_addon.library.captions.clip_names import describe_clip_name
from kirin.kirin_addon.library.captions.description import MotionDescription, chain
from kirin.kirin_addon.library.captions.heldout import HELDOUT_TEMPLATES, heldout_caption
from kirin.kirin_addon.library.captions.lexicon import ACTIONS, action_words, species_words, subject_nouns
from kirin.kirin_addon.library.captions.paraphrase import PARAPHRASE_TEMPLATES, paraphrases
from kirin.kirin_addon.library.captions.phrasing import speed_bucket, speed_word
from kirin.kirin_addon.library.captions.render import caption_key

SPECIES = {"quadruped": "wolf", "biped": "human", "bird": "pigeon", "hexapod": "ant", "spider": "tarantula",
           "serpent": "cobra", "dragon": "dragon", "fish": "trout"}
LEG = {"quadruped": 0.5, "biped": 0.9, "bird": 0.12, "hexapod": 0.01, "spider": 0.02, "serpent": 1.0,
       "dragon": 1.5, "fish": 0.4}
DIRECTIONS = (None, "forward", "turning left", "in place")
REQUIRED = {
    "quadruped": "walk trot pace canter gallop bound pronk sit lie_down stand_up rear_up jump look_around "
                 "sniff shake wag_tail idle eat attack death hit",
    "biped": "walk run jump crouch idle wave turn attack death",
    "bird": "hop flap glide peck walk idle",
    "hexapod": "tripod_gait wave_gait walk idle turn",
    "spider": "tripod_gait wave_gait walk idle turn",
    "serpent": "slither sidewind coil strike",
    "fish": "swim turn idle",
    "dragon": "walk gallop fly glide roar takeoff land",
}
SPECIES_LIST = ["wolf", "dog", "fox", "horse", "deer", "cat", "bear", "cow", "rat", "shiba inu", "husky",
                "alpaca", "donkey", "bull", "human", "knight", "robot", "goblin", "man", "woman", "pigeon",
                "eagle", "chicken", "parrot", "bee", "ant", "beetle", "tarantula", "jumping spider",
                "snake", "cobra", "dragon", "trout", "shark", "tuna", "dolphin", "whale", "manta ray",
                "koi", "pufferfish", "swordfish", "apatosaurus", "stegosaurus", "triceratops",
                "parasaurolophus"]


def _has(caption: str, phrase: str) -> bool:
    return re.search(r"(?<![a-z])" + re.escape(phrase.lower()) + r"(?![a-z])", caption.lower()) is not None


def _verb_patterns(family: str, action: str, species: str) -> list[re.Pattern]:
    """Each verb form as a pattern: words may come between a phrase's head and its '^' tail, and
    a trailing "along"/"about" may be dropped; gait nouns count too."""
    words = lex._words(family, action)
    out = [re.compile(r"\b" + re.escape(n) + r"\b") for n in words.nouns]
    for phrase in words.phrases:
        for form in (phrase.third, phrase.gerund):
            head, _, tail = lex._resolve(form, species).partition("^")
            head = re.sub(r"^(mov\w*) about$|^(.*) along$", r"\1\2", head.strip())
            rx = r"\b" + re.escape(head) + r"\b" + (r".*\b" + re.escape(tail.strip()) if tail.strip() else "")
            out.append(re.compile(rx, re.IGNORECASE))
    return out


def _well_formed(caption: str) -> None:
    assert caption == caption.strip() and "  " not in caption, caption
    assert all(caption.split(" ")), caption
    assert not re.search(r"\s[,.?]|,,|\.\.|\{|\}|\^", caption), caption
    if caption.endswith((".", "?")):
        assert caption[0].isupper(), caption
    else:
        assert caption[0].islower(), caption


def _grid():
    for family in FAMILIES:
        for action in ACTIONS[family]:
            for speed in (None, 0.2, 3.0):
                for direction in DIRECTIONS:
                    yield MotionDescription(SPECIES[family], family, action, speed=speed, direction=direction,
                                            leg_length=LEG[family])


def test_vocabulary_covers_every_family() -> None:
    assert set(ACTIONS) == set(FAMILIES)
    for family, names in REQUIRED.items():
        assert set(names.split()) <= set(ACTIONS[family]), family
    for action in lex.lexicon():
        words = lex._words("quadruped", action)
        assert len(words.phrases) >= 3, action
    assert "jogs" in action_words("quadruped", "trot")
    assert "runs at full speed" in action_words("quadruped", "gallop")
    assert {"lies down", "lying down", "lie down"} <= action_words("quadruped", "lie_down")
    assert {"takes off", "taking off", "flies", "flying"} <= action_words("bird", "takeoff") | action_words(
        "bird", "fly")
    assert "trotting" in action_words("quadruped", "trot") and "sitting" in action_words("quadruped", "sit")
    assert "rises to his feet" in action_words("biped", "stand_up", species="man")


def test_species_words_and_hypernyms() -> None:
    assert species_words("dog")[:3] == ["dog", "canine", "pup"]
    assert {"horse", "stallion", "mare", "equine"} <= set(species_words("horse"))
    assert species_words("Shiba_Inu")[0] == "shiba inu"
    for species in SPECIES_LIST:
        words = species_words(species)
        assert words[0] == species and len(words) >= 2, species
    assert species_words("okapi") == ["okapi"]
    assert subject_nouns("okapi", "quadruped") == ["okapi", "animal"]
    assert lex.species_family("tarantula") == "spider" and lex.species_family("okapi") is None


def test_speed_words_relative_to_size() -> None:
    assert speed_word("quadruped", "walk", 0.3, 0.5) in ("very slowly", "slowly")
    assert speed_word("quadruped", "gallop", 12.0, 0.9) == "at full speed"
    # the same speed is fast for a rat and slow for a horse
    order = list(lex.SPEED_BUCKETS)
    assert order.index(speed_bucket("quadruped", "trot", 1.0, 0.05)) > order.index(
        speed_bucket("quadruped", "trot", 1.0, 1.2))
    # monotone in speed
    buckets = [order.index(speed_bucket("fish", "swim", v, 0.4)) for v in np.linspace(0.0, 2.0, 30)]
    assert buckets == sorted(buckets) and buckets[0] == 0 and buckets[-1] == 4


def test_paraphrases_for_every_family_action_speed_direction() -> None:
    count = 0
    for desc in _grid():
        caps = paraphrases(desc, n=6, seed=count)
        assert len(caps) == 6 and len({caption_key(c) for c in caps}) == 6, caps
        nouns = subject_nouns(desc.species, desc.family)
        verbs = _verb_patterns(desc.family, desc.action, desc.species)
        bucket = desc.bucket()
        for cap in caps:
            _well_formed(cap)
            assert any(_has(cap, w) for w in nouns), cap
            assert any(v.search(cap) for v in verbs), (desc.action, cap)
            if bucket is not None:
                said = phrasing._SPEED_PHRASES[bucket] + phrasing._SPEED_ADJECTIVES[bucket]
                assert any(_has(cap, w) for w in said), (bucket, cap)
            if desc.direction and render._direction(desc, random.Random(0), True, False)[0]:
                turning = desc.action == "turn" and desc.direction == "turning left"
                said = (phrasing._TURN_PHRASES["left"] if turning
                        else phrasing._DIRECTION_PHRASES[desc.direction][1])
                assert any(_has(cap, w) for w in said), (desc.direction, cap)
        count += 1
    assert count > 600


def test_examples_read_well() -> None:
    wolf = MotionDescription("wolf", "quadruped", "trot", speed_word="briskly", direction="forward")
    caps = paraphrases(wolf, n=12, seed=3)
    assert caps[0] == "A wolf trots briskly forward."
    assert any(" is " in c for c in caps) and any(c.startswith("The ") for c in caps)
    assert any(not c.endswith(".") for c in caps)  # lowercase fragments too
    tired = MotionDescription("wolf", "quadruped", "walk", manner=("tired", "cautiously"), direction="left")
    first = paraphrases(tired, n=6, seed=0)[0]
    assert first == "A tired wolf walks cautiously to the left."
    butt = MotionDescription("bull", "quadruped", "attack", manner=("headbutt",))
    assert paraphrases(butt, 1)[0] == "A bull attacks with a headbutt."
    assert paraphrases(MotionDescription("man", "biped", "wave"), 1)[0] == "A man waves."
    assert paraphrases(MotionDescription("eagle", "bird", "glide"), 1)[0] == "An eagle glides."
    assert paraphrases(MotionDescription("horse", "quadruped", "gallop", manner=("limping",)), 1)[0] == \
        "A horse gallops, limping."


def test_deterministic_and_seeds_vary() -> None:
    desc = MotionDescription("horse", "quadruped", "canter", speed=3.0, direction="turning right")
    assert paraphrases(desc, 8, seed=5) == paraphrases(desc, 8, seed=5)
    assert paraphrases(desc, 8, seed=random.Random(9)) == paraphrases(desc, 8, seed=random.Random(9))
    gen = paraphrases(desc, 8, seed=np.random.default_rng(1))
    assert gen == paraphrases(desc, 8, seed=np.random.default_rng(1))
    variants = {tuple(paraphrases(desc, 6, seed=s)) for s in range(10)}
    assert len(variants) >= 8
    assert heldout_caption(desc, 4) == heldout_caption(desc, 4)
    assert len({heldout_caption(desc, s) for s in range(20)}) >= 8
    assert len(paraphrases(desc, 20, seed=0)) == 20


def test_segments_join_in_order() -> None:
    dog = "dog", "quadruped"
    desc = chain(MotionDescription(*dog, "walk"), MotionDescription(*dog, "trot", speed=2.5),
                 MotionDescription(*dog, "sit"))
    assert [p.action for p in desc.parts()] == ["walk", "trot", "sit"]
    caps = paraphrases(desc, n=10, seed=2)
    assert caps[0] == "A dog walks, then trots quickly, then sits down."
    for cap in caps:
        _well_formed(cap)
        assert "then" in cap or cap.startswith("After"), cap
        positions = []
        for action in ("walk", "trot", "sit"):
            words = action_words("quadruped", action, "dog")
            hits = [m.start() for w in words for m in re.finditer(r"\b" + re.escape(w) + r"\b", cap)]
            assert hits, (action, cap)
            positions.append(min(hits))
        assert positions == sorted(positions), cap
    nested = chain(desc, MotionDescription(*dog, "lie_down"))
    assert [p.action for p in nested.parts()] == ["walk", "trot", "sit", "lie_down"]
    tags = [heldout_caption(desc, s) for s in range(40)]
    assert "dog | walk > trot brisk > sit" in tags


def test_heldout_style_is_disjoint_from_paraphrases() -> None:
    def fixed_words(template: str) -> set[str]:
        return set(re.findall(r"[a-z]+|[|?]", re.sub(r"\{[a-z0-9]+\}", " ", template.lower())))

    para_fixed = set().union(*(fixed_words(t) for t in PARAPHRASE_TEMPLATES))
    held_fixed = set().union(*(fixed_words(t) for t in HELDOUT_TEMPLATES))
    assert held_fixed and not held_fixed & para_fixed, held_fixed & para_fixed
    # held-out speed and direction phrasings are never paraphrase phrasings
    para_phr = {w for ws in phrasing._SPEED_PHRASES.values() for w in ws} | {
        w for _, ws in phrasing._DIRECTION_PHRASES.values() for w in ws}
    held_phr = {w for ws in phrasing._HELDOUT_SPEED_PHRASES.values() for w in ws} | {
        w for _, ws in phrasing._HELDOUT_DIRECTION_PHRASES.values() for w in ws}
    assert not para_phr & held_phr
    prefixes = [t.split("{")[0].strip() for t in HELDOUT_TEMPLATES if not t.startswith("{")]
    para_prefixes = [t.split("{")[0].strip() for t in PARAPHRASE_TEMPLATES if not t.startswith("{")]
    signature = {"make", "have", "let", "your", "should", "must", "could"}
    for i, desc in enumerate(_grid()):
        if i % 3:
            continue
        paras = paraphrases(desc, 6, seed=i)
        keys = {caption_key(p) for p in paras}
        for cap in paras:
            words = set(re.findall(r"[a-z]+", cap.lower()))
            assert not words & signature and "|" not in cap and "?" not in cap, cap
            assert not any(cap.startswith(p) for p in prefixes), cap
        for s in range(3):
            held = heldout_caption(desc, seed=i * 7 + s)
            _well_formed(held)
            assert caption_key(held) not in keys, held
            words = set(re.findall(r"[a-z]+", held.lower()))
            assert words & signature or "|" in held, held
            assert not any(held.startswith(p) for p in para_prefixes if p), held


def test_clip_names() -> None:
    def parts(name: str, family: str = "quadruped", species: str = "horse"):
        desc = describe_clip_name(name, species, family)
        return [(p.action, p.direction, p.manner) for p in desc.parts()]

    assert parts("Walk") == [("walk", None, ())]
    assert parts("AnimalArmature|Walk") == [("walk", None, ())]
    assert parts("Gallop_Jump") == [("gallop", None, ()), ("jump", None, ())]
    assert parts("Attack_Headbutt") == [("attack", None, ("headbutt",))]
    assert parts("Attack_Kick") == [("attack", None, ("kick",))]
    assert parts("Idle_2") == [("idle", None, ())]
    assert parts("Jump_toIdle") == [("jump", None, ()), ("idle", None, ())]
    assert parts("Death") == [("death", None, ())]
    assert parts("HitReact_Left") == [("hit", "left", ())]
    assert parts("Idle_HitReact_Right") == [("hit", "right", ())]
    assert parts("Flinch") == [("hit", None, ())]  # the lexicon's own verbs for a hit read as one
    assert parts("Recoil_Left") == [("hit", "left", ())]
    assert parts("Eating") == [("eat", None, ())]
    assert parts("Idle_Headlow") == [("idle", None, ("with a lowered head",))]
    assert parts("Survey", species="fox") == [("look_around", None, ())]
    assert parts("Run", species="fox") == [("gallop", None, ())]
    assert parts("Running", "biped", "human") == [("run", None, ())]
    assert parts("Walk_Turn_Left", "biped", "human") == [("walk", "turning left", ())]
    assert parts("TurnRight", "fish", "shark") == [("turn", "right", ())]
    assert parts("Swim_Fast", "fish", "shark") == [("swim", None, ())]
    assert describe_clip_name("Swim_Fast", "shark", "fish").speed_word == "quickly"
    assert parts("Walk", "fish", "koi") == [("swim", None, ())]
    assert parts("Eat_Grass") == [("eat", None, ())]
    assert parts("Walk_Happy") == [("walk", None, ("happy",))]
    assert parts("Lie_Down_Idle") == [("lie_down", None, ())]
    assert parts("Walk_Limp") == [("walk", None, ("limping",))]
    assert parts("Sneak", "biped", "goblin") == [("walk", None, ("stealthily",))]
    assert parts("Idle2Run", "biped", "man") == [("idle", None, ()), ("run", None, ())]
    cmu = describe_clip_name("01_01", "person", "biped")
    assert cmu.action == "move" and cmu.label == "01 01"
    assert paraphrases(cmu, 6)[0] == "A person moves."
    mixamo = describe_clip_name("Armature|mixamo.com|Layer0", "human", "biped")
    assert mixamo.action == "move"
    dance = describe_clip_name("Samba Dancing", "woman", "biped")
    assert dance.action == "dance" and paraphrases(dance, 1)[0] == "A woman dances."
    roll = describe_clip_name("Happy_Roll", "dog", "quadruped")
    assert roll.action == "move" and roll.label == "happy roll" and roll.manner == ("happy",)
    assert paraphrases(roll, 1)[0] == "A happy dog performs a roll motion."
    assert describe_clip_name("Walk", "snake", "unknown").family == "serpent"
    for name in ("Walk", "Gallop_Jump", "Attack_Headbutt", "Idle_2", "Jump_toIdle", "Death", "HitReact_Left",
                 "Eating", "AnimalArmature|Walk", "01_01", "Idle_HitReact_Left", "Survey"):
        caps = paraphrases(describe_clip_name(name, "deer", "quadruped"), 6, seed=1)
        assert len({caption_key(c) for c in caps}) == 6
        for cap in caps:
            _well_formed(cap)
    jump_idle = paraphrases(describe_clip_name("Jump_toIdle", "horse", "quadruped"), 1)[0]
    assert jump_idle == "A horse jumps, then stands still."


def test_validation() -> None:
    with pytest.raises(ValueError):
        MotionDescription("wolf", "quadruped", "fly_to_the_moon")
    with pytest.raises(ValueError):
        MotionDescription("wolf", "mammal", "walk")
    assert MotionDescription("wolf", "quadruped", "walk", manner="happily").manner == ("happily",)


def test_stated_direction_reads_the_way_a_prompt_travels() -> None:
    from kirin.kirin_addon.library.captions.phrasing import DIRECTIONS, stated_direction

    assert stated_direction("A dog walks backwards, then sits.") == "backward"
    assert stated_direction("a wolf trotting forward") == "forward"
    assert stated_direction("The horse gallops while turning left") == "turning left"  # not "left"
    assert stated_direction("A snake slithers round and round.") == "in a circle"
    assert stated_direction("The crab scuttles over to its right") == "right"
    assert stated_direction("A cat sits down.") is None
    assert stated_direction("The fox leftovers") is None  # whole words only
    assert all(stated_direction(f"it moves {d}") == d for d in DIRECTIONS)
