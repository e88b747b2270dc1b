"""Paraphrases in the training style: the templates and n distinct captions of one description."""

from __future__ import annotations

import random

import numpy as np

from .description import MotionDescription
from .render import _build_part, _render, _rng, caption_key

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


def _eligible(templates: tuple[str, ...], multi: bool, frontable: bool) -> list[str]:
    out = []
    for t in templates:
        if ("{g1}" in t or "{v3rest}" in t) and not multi:
            continue
        if "{front}" in t and (multi or not frontable):
            continue
        out.append(t)
    return out



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

