"""Turning authored animation into library clips: names, species, captions, splits, files.

The Blender side (importers, reading Actions) is in operators/headless/common.py; this module decides
what a clip is called, how it is captioned and where it goes, and writes it (clip.py format).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.canonical import detect_canonical_frame
from ..core.motion import Motion, joint_positions
from ..core.rig import Rig
from ..eval.metrics import broken_reasons, is_static_clip
from ..io.clip import save_clip

INGEST_EXTENSIONS = (".bvh", ".glb", ".gltf", ".fbx")
CAPTIONS_PER_CLIP = 6


# The CMU motion capture database's own table of trials (cmu_descriptions.csv).
CMU_COLUMNS = {"Subject", "Trial #", "Motion Description"}


@dataclass
class CaptionTable:
    """User captions from a CSV with columns file, clip, caption (clip may be empty: whole file);
    optional species and family columns name the creature. The CMU database's table of trials
    (columns Subject, Trial #, Motion Description) reads as the captions of its takes."""

    captions: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    species: dict[str, str] = field(default_factory=dict)
    family: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, path: str | Path) -> CaptionTable:
        table = cls()
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is not None and CMU_COLUMNS <= set(reader.fieldnames):
                return table._add_cmu_trials(reader, path)
            if reader.fieldnames is None or not {"file", "caption"} <= set(reader.fieldnames):
                raise ValueError(f"{path}: the captions CSV needs the columns file, clip, caption "
                                 "(or the CMU table's Subject, Trial #, Motion Description).")
            for row in reader:
                stem = Path(row["file"]).stem
                clip = (row.get("clip") or "").strip()
                if row.get("caption"):
                    table.captions.setdefault((stem, clip), []).append(row["caption"].strip())
                if row.get("species"):
                    table.species[stem] = row["species"].strip()
                if row.get("family"):
                    table.family[stem] = row["family"].strip()
        return table

    def _add_cmu_trials(self, rows: csv.DictReader, path: str | Path) -> CaptionTable:
        """Each trial's description captions its take, whichever way the take's file is numbered
        (the database's 07_01.bvh or a zero-padded 007_01.bvh); every CMU subject is a person."""
        for row in rows:
            try:
                subject, trial = int(row["Subject"]), int(row["Trial #"])
            except (TypeError, ValueError):
                message = f"{path}: a CMU trial row without subject and trial numbers: {row}"
                raise ValueError(message) from None
            description = (row["Motion Description"] or "").strip()
            for stem in {f"{subject:02d}_{trial:02d}", f"{subject:03d}_{trial:02d}"}:
                if description:
                    self.captions.setdefault((stem, ""), []).append(description)
                self.species[stem] = "person"
                self.family[stem] = "biped"
        return self

    def for_clip(self, stem: str, clip: str) -> list[str]:
        return self.captions.get((stem, clip)) or self.captions.get((stem, ""), [])


def clip_label(action_name: str) -> str:
    """The action part of an imported action name: 'AnimalArmature|Walk' → 'Walk'."""
    return action_name.split("|")[-1].strip() or action_name


def species_from_file(path: str | Path) -> str:
    """'Snake_angry.glb' → 'snake', 'ShibaInu.glb' → 'shiba inu', '01_01.bvh' → 'person'."""
    stem = Path(path).stem
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", stem).replace("_", " ").split()
    words = [w for w in words if not w.isdigit() and w.lower() not in {"angry", "animated", "gltf"}]
    return " ".join(w.lower() for w in words) if words else "person"


_NOT_A_FOOT = re.compile(r"tail|ik|pole|target|pincer|jaw|wing|fin", re.IGNORECASE)


def count_feet(rig: Rig, world_matrix: np.ndarray | None = None) -> int:
    """Feet on the ground at rest (canonical frame): chain ends near the floor, leaving out tails
    and IK helpers by name, with candidates closer than 8% of body size counted as one foot."""
    frame = detect_canonical_frame(rig, world_matrix=world_matrix)
    canonical = rig.transformed(frame.matrix())
    feet = [j for j in canonical.foot_candidates()
            if canonical.deform[j] and not _NOT_A_FOOT.search(rig.names[j])]
    groups: list[np.ndarray] = []
    for j in feet:
        head = canonical.heads[j]
        if all(np.linalg.norm(head - g) > 0.08 * canonical.body_size for g in groups):
            groups.append(head)
    return len(groups)


def guess_family(rig: Rig, world_matrix: np.ndarray | None = None) -> str:
    """A family from the number of feet on the ground at rest; 'unknown' when it says nothing."""
    feet = count_feet(rig, world_matrix)
    if feet == 2:
        return "biped"
    if 3 <= feet <= 5:
        return "quadruped"
    if feet == 6:
        return "hexapod"
    return "spider" if 7 <= feet <= 10 else "unknown"


def clip_captions(species: str, family: str, label: str, user: list[str], seed: int) -> list[str]:
    """User captions first, then paraphrases of species + clip name up to CAPTIONS_PER_CLIP."""
    from .captions.clip_names import describe_clip_name
    from .captions.paraphrase import paraphrases

    generated = paraphrases(describe_clip_name(label, species, family), n=CAPTIONS_PER_CLIP, seed=seed)
    out = list(user)
    for caption in generated:
        if len(out) >= max(CAPTIONS_PER_CLIP, len(user)):
            break
        if caption not in out:
            out.append(caption)
    return out


def clip_file_name(stem: str, label: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{stem}__{label}").strip("_")
    return f"{safe}.npz"


@dataclass(frozen=True)
class SourceFile:
    """An authored file being ingested and what every clip in it shares: creature and split."""

    path: Path
    species: str
    family: str
    split: str  # "train" or "test"


def write_ingested_clip(out_dir: Path, source_file: SourceFile, action_name: str, rig: Rig, motion: Motion,
                        user_captions: list[str], seed: int) -> Path:
    """Write one authored action as a library clip (captions, metadata, filters) and return its path."""
    source, species, family = source_file.path, source_file.species, source_file.family
    split = source_file.split
    label = clip_label(action_name)
    captions = clip_captions(species, family, label, user_captions, seed)
    # The folder keeps two files with one stem apart (two Fox.glb in ../shared/assets).
    path = out_dir / clip_file_name(f"{source.parent.name}__{source.stem}", label)
    positions = joint_positions(rig, motion)
    save_clip(path, rig, motion, captions, {
        "name": label, "source": source.name, "action": action_name, "species": species,
        "family": family, "split": split, "fps": motion.fps, "frames": motion.frame_count,
        "authored": True, "static": is_static_clip(positions), "broken": broken_reasons(rig, positions),
    })
    return path
