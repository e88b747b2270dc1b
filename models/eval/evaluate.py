"""`kirin eval`: Kirin's evaluation table (Guo et al. 2022 / MDM protocol) for a motion model.

Metrics in the text–motion evaluator's embedding space (models/eval/evaluator.py):

- R-Precision top-1/2/3: each motion ranks its own caption among 31 captions of clips showing other
  actions (Euclidean distance; averaged over motions and `rounds` random draws of distractors);
- FID: Fréchet distance between the row's motion embeddings and the real clips' of the same split;
- MM-Dist: mean distance between a motion's embedding and its caption's;
- Diversity: mean distance between two random sets (up to 300) of the row's motions;
- Multimodality: per prompt, mean distance between pairs of up to 10 generations of it.

Plus physical metrics (kirin_addon/eval/metrics.py) of the motions on their rigs, in the canonical frame
(body size 1): foot skating (mean speed of planted feet, body sizes/s), jitter (mean jerk, body
sizes/s³), penetration (mean depth below the floor, body sizes; feet measured against their rest
height because a foot joint sits above its sole), bone-length error (mean relative; ~0 by construction
for motions decoded from rotations, so generated rows also carry `feature_bone_length_error`, that of
the network's raw `pos` channels). `r_precision_pool` says among how many captions R-Precision ranked
(32 unless the split has few clips of other actions; chance top-k = k / pool).

Rows: `ground_truth` (the split's real clips), `nearest_neighbour` (for each caption, the training
clip whose MiniLM caption vector is closest — retrieval), `text`, `text_image`, `image` (generated on
each real clip's own rig, as many frames as it has) and `static_pose` (the real clip's first pose
held still: how much of the score the rig alone earns, since captions name the species).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from ...kirin_addon.eval.distributions import frechet_distance, r_precision, r_precision_pool
from ...kirin_addon.generate.measure import BOUNDED, physical_metrics
from ...kirin_addon.generate.request import GenerateRequest
from ..encoders.text import sentence_vectors
from .evaluator import DEFAULT_EVALUATOR, TextMotionEvaluator, eval_caption, eval_label

ROWS = ("ground_truth", "nearest_neighbour", "text", "text_image", "image", "static_pose")
GENERATED = ("text", "text_image", "image")
REFERENCE_ROWS = ("ground_truth", "nearest_neighbour", "static_pose")  # rows that need no motion model
SPLITS = ("test", "zero_shot", "authored", "train")
KEYS = (
    "r_precision_top1",
    "r_precision_top2",
    "r_precision_top3",
    "fid",
    "mm_dist",
    "diversity",
    "multimodality",
    "foot_skating",
    "jitter",
    "penetration",
    "bone_length_error",
)


# ----------------------------------------------------------------------------- metrics
def fid(a: np.ndarray, b: np.ndarray) -> float:
    """Fréchet distance between two sets of (N,D) embeddings."""
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    return frechet_distance(a, b)


def mm_dist(motions: np.ndarray, texts: np.ndarray) -> float:
    """Mean Euclidean distance between each motion's embedding and its caption's."""
    if not len(motions):
        return float("nan")
    return float(np.mean(np.linalg.norm(np.asarray(motions) - np.asarray(texts), axis=-1)))


def diversity(embeddings: np.ndarray, size: int = 300, seed: int = 0) -> float:
    """Mean distance between two random sets of `size` (at most N) embeddings, paired so that no
    motion is paired with itself (a permutation against its own shift by one)."""
    embeddings = np.asarray(embeddings, np.float64)
    count = len(embeddings)
    if count < 2:
        return float("nan")
    perm = np.random.default_rng(seed).permutation(count)
    first, second = perm[: min(size, count)], np.roll(perm, 1)[: min(size, count)]
    return float(np.mean(np.linalg.norm(embeddings[first] - embeddings[second], axis=-1)))


def multimodality(groups: list[np.ndarray], per_prompt: int = 10) -> float:
    """Mean over prompts of the mean distance between all pairs of (up to `per_prompt`) generations of
    that prompt; prompts with one generation are left out (NaN when none has two)."""
    values = []
    for group in groups:
        group = np.asarray(group, np.float64)[:per_prompt]
        if len(group) < 2:
            continue
        d = np.linalg.norm(group[:, None] - group[None], axis=-1)
        values.append(d[np.triu_indices(len(group), 1)].mean())
    return float(np.mean(values)) if values else float("nan")


# ----------------------------------------------------------------------------- evaluation run
@dataclass
class EvalConfig:
    model: str = ""  # motion model folder (MotionModel.load); empty: ground truth and retrieval only
    cache: str = ""  # feature cache (models/data/cache.py); its clip files must still exist
    evaluator: str = str(DEFAULT_EVALUATOR)
    split: str = "test"  # test (procedural held-out creatures), zero_shot (held-out family), authored, train
    samples: int = 0  # clips evaluated (a fixed random subset); 0: all
    steps: int | None = None  # DDIM steps (model default when None)
    guidance: float | None = None
    mm_prompts: int = 8  # prompts generated `mm_repeats` times for Multimodality
    mm_repeats: int = 4
    rows: tuple[str, ...] = ROWS
    clean: bool = True  # the foot-lock clean-up of Generate Motion
    smooth: float = 1.0  # Generate Motion's temporal smoothing (frames; 0: off)
    skin: bool = True  # give the model the rig's mesh (skinning-aware joint features) where there is one
    backend: str = "torch"  # or onnx
    bank: str = ""  # a feature cache whose training clips guide generation (models/motion/bank.py)
    strength: float = 0.0  # where on the noise schedule a retrieved clip starts (0: as it is)
    seed: int = 0
    threads: int = 1
    rounds: int = 10  # R-Precision repetitions with new distractors


@dataclass
class _Clip:
    index: int
    rig: object  # kirin_addon.core.rig.Rig (armature space)
    motion: object  # kirin_addon.core.motion.Motion
    canon: object  # CanonicalRig
    frame: object  # CanonicalFrame
    arrays: object  # RigArrays from the cache (geometry, names) for the evaluator
    mesh: object | None = None


@dataclass
class _Row:
    embeddings: list[np.ndarray] = field(default_factory=list)
    texts: list[np.ndarray] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    physical: list[dict] = field(default_factory=list)
    groups: list[np.ndarray] = field(default_factory=list)
    seconds: float = 0.0
    retrieved: int = 0  # generations that started from a retrieved clip


def select_clips(cache, split: str, samples: int = 0, seed: int = 0) -> list[int]:
    """Clip indices of a split (static clips of moving actions left out, as in training); `samples`
    picks a fixed random subset."""
    from ..data.batching import usable

    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}; one of {', '.join(SPLITS)}")
    if split == "authored":
        chosen = [i for i, r in enumerate(cache.records) if r["authored"] and usable(r, "test")]
    else:
        chosen = [
            i
            for i, r in enumerate(cache.records)
            if usable(r, split) and not (split == "test" and r["authored"])
        ]
    chosen = [i for i in chosen if cache.records[i]["captions"]]
    if not chosen:
        raise ValueError(f"No {split} clips with captions in {cache.folder}")
    if samples and samples < len(chosen):
        rng = np.random.default_rng(seed)
        chosen = sorted(int(i) for i in rng.choice(chosen, size=samples, replace=False))
    return chosen


def _load_clip(cache, index: int, with_mesh: bool = False) -> _Clip:
    """The clip file behind a cache record, in the canonical frame the cache used."""
    from ...kirin_addon.core.canonical import canonical_rig
    from ...kirin_addon.core.skinning import load_mesh
    from ..data.cache import load_record_clip

    record = cache.records[index]
    clip, frame = load_record_clip(cache, index)
    canon = canonical_rig(clip.rig, frame)
    mesh = None
    mesh_file = clip.metadata.get("mesh")
    if with_mesh and mesh_file and (Path(record["source"]) / mesh_file).exists():
        mesh = load_mesh(Path(record["source"]) / mesh_file)
    return _Clip(index, clip.rig, clip.motion, canon, canon.frame, cache.rig(record["rig"]), mesh)


def _measure(clip: _Clip, motion, raw: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """Features (what the evaluator reads) and physical metrics of a motion on the clip's rig — the
    same path for every row, so rows differ only in where the motion came from."""
    from ...kirin_addon.generate.features import motion_features

    feats = motion_features(clip.canon, clip.rig, motion)
    return feats.features, physical_metrics(clip.canon, feats.positions, motion.fps, raw)


def _held_still(motion):
    from ...kirin_addon.core.motion import Motion

    count = motion.frame_count
    return Motion(
        motion.fps,
        np.repeat(motion.root_positions[:1], count, axis=0),
        np.repeat(motion.rotations[:1], count, axis=0),
        None if motion.translations is None else np.repeat(motion.translations[:1], count, axis=0),
    )


@dataclass
class _Run:
    """One evaluation's clips (their captions' labels and embeddings) and the rows measured so far."""

    cache: object  # FeatureCache
    evaluator: TextMotionEvaluator
    records: list[dict]
    captions: list[int]  # each clip's evaluation caption
    texts: np.ndarray  # their embeddings
    labels: list[str]
    loaded: list[_Clip]
    results: dict[str, _Row] = field(default_factory=dict)
    measured: dict[str, list[tuple[np.ndarray, object, dict]]] = field(default_factory=dict)

    def add(self, row: str, n: int, features: np.ndarray, arrays, physical: dict) -> None:
        """Clip `n`'s motion in `row`: its features (embedded at the end), rig arrays and physical metrics."""
        self.measured.setdefault(row, []).append((features, arrays, physical))
        self.results.setdefault(row, _Row()).texts.append(self.texts[n])
        self.results[row].labels.append(self.labels[n])


