"""Retrieval from a motion library, to guide generation (ReMoDiffuse's idea, kept simple).

Nearest-neighbour retrieval by caption beats a small diffusion model trained on a 2-core budget on
many prompts (models/weights/motion/MODEL_CARD.md). So Generate Motion does not have to be worse:
when a library clip's caption is close to the prompt and that clip's creature has the rig's
build (same number of feet, most joints mapped), the clip is retargeted onto the rig
(kirin_addon/retarget/retargeter.py) and generation starts from it, noised part-way (SDEdit). The
network then reshapes it for this rig, prompt and image; where nothing fits, generation starts
from pure noise as before.

The bank holds what the search needs in memory (every caption's MiniLM sentence vector, the
network's text embedding) and reads a clip's file only when its caption is close. A feature cache
becomes a bank in models/motion/bank.py (`open_bank`, and `kirin bank build` for the default one);
the search and the retargeting are here, numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.canonical import CanonicalFrame, CanonicalRig, canonical_rig, procedural_frame
from ..core.motion import Motion, joint_positions
from ..core.rig import Rig, rig_key
from ..io.clip import Clip, load_clip
from ..retarget.joint_mapping import auto_map_joints
from ..retarget.retargeter import retarget
from .features import CONTACT

MIDLINE = 0.015  # body sizes from the midline: a foot nearer than this is a tail tip, not a leg
MAX_STRETCH = 1.5  # a one-shot clip may be played up to this much faster or slower to fit the length


@dataclass
class RetrievalConfig:
    enabled: bool = True  # False: plain generation even when a bank is at hand
    min_score: float = 0.6  # cosine between MiniLM sentence vectors of the prompt and a caption
    min_mapped: float = 0.5  # share of the rig's joints the joint mapping must reach (wings may stay still)
    candidates: int = 8  # best captions tried, in order, until one's creature fits the rig
    within: float = 0.1  # ... as long as they are this close to the best caption's score (no other action)
    # Body sizes per second a planted foot may slide on the rig once retargeted (mean over the
    # clip's own contact frames): faster, the proportions do not carry the motion over (the lock
    # could not hold those feet without dragging the legs) and the network does better.
    max_slide: float = 0.3
    # How far along the noise schedule generation starts from the retrieved clip (SDEdit): 0 takes
    # the clip as it is (cleaned up), 1 ignores it. Measured in the model card: the v0 network
    # loses R-Precision even at 0.02 (its x0 at low noise is not yet the identity), so 0 for now.
    strength: float = 0.0


@dataclass(frozen=True)
class BankClip:
    """One clip of the bank's library, as much as the search needs before its file is read."""

    path: Path  # the clip file (kirin_addon/io/clip.py)
    creature: int  # the bank's index of its rig: how a creature fits a rig is worked out once
    procedural: bool  # built canonical (only scaled); an authored clip's frame is detected
    loop: bool  # its last pose flows into its first: it may be tiled
    captions: tuple[int, ...]  # indices into the bank's captions
    searchable: bool  # a clip the search may return (a training clip with captions)
    features: np.ndarray  # (T,J,C) its motion features (memory-mapped): the library's exact contacts


@dataclass
class Retrieved:
    record: int  # index into the bank's clips
    caption: str
    score: float
    motion: Motion  # retargeted onto the rig, in the rig's own space
    mapped: float  # share of the rig's joints that follow a joint of the clip
    # (T,F) the clip's own foot contacts (exact labels of the library) for the rig's feet, in the
    # order of the `feet` asked for (never planted: a foot that follows none of the clip's feet);
    # None when no foot follows one
    contacts: np.ndarray | None = None


