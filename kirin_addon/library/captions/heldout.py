"""The held-out caption style, for testing generalisation: imperatives, requests and terse tags, built on
the verb's base form with their own speed and direction phrasings."""

from __future__ import annotations

import random

import numpy as np

from .description import MotionDescription
from .render import _render, _rng

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

