"""Rendering one caption: clauses per part (verb, adverbs, direction, manner), the subject, and a template
filled in the training or the held-out style."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

import numpy as np

from .description import MotionDescription
from .lexicon import (
    _GAIT_VERBS_DIR,
    _GAIT_VERBS_NODIR,
    _STATIONARY,
    VerbPhrase,
    _article,
    _phrase,
    _resolve,
    _words,
    subject_nouns,
)
from .phrasing import (
    _DIRECTION_PHRASES,
    _DIRECTION_TAGS,
    _HELDOUT_DIRECTION_PHRASES,
    _HELDOUT_SPEED_PHRASES,
    _HELDOUT_TURN_PHRASES,
    _SPEED_ADJECTIVES,
    _SPEED_PHRASES,
    _SPEED_TAGS,
    _TURN_PHRASES,
    _is_adverb,
    _manner_kind,
)


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