class MotionBank:
    """A library's clips, searchable by caption: `vectors` (N,384) holds the sentence vector of each
    of the `captions`; `source` names the library in messages."""

    def __init__(
        self, clips: Sequence[BankClip], captions: Sequence[str], vectors: np.ndarray, source: str = ""
    ):
        self.clips = list(clips)
        self.captions = list(captions)
        self.source = source
        owners, ids = [], []
        for i, clip in enumerate(self.clips):
            if clip.searchable:
                owners += [i] * len(clip.captions)
                ids += clip.captions
        if not ids:
            raise ValueError(f"No clips with captions to search in {source or 'the bank'}")
        self._fits: dict[tuple[int, str], _Fit] = {}  # (bank creature, target rig key) → how they fit
        self.owners = np.asarray(owners, dtype=np.int64)
        self.caption_ids = np.asarray(ids, dtype=np.int64)
        self.vectors = np.asarray(vectors, np.float32)[self.caption_ids]

    def search(self, vector: np.ndarray, count: int = 8) -> list[tuple[int, int, float]]:
        """The `count` clips whose best caption is closest to a sentence vector: (clip, caption id,
        cosine), best first."""
        scores = self.vectors @ np.asarray(vector, np.float32).reshape(-1)
        best: dict[int, tuple[int, float]] = {}
        for k in np.argsort(-scores):
            owner = int(self.owners[k])
            if owner not in best:
                best[owner] = (int(self.caption_ids[k]), float(scores[k]))
                if len(best) == count:
                    break
        return [(owner, caption, score) for owner, (caption, score) in best.items()]

    def load(self, index: int) -> tuple[Clip, CanonicalFrame | None]:
        """A clip's file and the canonical frame its features were computed in (None: an authored
        clip, whose frame is detected)."""
        clip = self.clips[index]
        if not clip.path.exists():
            where = self.source or "the bank"
            raise ValueError(f"The clip file {clip.path} of {where} is gone; this needs the clips")
        loaded = load_clip(clip.path)
        return loaded, procedural_frame(loaded.rig) if clip.procedural else None

    def retrieve(
        self,
        vector: np.ndarray,
        rig: Rig,
        frame: CanonicalFrame,
        feet: np.ndarray,
        config: RetrievalConfig | None = None,
        count: int = 1,
        direction: str | None = None,
    ) -> list[Retrieved]:
        """Up to `count` best-captioned clips whose creature fits the rig, retargeted onto it, best
        first; none when no caption is close enough or no close clip's creature has the rig's build.
        `direction` (kirin_addon.library.captions.phrasing.DIRECTIONS, e.g. from `stated_direction` of
        the prompt): clips travelling another way are passed over — sentence vectors barely tell
        "forward" from "backwards"."""
        config = config or RetrievalConfig()
        target = CanonicalRig(rig.transformed(frame.matrix()), frame, np.asarray(feet))
        target_key = rig_key(rig)
        found: list[Retrieved] = []
        results = self.search(vector, max(config.candidates, count))
        best = results[0][2] if results else 0.0
        for record, caption, score in results:
            if score < config.min_score or score < best - config.within:
                break
            pair = (self.clips[record].creature, target_key)
            fit = self._fits.get(pair)
            if fit is not None and not fit.fits(config):
                continue  # this creature was already found not to fit the rig: not even loaded
            clip, source_frame = self.load(record)
            if not _same_travel(direction, clip.metadata):
                continue
            if fit is None:
                fit = self._fits[pair] = _Fit.of(canonical_rig(clip.rig, source_frame), target)
                if not fit.fits(config):
                    continue  # a biped's walk on a quadruped (hands as front feet) is no guide
            result = retarget(
                clip.rig, clip.motion, rig, fit.mapping, source_frame=fit.source_frame, target_frame=frame
            )
            contacts = None
            if any(f is not None for f in fit.foot_sources):
                contacts = self._contacts(record, fit)
                if _stance_slide(result.motion, rig, target, contacts) > config.max_slide:
                    continue
            found.append(
                Retrieved(record, self.captions[caption], score, result.motion, fit.mapped, contacts)
            )
            if len(found) == count:
                break
        return found

    def _contacts(self, record: int, fit: _Fit) -> np.ndarray:
        """(T,F) the clip's contact labels for the rig's feet. A foot that follows none of the clip's
        (a tail tip resting on the ground) is never planted; the others take the clip's labels, and
        must not slide under them."""
        planted = np.asarray(self.clips[record].features, dtype=np.float32)[:, :, CONTACT] > 0.5
        contacts = np.zeros((len(planted), len(fit.foot_sources)), dtype=bool)
        for column, source_foot in enumerate(fit.foot_sources):
            if source_foot is not None:
                contacts[:, column] = planted[:, source_foot]
        return contacts


def _stance_slide(motion: Motion, rig: Rig, target: CanonicalRig, contacts: np.ndarray) -> float:
    """Mean horizontal speed (body sizes/s) of the rig's feet in the frames the clip says they are
    planted (contacts (T,F) in the order of target.feet)."""
    if not contacts.any() or motion.frame_count < 2:
        return 0.0
    feet = np.asarray(target.feet, dtype=np.int64)
    points = target.frame.to_canonical_points(joint_positions(rig, motion)[:, feet])
    speed = np.linalg.norm(np.diff(points[..., :2], axis=0), axis=-1) * motion.fps
    still = contacts[1:] & contacts[:-1]
    return float(speed[still].mean()) if still.any() else 0.0


