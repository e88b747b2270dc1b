"""`kirin data build`: the procedural motion library (creatures × controllers × captions).

Deterministic by seed: creature k is built from (seed, k) and its clips from (seed, k, i), so any
worker count gives the same files. Splits are by skeleton instance (a creature's clips are all in
one split) and one whole family is held out for zero-shot tests. Each creature gets a shaded
224×224 reference image from a random three-quarter view (image conditioning).
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..core.creature import FAMILIES, Creature
from ..core.motion import joint_positions
from ..core.skinning import save_mesh
from ..eval.metrics import broken_reasons, is_static_clip
from ..io.clip import save_clip
from .captions.description import MotionDescription
from .captions.heldout import heldout_caption
from .captions.paraphrase import paraphrases
from .controllers.common import Travel
from .controllers.dispatch import ACTIONS_BY_FAMILY, generate
from .controllers.segments import GaitSegment
from .families.build import build_creature
from .render import rasterize, three_quarter_camera, write_png

LOCOMOTION = {"walk", "trot", "pace", "canter", "gallop", "rotary_gallop", "bound", "pronk", "run", "hop",
              "tripod", "wave", "slither", "sidewind", "swim"}
DIRECTIONS = ("forward", "forward", "forward", "left", "right", "backward", "circle")
TRANSITIONS = {  # family → gait sequences used for clips with transitions
    "quadruped": (("walk", "trot", "stop"), ("trot", "canter"), ("walk", "stop")),
    "dragon": (("walk", "trot", "stop"),),
    "biped": (("walk", "run"), ("run", "walk", "stop")),
}
CAPTION_ACTION = {("hexapod", "tripod"): "tripod_gait", ("hexapod", "wave"): "wave_gait",
                  ("spider", "tripod"): "tripod_gait", ("spider", "wave"): "wave_gait",
                  ("quadruped", "rotary_gallop"): "gallop", ("dragon", "rotary_gallop"): "gallop"}


@dataclass
class BuildConfig:
    clips: int = 1000
    seed: int = 0
    fps: float = 30.0
    min_frames: int = 60
    max_frames: int = 120
    clips_per_creature: int = 10
    test_fraction: float = 0.1  # of skeleton instances
    zero_shot_family: str = "dragon"
    shard_size: int = 1000
    image_size: int = 224
    captions_per_clip: int = 6
    transition_fraction: float = 0.15
    workers: int = 2


def _rng(*keys: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([abs(int(k)) for k in keys]))


def creature_plan(config: BuildConfig) -> list[tuple[int, str, int]]:
    """(creature index, family, clip count) for every creature, families in turn."""
    count = -(-config.clips // config.clips_per_creature)
    plan = []
    for k in range(count):
        clips = min(config.clips_per_creature, config.clips - k * config.clips_per_creature)
        plan.append((k, FAMILIES[k % len(FAMILIES)], clips))
    return plan


def creature_split(config: BuildConfig, k: int, family: str) -> str:
    if family == config.zero_shot_family:
        return "zero_shot"
    return "test" if _rng(config.seed, k, 7).random() < config.test_fraction else "train"


def _describe(creature: Creature, action: str, speed: float, direction: str,
              segments: list[GaitSegment] | None) -> MotionDescription:
    fam = creature.family
    leg = creature.leg_length or None
    if segments:
        parts = tuple(MotionDescription(creature.species, fam, CAPTION_ACTION.get((fam, s.action), s.action),
                                        direction=direction, leg_length=leg) for s in segments)
        return MotionDescription(creature.species, fam, parts[0].action, direction=direction,
                                 segments=parts, leg_length=leg)
    moving = action in LOCOMOTION
    return MotionDescription(creature.species, fam, CAPTION_ACTION.get((fam, action), action),
                             speed=speed if moving else None, direction=direction if moving else None,
                             leg_length=leg)


def _creature_job(args: tuple[BuildConfig, int, str, int, str]) -> list[dict]:
    config, k, family, clip_count, out = args
    rng = _rng(config.seed, k)
    creature = build_creature(family, seed=int(rng.integers(2**31)))
    split = creature_split(config, k, family)
    root = Path(out)
    image_rel = f"images/creature_{k:05d}.png"
    camera = three_quarter_camera(creature.mesh.vertices, rng)
    write_png(root / image_rel, rasterize(creature.mesh.vertices, creature.mesh.triangles, camera,
                                          size=config.image_size))
    # The skinned mesh, for skinning-aware joint features and binding templates.
    mesh_rel = f"meshes/creature_{k:05d}.npz"
    save_mesh(root / mesh_rel, creature.mesh)
    actions = list(ACTIONS_BY_FAMILY[family])
    # Creatures of a family take the family's actions in turn, so every action appears as soon as
    # a family has that many clips; which creature does which still varies with the seed.
    start = int(_rng(config.seed, 3).integers(len(actions)))
    offset = (k // len(FAMILIES)) * config.clips_per_creature + start
    rows = []
    for i in range(clip_count):
        index = k * config.clips_per_creature + i
        clip_rng = _rng(config.seed, k, i, 1)
        action = actions[(offset + i) % len(actions)]
        frames = int(clip_rng.integers(config.min_frames, config.max_frames + 1))
        direction = "forward"
        segments = None
        speed = None
        if family in TRANSITIONS and clip_rng.random() < config.transition_fraction:
            names = TRANSITIONS[family][int(clip_rng.integers(len(TRANSITIONS[family])))]
            segments = [GaitSegment(name, frames / config.fps / len(names)) for name in names]
            action = names[0]
        elif action in LOCOMOTION:
            direction = DIRECTIONS[int(clip_rng.integers(len(DIRECTIONS)))]
        seed = int(clip_rng.integers(2**31))
        clip = generate(creature, action, seed, frames=frames, fps=config.fps,
                        travel=Travel(direction=direction), segments=segments)
        speed = float(clip.speed)
        # ViPS' filters: a static clip of a moving action is tagged so training can skip it (idle
        # clips are meant to be still); a broken clip is not written, and the report lists it.
        positions = joint_positions(creature.rig, clip.motion)  # once, for both filters
        broken = broken_reasons(creature.rig, positions)
        if broken:
            rows.append({"broken": f"{creature.species} {action} {direction} (creature {k}, seed {seed}): "
                                   + "; ".join(broken), "family": family, "action": action})
            continue
        static = is_static_clip(positions)
        desc = _describe(creature, action, speed, direction, segments)
        captions = paraphrases(desc, n=config.captions_per_clip, seed=seed)
        shard = f"shard_{index // config.shard_size:03d}"
        rel = f"{shard}/clip_{index:06d}.npz"
        (root / shard).mkdir(parents=True, exist_ok=True)
        metadata = {
            "name": f"{creature.species} {action}", "creature": k, "family": family,
            "species": creature.species, "naming": creature.naming, "action": action,
            "segments": [s.action for s in segments] if segments else [], "speed": speed,
            "direction": direction, "split": split, "image": image_rel, "mesh": mesh_rel, "seed": seed,
            "heldout_caption": heldout_caption(desc, seed), "authored": False, "static": static,
        }
        save_clip(root / rel, creature.rig, clip.motion, captions, metadata)
        rows.append({"file": rel, "family": family, "action": action, "split": split,
                     "frames": clip.motion.frame_count, "joints": creature.rig.joint_count,
                     "segments": len(segments or ()), "static": static})
    return rows


def build_library(out: str | Path, config: BuildConfig, progress: bool = True) -> dict:
    """Write the library under `out` and return (and write) its stats report."""
    root = Path(out)
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "meshes").mkdir(parents=True, exist_ok=True)
    plan = creature_plan(config)
    jobs = [(config, k, family, clips, str(root)) for k, family, clips in plan]
    started = time.perf_counter()
    rows: list[dict] = []
    if config.workers > 1:
        with multiprocessing.get_context("spawn").Pool(config.workers) as pool:
            for done, batch in enumerate(pool.imap(_creature_job, jobs, chunksize=1), start=1):
                rows.extend(batch)
                if progress:
                    _progress(done, len(jobs), len(rows), started)
    else:
        for done, job in enumerate(jobs, start=1):
            rows.extend(_creature_job(job))
            if progress:
                _progress(done, len(jobs), len(rows), started)
    broken = [r["broken"] for r in rows if "broken" in r]
    rows = [r for r in rows if "broken" not in r]
    stats = library_stats(rows, config, time.perf_counter() - started)
    stats["broken_clips_dropped"] = broken
    (root / "index.json").write_text(json.dumps(rows))
    (root / "stats.json").write_text(json.dumps(stats, indent=2))
    (root / "stats.md").write_text(stats_markdown(stats))
    return stats


def _progress(done: int, total: int, clips: int, started: float) -> None:
    elapsed = time.perf_counter() - started
    width = 30
    filled = int(width * done / total)
    eta = elapsed / done * (total - done)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} creatures, {clips} clips, "
                     f"{elapsed:.0f}s elapsed, ~{eta:.0f}s left")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def library_stats(rows: list[dict], config: BuildConfig, seconds: float) -> dict:
    frames = np.array([r["frames"] for r in rows]) if rows else np.zeros(1)
    joints = np.array([r["joints"] for r in rows]) if rows else np.zeros(1)
    per_action: dict[str, dict[str, int]] = {}
    for r in rows:
        per_action.setdefault(r["family"], Counter())[r["action"]] += 1
    return {
        "config": asdict(config),
        "clips": len(rows),
        "seconds": round(seconds, 1),
        "clips_per_family": dict(Counter(r["family"] for r in rows)),
        "clips_per_split": dict(Counter(r["split"] for r in rows)),
        "clips_per_family_action": {f: dict(c) for f, c in per_action.items()},
        "clips_with_transitions": sum(r["segments"] > 0 for r in rows),
        "static_clips_per_action": dict(Counter(r["action"] for r in rows if r.get("static"))),
        "frames": {"min": int(frames.min()), "mean": float(frames.mean()), "max": int(frames.max())},
        "joints": {"min": int(joints.min()), "mean": float(joints.mean()), "max": int(joints.max())},
    }


def stats_markdown(stats: dict) -> str:
    lines = [f"# Kirin procedural library: {stats['clips']} clips", "",
             f"Built in {stats['seconds']} s (seed {stats['config']['seed']}, {stats['config']['fps']} fps).",
             "", f"Splits: {stats['clips_per_split']}", "",
             f"Frames per clip: {stats['frames']}; joints per rig: {stats['joints']}; "
             f"clips with transitions: {stats['clips_with_transitions']}.", "",
             "Static clips (ViPS filter: RMS joint displacement < 0.0015 of the bounding-box diagonal "
             "in ≥ 90% of frames; tagged, skipped in training unless idle): "
             f"{stats['static_clips_per_action']}.",
             "", f"Broken clips dropped: {len(stats.get('broken_clips_dropped', []))}.",
             "",
             "| family | clips | actions |", "|---|---|---|"]
    for family, count in sorted(stats["clips_per_family"].items()):
        actions = ", ".join(f"{a} {n}" for a, n in sorted(stats["clips_per_family_action"][family].items()))
        lines.append(f"| {family} | {count} | {actions} |")
    return "\n".join(lines) + "\n"