def evaluate(config: EvalConfig, progress: bool = True) -> dict:
    """Kirin's table for one split: {"rows": {row: {metric: value}}, ...} (NaN written as null)."""
    from ..data.cache import FeatureCache

    if config.threads:
        torch.set_num_threads(config.threads)
    unknown = sorted(set(config.rows) - set(ROWS))
    if unknown:
        raise ValueError(f"Unknown rows {', '.join(unknown)}; known: {', '.join(ROWS)}")
    rows = [r for r in ROWS if r in config.rows]
    generated = [r for r in rows if r in GENERATED]
    if generated and not config.model:
        raise ValueError(f"Generated rows need --model (or ask only for {', '.join(REFERENCE_ROWS)})")
    started = time.perf_counter()
    cache = FeatureCache(config.cache)
    evaluator = TextMotionEvaluator.load(config.evaluator)
    clips = select_clips(cache, config.split, config.samples, config.seed)
    records = [cache.records[i] for i in clips]
    captions = [eval_caption(r) for r in records]
    labels = [eval_label(r, cache) for r in records]
    sentence = sentence_vectors(cache.text_tokens[captions], cache.text_masks[captions])
    texts = evaluator.embed_sentences(sentence)
    say = (lambda m: sys.stderr.write(m + "\n")) if progress else (lambda m: None)
    say(f"eval: {len(clips)} {config.split} clips, rows {', '.join(rows)}")
    loaded = [_load_clip(cache, i, with_mesh=bool(generated)) for i in clips]
    run = _Run(cache, evaluator, records, captions, texts, labels, loaded)
    _reference_rows(run, rows, sentence)
    if generated:
        _generated_rows(run, config, generated, say)

    results = run.results
    for row, items in run.measured.items():
        results[row].embeddings = list(evaluator.embed_motions([(f, a) for f, a, _ in items]))
        results[row].physical = [p for _, _, p in items]
    reference = np.stack(results["ground_truth"].embeddings)
    table = {}
    for row in rows:
        result = results.get(row)
        table[row] = _row_metrics(result, reference, config) if result and result.embeddings else _empty_row()
    return {
        "rows": table,
        "split": config.split,
        "clips": len(clips),
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()},
        "evaluator": {
            k: evaluator.card.get(k) for k in ("step", "train_seconds", "data", "test_ground_truth")
        },
        "seconds": round(time.perf_counter() - started, 1),
    }


