"""Retrieval from a motion library, to guide generation (ReMoDiffuse's idea, kept simple).

Nearest-neighbour retrieval by caption beats a small diffusion model trained on a 2-core budget on
many prompts (models/weights/motion/MODEL_CARD.md). So Generate Motion does not have to be worse:
when a library clip's caption is close to the prompt and that clip's creature has the rig's
build (same number of feet, most joints mapped), the clip is retargeted onto the rig
(kirin_addon/retarget/retargeter.py) and generation starts from it, noised part-way (SDEdit in
`Diffusion.sample_ddim`). The network then reshapes it for this rig, prompt and image; where
nothing fits, generation starts from pure noise as before.

The bank is a feature cache (models/data/cache.py: captions, their MiniLM token features, clip
paths and splits) whose clip files are still on disk; only its training clips are searched.
`build_bank` makes the default one (a procedural library, every clip searchable) where
`default_bank_folder` says; `kirin bank build` runs it, and any cache of the user's own library
(authored clips ingested with `kirin data ingest`) can serve instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...kirin_addon.core.canonical import CanonicalFrame, CanonicalRig, canonical_rig
from ...kirin_addon.core.motion import Motion
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.generate.features import CONTACT
from ..data.batching import usable
from ..data.cache import FeatureCache, load_record_clip, rig_key
from ..encoders.text import sentence_vectors

MIDLINE = 0.015  # body sizes from the midline: a foot nearer than this is a tail tip, not a leg
MAX_STRETCH = 1.5  # a one-shot clip may be played up to this much faster or slower to fit the length
SENTENCES_FILE = "sentences.npy"  # the bank's caption sentence vectors, written into the cache once
BANK_ENV = "KIRIN_BANK"  # overrides where the default bank lives
BANK_CLIPS = 1200  # default bank size: ≈150 procedural creatures, every family and action
BANK_SEED = 7


def default_bank_folder() -> Path:
    """$KIRIN_BANK, else ~/.cache/kirin/bank (XDG_CACHE_HOME respected): the bank's library and cache."""
    if os.environ.get(BANK_ENV):
        return Path(os.environ[BANK_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kirin" / "bank"


def build_bank(
    folder: str | Path | None = None,
    clips: int = BANK_CLIPS,
    seed: int = BANK_SEED,
    workers: int = 2,
    progress: bool = True,
) -> Path:
    """A procedural library under `folder`/library and its feature cache under `folder`/cache (the
    bank: every clip searchable, no held-out splits); returns the cache folder."""
    from ...kirin_addon.library.build import BuildConfig, build_library
    from ..data.cache import build_cache
    from ..encoders.image import load_image_encoder
    from ..encoders.text import load_text_encoder

    folder = Path(folder) if folder else default_bank_folder()
    config = BuildConfig(clips=clips, seed=seed, test_fraction=0.0, zero_shot_family="", workers=workers)
    build_library(folder / "library", config, progress=progress)
    build_cache(
        [folder / "library"], folder / "cache", load_text_encoder(), load_image_encoder(), progress=progress
    )
    MotionBank(folder / "cache")  # computes and keeps the sentence vectors now, not at first use
    return folder / "cache"


def open_default_bank() -> MotionBank | None:
    """The default bank when it has been built (`kirin bank build`), else None."""
    cache = default_bank_folder() / "cache"
    return MotionBank(cache) if (cache / "clips.json").exists() else None


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


@dataclass
class Retrieved:
    record: int  # index into the bank's cache records
    caption: str
    score: float
    motion: Motion  # retargeted onto the rig, in the rig's own space
    mapped: float  # share of the rig's joints that follow a joint of the clip
    # (T,F) the clip's own foot contacts (exact labels of the library) for the rig's feet, in the
    # order of the `feet` asked for (never planted: a foot that follows none of the clip's feet);
    # None when no foot follows one
    contacts: np.ndarray | None = None


class MotionBank:
    """The training clips of a feature cache, searchable by caption."""

    def __init__(self, cache: FeatureCache | str | Path, split: str = "train"):
        self.cache = cache if isinstance(cache, FeatureCache) else FeatureCache(cache)
        owners, ids = [], []
        for i, record in enumerate(self.cache.records):
            if usable(record, split):
                owners += [i] * len(record["captions"])
                ids += record["captions"]
        if not ids:
            raise ValueError(f"No {split} clips with captions in {self.cache.folder}")
        self._fits: dict[tuple[int, str], _Fit] = {}  # (bank rig, target rig key) → how they fit
        self.owners = np.asarray(owners, dtype=np.int64)
        self.caption_ids = np.asarray(ids, dtype=np.int64)
        self.vectors = self._sentences()[self.caption_ids]

    def _sentences(self) -> np.ndarray:
        """Every caption's sentence vector, computed once and kept beside the cache (fp16)."""
        path = self.cache.folder / SENTENCES_FILE
        if path.exists():
            vectors = np.load(path)
            if len(vectors) == len(self.cache.captions):
                return vectors.astype(np.float32)
        vectors = sentence_vectors(self.cache.text_tokens, self.cache.text_masks)
        try:
            np.save(path, vectors.astype(np.float16))
        except OSError:
            pass  # a read-only cache is searched all the same, just computed each time
        return vectors

    def search(self, vector: np.ndarray, count: int = 8) -> list[tuple[int, int, float]]:
        """The `count` clips whose best caption is closest to a sentence vector: (record, caption id,
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
        from ...kirin_addon.retarget.retargeter import retarget

        config = config or RetrievalConfig()
        target = CanonicalRig(rig.transformed(frame.matrix()), frame, np.asarray(feet))
        target_key = rig_key(rig)
        found: list[Retrieved] = []
        results = self.search(vector, max(config.candidates, count))
        best = results[0][2] if results else 0.0
        for record, caption, score in results:
            if score < config.min_score or score < best - config.within:
                break
            pair = (int(self.cache.records[record]["rig"]), target_key)
            fit = self._fits.get(pair)
            if fit is not None and not fit.fits(config):
                continue  # this creature was already found not to fit the rig: not even loaded
            clip, source_frame = load_record_clip(self.cache, record)
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
                # A foot that follows none of the clip's (a tail tip resting on the ground) is never
                # planted; the others take the clip's labels, and must not slide under them.
                planted = self.cache.features(record)[:, :, CONTACT] > 0.5
                contacts = np.zeros((len(planted), len(fit.foot_sources)), dtype=bool)
                for column, source_foot in enumerate(fit.foot_sources):
                    if source_foot is not None:
                        contacts[:, column] = planted[:, source_foot]
                if _stance_slide(result.motion, rig, target, contacts) > config.max_slide:
                    continue
            found.append(
                Retrieved(record, self.cache.captions[caption], score, result.motion, fit.mapped, contacts)
            )
            if len(found) == count:
                break
        return found


def _stance_slide(motion: Motion, rig: Rig, target: CanonicalRig, contacts: np.ndarray) -> float:
    """Mean horizontal speed (body sizes/s) of the rig's feet in the frames the clip says they are
    planted (contacts (T,F) in the order of target.feet)."""
    from ...kirin_addon.core.motion import joint_positions

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
        from ...kirin_addon.retarget.joint_mapping import auto_map_joints

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
    """(T,J,C) → (frames,J,C): cut, or lengthened by repeating a looping clip or holding the last
    frame's features (its velocities carry on) of a clip that does not loop."""
    if len(features) >= frames:
        return features[:frames]
    if loop:
        return np.resize(features, (frames,) + features.shape[1:])
    return np.concatenate([features, np.repeat(features[-1:], frames - len(features), axis=0)])
