"""Training batches from a feature cache: windows of clips grouped by joint count (padding each
batch only to its own largest rig is ~1.7× faster than one global padding), authored clips drawn
more often, static clips of moving actions left out (ViPS' filter)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...kirin_addon.core.rig_features import EDGE_TYPES, MAX_HOPS
from .augment import DEPTH, apply_rest_change, random_rest_change
from .cache import FeatureCache

PADDING_EDGE = EDGE_TYPES - 1


def usable(record: dict, split: str) -> bool:
    return record["split"] == split and not (record["static"] and record["action"] != "idle")


@dataclass(frozen=True)
class Shard:
    """This process's share of the clips under distributed data parallel: every `world`-th clip,
    from the `rank`-th on (rank 0 of 1: all of them)."""

    rank: int = 0
    world: int = 1


class Batcher:
    """Random training batches of windows of one split's clips (see the module docstring)."""

    def __init__(
        self,
        cache: FeatureCache,
        batch: int,
        window: int,
        frames_per_token: int,
        authored_weight: float = 4.0,
        split: str = "train",
        seed: int = 0,
        shard: Shard = Shard(),
    ):
        self.cache = cache
        self.batch = batch
        self.window = window - window % frames_per_token
        self.rng = np.random.default_rng([seed, shard.rank])
        chosen = [i for i, r in enumerate(cache.records) if usable(r, split)]
        # Each rank trains on its own share of the clips (distributed data parallel).
        chosen = chosen[shard.rank :: shard.world]
        if not chosen:
            raise ValueError(f"No usable {split} clips in {cache.folder}")
        joints = np.array([cache.records[i]["joints"] for i in chosen])
        order = np.argsort(joints, kind="stable")
        self.order = np.array(chosen)[order]
        weights = np.array([authored_weight if cache.records[i]["authored"] else 1.0 for i in self.order])
        self.p = weights / weights.sum()

    def _window(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        features = self.cache.features(index)
        record = self.cache.records[index]
        frames = features.shape[0]
        w = self.window
        mask = np.ones(w, dtype=bool)
        if frames >= w:
            start = int(self.rng.integers(frames - w + 1))
            return features[start : start + w], mask
        if record["loop"]:
            # Loops tile seamlessly; the root's ground path is integrated from velocities, so tiling
            # the heading-relative features is exact.
            reps = -(-w // frames) + 1
            start = int(self.rng.integers(frames))
            return np.concatenate([features] * reps)[start : start + w], mask
        out = np.concatenate([features, np.repeat(features[-1:], w - frames, axis=0)])
        mask[frames:] = False
        return out, mask

    def sample(
        self,
        drop_text: float = 0.0,
        drop_image: float = 0.0,
        drop_skin: float = 0.5,
        rest_augment: float = 0.0,
    ) -> dict:
        centre = int(self.rng.choice(len(self.order), p=self.p))
        spread = 4 * self.batch
        low = max(0, min(centre - spread // 2, len(self.order) - spread))
        pool = self.order[low : low + spread]
        picks = [self.order[centre]] + list(
            self.rng.choice(pool, size=self.batch - 1, replace=len(pool) < self.batch - 1)
        )
        return self.collate(picks, drop_text, drop_image, drop_skin, rest_augment=rest_augment)

    def collate(
        self,
        picks: list[int],
        drop_text: float = 0.0,
        drop_image: float = 0.0,
        drop_skin: float = 0.0,
        caption: str = "random",
        rest_augment: float = 0.0,
    ) -> dict:
        """The batch of clips `picks`: padded to their largest rig, one caption each ("random",
        "first" or "heldout" where there is one), each condition dropped with its probability."""
        cache, rng = self.cache, self.rng
        arrays = self._empty(len(picks), max(cache.records[i]["joints"] for i in picks))
        caption_ids = []
        for b, index in enumerate(picks):
            record = cache.records[index]
            self._put_clip(arrays, b, index, drop_skin, rest_augment)
            cap = self._caption(record, caption)
            caption_ids.append(cap)
            arrays["text"][b], arrays["text_mask"][b] = cache.text_tokens[cap], cache.text_masks[cap]
            if rng.random() < drop_text:
                arrays["text_on"][b] = 0.0
            if record["image"] < 0 or rng.random() < drop_image:
                arrays["image_on"][b] = 0.0
            else:
                arrays["image"][b] = cache.images[record["image"]]
        out = {k: torch.from_numpy(v) for k, v in arrays.items()}
        out["clips"] = list(picks)
        out["caption_ids"] = caption_ids
        return out

    def _empty(self, count: int, joints: int) -> dict[str, np.ndarray]:
        """A batch of `count` clips of up to `joints` joints, every entry padding."""
        cache = self.cache
        w = self.window
        c = cache.motion.shape[1]
        tokens = cache.text_tokens.shape[1]
        return dict(
            x0=np.zeros((count, w, joints, c), np.float32),
            frame_mask=np.zeros((count, w), bool),
            joint_mask=np.zeros((count, joints), bool),
            geometry=np.zeros((count, joints, cache.rig(0).geometry.shape[1]), np.float32),
            skin=np.zeros((count, joints, cache.rig(0).skin.shape[1]), np.float32),
            names=np.zeros((count, joints, cache.rig(0).names.shape[1]), np.float32),
            hops=np.full((count, joints, joints), MAX_HOPS, np.int64),
            edges=np.full((count, joints, joints), PADDING_EDGE, np.int64),
            paths=np.zeros((count, joints, joints), np.float32),
            offsets=np.zeros((count, joints, 3), np.float32),
            root_of=np.tile(np.arange(joints), (count, 1)),
            parents=np.tile(np.arange(joints), (count, 1)),
            feet=np.zeros((count, joints), bool),
            text=np.zeros((count, tokens, cache.text_tokens.shape[2]), np.float32),
            text_mask=np.zeros((count, tokens), bool),
            text_on=np.ones(count, np.float32),
            image=np.zeros((count, cache.images.shape[1] if cache.images.size else 1280), np.float32),
            image_on=np.ones(count, np.float32),
        )

    def _put_clip(
        self, arrays: dict[str, np.ndarray], b: int, index: int, drop_skin: float, rest_augment: float
    ) -> None:
        """Row `b` of the batch: a window of clip `index` (normalised) and its rig's arrays, on
        another rest pose with probability `rest_augment`, the skin dropped with `drop_skin`."""
        cache, rng = self.cache, self.rng
        record = cache.records[index]
        j = record["joints"]
        window, valid = self._window(index)
        rig = cache.rig(record["rig"])
        rig_geometry, rig_offsets, rig_skin = rig.geometry, rig.offsets, rig.skin
        if rest_augment and rng.random() < rest_augment:
            # Another rest pose for the same motion; the skin features no longer fit it.
            change = random_rest_change(rig.parents, rig.geometry[:, DEPTH], rng)
            window, rig_geometry, rig_offsets = apply_rest_change(window, rig.geometry, rig.parents, change)
            rig_skin = np.zeros_like(rig.skin)
        arrays["x0"][b, :, :j] = (window - cache.mean) / cache.std
        arrays["frame_mask"][b] = valid
        arrays["joint_mask"][b, :j] = True
        arrays["geometry"][b, :j], arrays["names"][b, :j] = rig_geometry, rig.names
        if rng.random() >= drop_skin:
            arrays["skin"][b, :j] = rig_skin
        arrays["hops"][b, :j, :j], arrays["edges"][b, :j, :j] = rig.hops, rig.edges
        arrays["paths"][b, :j, :j] = rig.paths
        arrays["offsets"][b, :j], arrays["root_of"][b, :j] = rig_offsets, rig.root_of
        arrays["feet"][b, :j], arrays["parents"][b, :j] = rig.feet, rig.parents

    def _caption(self, record: dict, caption: str) -> int:
        if caption == "heldout" and record["heldout_caption"] >= 0:
            return record["heldout_caption"]
        if caption == "first":
            return record["captions"][0]
        return int(self.rng.choice(record["captions"]))