def _reference_rows(run: _Run, rows: list[str], sentence: np.ndarray) -> None:
    """The rows that need no motion model; ground truth always (it is every row's FID reference).
    `sentence`: the clips' caption vectors, which the nearest neighbours are retrieved by."""
    tick = time.perf_counter()
    for n, clip in enumerate(run.loaded):
        features, physical = _measure(clip, clip.motion)
        run.add("ground_truth", n, features, clip.arrays, physical)
    run.results["ground_truth"].seconds = time.perf_counter() - tick

    if "static_pose" in rows:
        tick = time.perf_counter()
        for n, clip in enumerate(run.loaded):
            features, physical = _measure(clip, _held_still(clip.motion))
            run.add("static_pose", n, features, clip.arrays, physical)
        run.results["static_pose"].seconds = time.perf_counter() - tick

    if "nearest_neighbour" in rows:
        tick = time.perf_counter()
        neighbours = nearest_neighbours(run.cache, sentence)
        retrieved: dict[int, tuple[np.ndarray, object, dict]] = {}
        for n, index in enumerate(neighbours):
            if index not in retrieved:
                clip = _load_clip(run.cache, index)
                features, physical = _measure(clip, clip.motion)
                retrieved[index] = (features, clip.arrays, physical)
            features, arrays, physical = retrieved[index]
            run.add("nearest_neighbour", n, features, arrays, physical)
        run.results["nearest_neighbour"].seconds = time.perf_counter() - tick


