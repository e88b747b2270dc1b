"""Training data for the motion model: a feature cache built once from clip folders, and batches.

`build_cache` turns the library (procedural clips from `kirin data build`, authored clips from
`kirin data ingest`) into arrays the trainer reads without touching a clip file again: motion
features (kirin_addon/generate/features.py), rig features (kirin_addon/core/rig_features.py), caption token
features and joint-name embeddings from the frozen text encoder, and reference-image features
from the frozen image encoder. Layout of a cache folder:

  clips.json    one record per clip (rig, feature offset, frames, captions, image, split, tags)
  motion.npy    (Σ T·J, CHANNELS) float16 features, clip after clip
  rigs.npz      per-joint rig arrays of all rigs, concatenated, with offsets
  text.npz      caption token features (N,L,384) float16 and masks
  images.npy    (N,1280) float32 image features
  stats.npz     per-channel mean/std of the training split (the model's normalisation)
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...kirin_addon.core.canonical import canonical_rig, procedural_frame
from ...kirin_addon.core.rig import rig_key
from ...kirin_addon.core.rig_features import rig_features
from ...kirin_addon.core.skinning import load_mesh
from ...kirin_addon.generate.features import CHANNELS, CONTACT, YAW, motion_features
from ...kirin_addon.io.clip import find_clips, load_clip
from ..geometry import ancestor_paths

MAX_TOKENS = 24
LOOP_TOLERANCE = 0.05  # body sizes: first and last pose this close → the clip is a loop and may be tiled


def load_record_clip(cache: FeatureCache, index: int):
    """The clip file behind a cache record and the canonical frame the cache read it in (None: an
    authored clip, whose frame is detected)."""
    from ...kirin_addon.io.clip import load_clip

    record = cache.records[index]
    path = Path(record["path"])
    if not path.exists():
        raise ValueError(f"The clip file {path} of cache {cache.folder} is gone; this needs the clips")
    clip = load_clip(path)
    return clip, None if record["authored"] else procedural_frame(clip.rig)


def rig_entry(canon, mesh) -> dict:
    """What the cache keeps of a rig (a `CanonicalRig`, its skin or None): the arrays of `RigArrays`,
    with the joint names as text (encoded when the cache is saved)."""
    rf = rig_features(canon.rig, canon.feet, mesh, canon.frame.matrix())
    rig = canon.rig
    parents = rig.parents
    offsets = np.where((parents >= 0)[:, None], rig.heads - rig.heads[np.maximum(parents, 0)], 0.0)
    root_of = np.arange(rig.joint_count)
    for j in rig.topological_order:
        if parents[j] >= 0:
            root_of[j] = root_of[parents[j]]
    return {
        "geometry": rf.geometry,
        "skin": rf.skin,
        "hops": rf.hops.astype(np.int8),
        "edges": rf.edges.astype(np.int8),
        "paths": ancestor_paths(parents).astype(np.int8),
        "offsets": offsets.astype(np.float32),
        "root_of": root_of.astype(np.int16),
        "parents": np.where(parents >= 0, parents, np.arange(len(parents))).astype(np.int16),
        "feet": rf.feet,
        "names": rf.names,
        "main_root": int(rig.main_root),
    }


def rig_arrays(canon, mesh, text_encoder) -> RigArrays:
    """A rig outside any cache as the evaluator and the training batches read it (names encoded)."""
    entry = rig_entry(canon, mesh)
    names = np.asarray(text_encoder.encode_sentences(list(entry["names"])), np.float32)
    return RigArrays(
        geometry=entry["geometry"], skin=entry["skin"], names=names,
        hops=entry["hops"].astype(np.int64), edges=entry["edges"].astype(np.int64),
        paths=entry["paths"].astype(np.float32), offsets=entry["offsets"],
        root_of=entry["root_of"].astype(np.int64), parents=entry["parents"].astype(np.int64),
        feet=entry["feet"], main_root=entry["main_root"],
    )


def _process(args: tuple[str, str]) -> dict:
    """Everything numpy-only about one clip (runs in a worker)."""
    path, source = args
    clip = load_clip(path)
    meta = clip.metadata
    authored = bool(meta.get("authored", False))
    frame = None if authored else procedural_frame(clip.rig)
    canon = canonical_rig(clip.rig, frame)
    feats = motion_features(canon, clip.rig, clip.motion)
    mesh = None
    if meta.get("mesh") and (Path(source) / meta["mesh"]).exists():
        mesh = load_mesh(Path(source) / meta["mesh"])
    rig = canon.rig
    positions = feats.positions
    loop = (
        bool(
            np.abs(
                positions[0] - positions[-1] - (positions[0, rig.main_root] - positions[-1, rig.main_root])
            ).max()
            < LOOP_TOLERANCE
        )
        and clip.motion.frame_count >= 8
    )
    image = meta.get("image")
    return {
        "path": path,
        "key": rig_key(clip.rig),
        "features": feats.features.astype(np.float16),
        "rig": rig_entry(canon, mesh),
        "captions": list(clip.captions),
        "heldout": meta.get("heldout_caption"),
        "image": str(Path(source) / image) if image else None,
        "meta": {
            "split": meta.get("split", "train"),
            "family": meta.get("family", ""),
            "action": meta.get("action", ""),
            "species": meta.get("species", ""),
            "authored": authored,
            "static": bool(meta.get("static", False)),
            "loop": loop,
            "fps": float(clip.motion.fps),
            "name": meta.get("name", Path(path).stem),
            "source": str(source),
        },
    }


def build_cache(
    sources: list[str | Path],
    out: str | Path,
    text_encoder,
    image_encoder,
    max_clips: int | None = None,
    workers: int = 1,
    progress: bool = True,
) -> dict:
    """Build a cache folder from clip folders; returns a summary."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = _clip_jobs(sources, max_clips)
    started = time.perf_counter()
    results = _processed(jobs, workers, progress, started)
    rigs, captions, images, records, motion = _gathered(results)
    np.save(out / "motion.npy", motion)
    joint_offsets = _save_rigs(out / "rigs.npz", rigs, text_encoder, len(captions), len(images))
    tokens, masks = _encode_captions(text_encoder, captions)
    np.savez(out / "text.npz", tokens=tokens, masks=masks)
    image_features = image_encoder.encode(images).astype(np.float32) if images else np.zeros((0, 1280))
    np.save(out / "images.npy", image_features)
    (out / "clips.json").write_text(json.dumps(records))
    (out / "captions.json").write_text(json.dumps(captions))
    mean, std = channel_stats(motion, records, rigs, joint_offsets)
    np.savez(out / "stats.npz", mean=mean, std=std)
    summary = {
        "clips": len(records),
        "rigs": len(rigs),
        "captions": len(captions),
        "images": len(images),
        "frames": int(sum(r["frames"] for r in records)),
        "seconds": round(time.perf_counter() - started, 1),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _clip_jobs(sources: list[str | Path], max_clips: int | None) -> list[tuple[str, str]]:
    """(clip file, its clip folder) of every clip in `sources`, the first `max_clips` of them."""
    jobs = []
    for source in sources:
        source = Path(source)
        if not source.is_dir():
            raise ValueError(f"No clip folder at {source}")
        jobs += [(str(p), str(source)) for p in find_clips(source)]
    if max_clips:
        jobs = jobs[:max_clips]
    if not jobs:
        raise ValueError("No clips found in " + ", ".join(map(str, sources)))
    return jobs


def _processed(jobs: list[tuple[str, str]], workers: int, progress: bool, started: float) -> list[dict]:
    """`_process` of every job, in order (in `workers` processes when more than one)."""
    results = []
    if workers > 1:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for i, r in enumerate(pool.imap(_process, jobs, chunksize=8), 1):
                results.append(r)
                if progress and i % 200 == 0:
                    _say(f"features {i}/{len(jobs)} ({time.perf_counter() - started:.0f}s)")
    else:
        for i, job in enumerate(jobs, 1):
            results.append(_process(job))
            if progress and i % 200 == 0:
                _say(f"features {i}/{len(jobs)} ({time.perf_counter() - started:.0f}s)")
    return results


def _gathered(results: list[dict]) -> tuple[list[dict], list[str], list[str], list[dict], np.ndarray]:
    """The processed clips as the cache stores them: distinct rigs, all captions, distinct image
    files, one record per clip (indices into those) and the motion features of all clips, clip after
    clip (Σ T·J, CHANNELS)."""
    rig_index: dict[str, int] = {}
    rigs: list[dict] = []
    captions: list[str] = []
    images: list[str] = []
    image_index: dict[str, int] = {}
    records = []
    motion_chunks = []
    offset = 0
    for r in results:
        if r["key"] not in rig_index:
            rig_index[r["key"]] = len(rigs)
            rigs.append(r["rig"])
        image = -1
        if r["image"]:
            image = image_index.setdefault(r["image"], len(images))
            if image == len(images):
                images.append(r["image"])
        first = len(captions)
        captions += r["captions"]
        heldout = -1
        if r["heldout"]:
            heldout = len(captions)
            captions.append(r["heldout"])
        frames, joints = r["features"].shape[:2]
        motion_chunks.append(r["features"].reshape(-1, CHANNELS))
        records.append(
            {
                **r["meta"],
                "rig": rig_index[r["key"]],
                "offset": offset,
                "frames": frames,
                "joints": joints,
                "captions": list(range(first, first + len(r["captions"]))),
                "heldout_caption": heldout,
                "image": image,
                "path": r["path"],
            }
        )
        offset += frames * joints
    return rigs, captions, images, records, np.concatenate(motion_chunks)


def _save_rigs(path: Path, rigs: list[dict], text_encoder, captions: int, images: int) -> np.ndarray:
    """rigs.npz: per-joint arrays concatenated, J×J arrays flattened, with offsets, and the joint
    names' text vectors; returns the per-rig joint offsets. (`captions` and `images`: counts for
    the progress line.)"""
    joint_offsets = np.cumsum([0] + [len(r["geometry"]) for r in rigs])
    square_offsets = np.cumsum([0] + [len(r["geometry"]) ** 2 for r in rigs])
    names = sorted({n for r in rigs for n in r["names"]})
    _say(f"encoding {len(names)} joint names, {captions} captions, {images} images")
    name_vectors = text_encoder.encode_sentences(names).astype(np.float16) if names else np.zeros((0, 384))
    name_id = {n: i for i, n in enumerate(names)}
    np.savez(
        path,
        joint_offsets=joint_offsets,
        square_offsets=square_offsets,
        geometry=np.concatenate([r["geometry"] for r in rigs]),
        skin=np.concatenate([r["skin"] for r in rigs]),
        feet=np.concatenate([r["feet"] for r in rigs]),
        offsets=np.concatenate([r["offsets"] for r in rigs]),
        root_of=np.concatenate([r["root_of"] for r in rigs]),
        parents=np.concatenate([r["parents"] for r in rigs]),
        main_root=np.array([r["main_root"] for r in rigs]),
        hops=np.concatenate([r["hops"].reshape(-1) for r in rigs]),
        edges=np.concatenate([r["edges"].reshape(-1) for r in rigs]),
        paths=np.concatenate([r["paths"].reshape(-1) for r in rigs]),
        name_ids=np.array([name_id[n] for r in rigs for n in r["names"]]),
        name_vectors=name_vectors,
    )
    return joint_offsets


def _encode_captions(text_encoder, captions: list[str], batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
    tokens = np.zeros((len(captions), MAX_TOKENS, 384), dtype=np.float16)
    masks = np.zeros((len(captions), MAX_TOKENS), dtype=bool)
    for start in range(0, len(captions), batch):
        t, m = text_encoder.encode_tokens(captions[start : start + batch], max_tokens=MAX_TOKENS)
        tokens[start : start + len(t)] = t
        masks[start : start + len(t)] = m
    return tokens, masks


def channel_stats(
    motion: np.ndarray, records: list[dict], rigs: list[dict], joint_offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and std over the training split. The contact and yaw channels are zero on
    most joints by construction: they keep mean 0 and take their scale from the joints that carry them."""
    values = []
    root_yaw, foot_contact = [], []
    for r in records:
        if r["split"] != "train":
            continue
        f = motion[r["offset"] : r["offset"] + r["frames"] * r["joints"]].reshape(
            r["frames"], r["joints"], -1
        )
        values.append(f[::4].reshape(-1, CHANNELS).astype(np.float32))
        rig = rigs[r["rig"]]
        root_yaw.append(f[:, rig["main_root"], YAW].astype(np.float32))
        foot_contact.append(f[:, rig["feet"], CONTACT].reshape(-1).astype(np.float32))
    if not values:
        return np.zeros(CHANNELS, np.float32), np.ones(CHANNELS, np.float32)
    stacked = np.concatenate(values)
    mean = stacked.mean(0)
    std = stacked.std(0)
    mean[[CONTACT, YAW]] = 0.0
    yaw = np.concatenate(root_yaw)
    contact = np.concatenate(foot_contact)
    std[YAW] = np.sqrt(np.mean(yaw**2)) if yaw.size else 1.0
    std[CONTACT] = np.sqrt(np.mean(contact**2)) if contact.size else 1.0
    return mean.astype(np.float32), np.maximum(std, 1e-3).astype(np.float32)


def _say(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


@dataclass
class RigArrays:
    geometry: np.ndarray
    skin: np.ndarray
    names: np.ndarray  # (J,384)
    hops: np.ndarray
    edges: np.ndarray
    paths: np.ndarray
    offsets: np.ndarray
    root_of: np.ndarray
    parents: np.ndarray  # own index for roots
    feet: np.ndarray
    main_root: int


class FeatureCache:
    """A cache folder opened for reading (motion memory-mapped)."""

    def __init__(self, folder: str | Path):
        folder = Path(folder)
        if not (folder / "clips.json").exists():
            raise ValueError(f"{folder} is not a Kirin feature cache (no clips.json)")
        self.folder = folder
        self.records: list[dict] = json.loads((folder / "clips.json").read_text())
        self.captions: list[str] = json.loads((folder / "captions.json").read_text())
        self.motion = np.load(folder / "motion.npy", mmap_mode="r")
        with np.load(folder / "rigs.npz") as data:
            self._rigs = {k: data[k] for k in data.files}
        with np.load(folder / "text.npz") as data:
            self.text_tokens, self.text_masks = data["tokens"], data["masks"]
        self.images = np.load(folder / "images.npy")
        with np.load(folder / "stats.npz") as data:
            self.mean, self.std = data["mean"], data["std"]
        self._rig_cache: dict[int, RigArrays] = {}

    def rig(self, index: int) -> RigArrays:
        if index not in self._rig_cache:
            d = self._rigs
            a, b = d["joint_offsets"][index], d["joint_offsets"][index + 1]
            s, e = d["square_offsets"][index], d["square_offsets"][index + 1]
            count = b - a
            self._rig_cache[index] = RigArrays(
                geometry=d["geometry"][a:b],
                skin=d["skin"][a:b],
                names=d["name_vectors"][d["name_ids"][a:b]].astype(np.float32),
                hops=d["hops"][s:e].reshape(count, count).astype(np.int64),
                edges=d["edges"][s:e].reshape(count, count).astype(np.int64),
                paths=d["paths"][s:e].reshape(count, count).astype(np.float32),
                offsets=d["offsets"][a:b],
                root_of=d["root_of"][a:b].astype(np.int64),
                parents=d["parents"][a:b].astype(np.int64),
                feet=d["feet"][a:b],
                main_root=int(d["main_root"][index]),
            )
        return self._rig_cache[index]

    def features(self, index: int) -> np.ndarray:
        r = self.records[index]
        return np.asarray(
            self.motion[r["offset"] : r["offset"] + r["frames"] * r["joints"]], dtype=np.float32
        ).reshape(r["frames"], r["joints"], CHANNELS)