@dataclass
class _Fit:
    """How one of the bank's creatures fits a rig (the joint mapping is the slow part of a retarget,
    and a bank holds several clips per creature, so it is worked out once per pair)."""

    mapping: dict[str, str | None]  # rig joint → the creature's joint
    mapped: float  # share of the rig's joints mapped
    legs_match: bool
    source_frame: CanonicalFrame
    foot_sources: list[int | None]  # per foot of the rig: the creature's foot it follows

    @classmethod
    def of(cls, source: CanonicalRig, target: CanonicalRig) -> _Fit:
        mapping = auto_map_joints(source.rig, target.rig)
        mapped = sum(v is not None for v in mapping.values()) / target.rig.joint_count
        near = _near_feet(source.rig, source.feet)
        foot_sources = []
        for foot in np.asarray(target.feet).reshape(-1):
            name = mapping.get(target.rig.names[int(foot)])
            foot_sources.append(next((f for f, names in near if name in names), None))
        legs = _feet_follow_feet(mapping, target, source)
        return cls(mapping, mapped, legs, source.frame, foot_sources)

    def fits(self, config: RetrievalConfig) -> bool:
        return self.legs_match and self.mapped >= config.min_mapped


_TRAVEL = {"turning left": "left", "turning right": "right", "in a circle": "circle", "in place": None}


def _same_travel(direction: str | None, metadata: dict) -> bool:
    """Whether a clip travels the way a prompt says (True when either says nothing or the clip
    stays in place)."""
    wanted = _TRAVEL.get(direction, direction)
    travels = _TRAVEL.get(metadata.get("direction"), metadata.get("direction"))
    moving = bool(metadata.get("speed") or 0.0)
    return not (wanted and travels and moving) or wanted == travels


def _near_feet(rig: Rig, feet: np.ndarray) -> list[tuple[int, set[str]]]:
    """Per foot, the foot and the names of it and the joints just above and below it (rigs split
    ankles differently)."""
    out = []
    for j in np.asarray(feet).reshape(-1):
        near = {int(j), int(rig.parents[j]), *(int(c) for c in rig.children[j])}
        out.append((int(j), {rig.names[k] for k in near if k >= 0}))
    return out


def _legs(rig: Rig, feet: np.ndarray) -> list[set[str]]:
    """`_near_feet` of the feet off the midline of a canonical rig (+X its left; a long tail's tip
    on the ground is no leg)."""
    return [names for j, names in _near_feet(rig, feet) if abs(rig.heads[j, 0]) > MIDLINE * rig.body_size]


def _feet_follow_feet(mapping: dict[str, str | None], target: CanonicalRig, source: CanonicalRig) -> bool:
    """The clip's creature has the rig's build: each leg of the rig follows a leg of the clip's
    creature and each leg of the clip's creature drives one of the rig's — a bear's front paws may
    not become a knight's hands (both rigs canonical; `mapping` target name → source name)."""
    target_legs, source_legs = _legs(target.rig, target.feet), _legs(source.rig, source.feet)
    if len(target_legs) != len(source_legs):
        return False
    source_names = set().union(*source_legs) if source_legs else set()
    for leg in target_legs:
        if not {mapping.get(name) for name in leg} & source_names:
            return False
    driven = {mapping.get(name) for leg in target_legs for name in leg}
    return all(leg & driven for leg in source_legs)


def retime(motion: Motion, frames: int, loop: bool) -> Motion:
    """A one-shot clip (lying down, a jump) played faster or slower, within MAX_STRETCH, so that it
    ends near `frames`: cut short it would not finish, held it would stand still. Loops are kept."""
    if loop or motion.frame_count < 2:
        return motion
    ratio = float(np.clip((frames - 1) / (motion.frame_count - 1), 1 / MAX_STRETCH, MAX_STRETCH))
    played = motion.resampled(motion.fps * ratio)
    return Motion(motion.fps, played.root_positions, played.rotations, played.translations)


def retime_rows(values: np.ndarray, frames: int) -> np.ndarray:
    """Per-frame values (T,...) of a clip (e.g. its contacts) at the frames `retime` played it at
    (`frames` of them, ends aligned): the nearest frame's."""
    index = np.round(np.linspace(0, len(values) - 1, frames)).astype(np.int64)
    return values[index]


def fit_length(features: np.ndarray, frames: int, loop: bool) -> np.ndarray:
    """(T,...) → (frames,...): cut, or lengthened by repeating a looping clip or holding the last
    frame's values (its velocities carry on) of a clip that does not loop."""
    if len(features) >= frames:
        return features[:frames]
    if loop:
        return np.resize(features, (frames,) + features.shape[1:])
    return np.concatenate([features, np.repeat(features[-1:], frames - len(features), axis=0)])