def _generated_rows(run: _Run, config: EvalConfig, generated: list[str], say: Callable[[str], None]) -> None:
    """The `generated` rows: the motion model on each clip's own rig, as many frames as the clip has;
    the first `mm_prompts` clips `mm_repeats` times (Multimodality)."""
    from ...kirin_addon.generate.pipeline import GeneratePipeline, SamplingOptions
    from ...kirin_addon.generate.retrieval import RetrievalConfig
    from ..motion.bank import open_bank
    from ..motion.generator import MotionModel

    cache = run.cache
    pipeline = GeneratePipeline(MotionModel.load(config.model, backend=config.backend))
    bank = retrieval = None
    if config.bank:
        bank = open_bank(cache if Path(config.bank) == Path(config.cache) else config.bank)
        retrieval = RetrievalConfig(strength=config.strength)
    # The network's own clips, broken or not: the guard would hand back constructed ones in their place.
    options = SamplingOptions(
        steps=config.steps, clean=config.clean, smooth=config.smooth, bank=bank, retrieval=retrieval,
        guard=False,
    )
    for row in generated:
        run.results[row] = _Row()
    for n, clip in enumerate(run.loaded):
        record = run.records[n]
        prepared = pipeline.prepare(clip.rig, clip.mesh if config.skin else None, clip.frame)
        image = cache.images[record["image"]] if record["image"] >= 0 and len(cache.images) else None
        variants = config.mm_repeats if n < config.mm_prompts else 1
        for row in generated:
            if row != "text" and image is None:
                continue  # no reference image for this clip: the image rows leave it out
            tick = time.perf_counter()
            request = GenerateRequest(
                cache.captions[run.captions[n]] if row != "image" else None,
                image=image if row != "text" else None,  # the image encoder's feature
                frames=clip.motion.frame_count,
                seed=config.seed + 1000 * n,
                variants=variants,
                guidance=config.guidance,
            )
            out = pipeline.run(prepared, request, options)
            result = run.results[row]
            result.retrieved += "retrieved" in out[0].report
            group = []
            for v, sample in enumerate(out):
                features, physical = _measure(clip, sample.motion, sample.features)
                if v == 0:
                    run.add(row, n, features, clip.arrays, physical)
                group.append(features)
            if len(group) > 1:
                result.groups.append(run.evaluator.embed_motions([(f, clip.arrays) for f in group]))
            result.seconds += time.perf_counter() - tick
        say(f"eval: generated {n + 1}/{len(run.loaded)}")


def nearest_neighbours(cache, sentences: np.ndarray) -> list[int]:
    """For each MiniLM sentence vector, the training clip with the most similar caption (any of its
    training paraphrases; the held-out ones are never searched)."""
    from ..data.batching import usable

    owners, ids = [], []
    for i, r in enumerate(cache.records):
        if usable(r, "train"):
            owners += [i] * len(r["captions"])
            ids += r["captions"]
    if not ids:
        raise ValueError(f"No training clips to retrieve from in {cache.folder}")
    bank = sentence_vectors(cache.text_tokens[ids], cache.text_masks[ids])
    best = np.argmax(np.asarray(sentences) @ bank.T, axis=1)
    return [owners[b] for b in best]


def _empty_row() -> dict:
    return {k: None for k in KEYS} | {"clips": 0}


def _clean_number(value) -> float | None:
    value = float(value)
    return round(value, 6) if np.isfinite(value) else None


def _row_metrics(result: _Row, reference: np.ndarray, config: EvalConfig) -> dict:
    motions = np.stack(result.embeddings)
    texts = np.stack(result.texts)
    top = r_precision(motions, texts, result.labels, rounds=config.rounds, seed=config.seed)
    out = {f"r_precision_top{k + 1}": top[k] for k in range(3)}
    out["r_precision_pool"] = r_precision_pool(result.labels)
    out["fid"] = fid(motions, reference)
    out["mm_dist"] = mm_dist(motions, texts)
    out["diversity"] = diversity(motions, seed=config.seed)
    out["multimodality"] = multimodality(result.groups) if result.groups else float("nan")
    names = sorted({k for p in result.physical for k in p})
    for name in names:
        values = np.array([p.get(name, np.nan) for p in result.physical], np.float64)
        out[name] = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
    clean = {k: _clean_number(v) for k, v in out.items()}
    clean["clips"] = len(result.embeddings)
    if result.retrieved:
        clean["retrieved_share"] = round(result.retrieved / len(result.embeddings), 3)
    clean["seconds"] = round(result.seconds, 1)
    return clean


def format_table(report: dict) -> str:
    """Kirin's table as markdown (— for values that cannot be measured)."""
    columns = [
        ("r_precision_top1", "R@1 ↑"),
        ("r_precision_top2", "R@2 ↑"),
        ("r_precision_top3", "R@3 ↑"),
        ("fid", "FID ↓"),
        ("mm_dist", "MM-Dist ↓"),
        ("diversity", "Diversity →"),
        ("multimodality", "MModality ↑"),
        ("foot_skating", "Skate B/s ↓"),
        ("jitter", "Jitter B/s³ ↓"),
        ("penetration", "Penetr. B ↓"),
        ("bone_length_error", "Bone err ↓"),
        ("clips", "clips"),
    ]
    pool = report["rows"].get("ground_truth", {}).get("r_precision_pool") or 32
    lines = [
        f"split {report.get('split')}: {report.get('clips')} clips; R-Precision ranks each motion's caption "
        f"among {pool:.0f} (chance top-1 {1 / pool:.3f}, top-3 {min(3 / pool, 1):.3f})",
        "",
        "| row | " + " | ".join(title for _, title in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for row, values in report["rows"].items():
        cells = []
        for key, _ in columns:
            value = values.get(key)
            if value is None:
                cells.append("—")
            elif key == "clips":
                cells.append(str(value))
            elif key == "jitter":
                cells.append(f"{value:.1f}")
            else:
                cells.append(f"{value:.3f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.1e}")
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- per-clip bounds
BONE_TOLERANCE = 1e-5  # rotations-only motions keep bone lengths up to float32 rounding


def data_bounds(
    cache, split: str = "test", samples: int = 400, quantile: float = 0.95, seed: int = 0
) -> dict:
    """Per-clip bounds of Generate Motion's metrics: the `quantile` of the library's own clips of a
    split, measured on the same path as every evaluation row. One generated clip is judged against
    these (a mean over a split is judged against the data's mean instead: the model card)."""
    if not 0.5 <= quantile < 1.0:
        raise ValueError(f"quantile must be in [0.5, 1), got {quantile}")
    values: dict[str, list[float]] = {key: [] for key in BOUNDED}
    chosen = select_clips(cache, split, samples, seed)
    for index in chosen:
        clip = _load_clip(cache, index)
        _, physical = _measure(clip, clip.motion)
        for key in BOUNDED:
            value = physical.get(key)
            if value is not None and np.isfinite(value):
                values[key].append(float(value))
    bounds = {key: float(np.quantile(found, quantile)) for key, found in values.items() if found}
    bounds["bone_length_error"] = max(bounds.get("bone_length_error", 0.0), BONE_TOLERANCE)
    return {
        "per_clip": bounds,
        "quantile": quantile,
        "clips": len(chosen),
        "split": split,
        "cache": str(cache.folder),
    }


def write_report(report: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2))
    return path


__all__ = [
    "EvalConfig",
    "KEYS",
    "ROWS",
    "diversity",
    "evaluate",
    "fid",
    "format_table",
    "mm_dist",
    "multimodality",
    "nearest_neighbours",
    "data_bounds",
    "select_clips",
    "write_report",
]
