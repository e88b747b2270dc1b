"""Train the pose prior (models/pose/denoiser.py) on a pose bank (models/pose/data.py).

Loss: x0 reconstruction of the normalised 6D deltas plus the joint positions forward kinematics
gives from the prediction (body sizes), over all noise levels, as MDM trains. A share of every
batch are random valid poses within each rig's data limits (broad coverage: the prior must still
know where the joints of an unusual pose go). EMA weights are checkpointed every few hundred steps
and a run resumes from its checkpoint; `save_pose_weights` writes safetensors + model.json.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch

from ...kirin_addon.core.rotations import matrix_to_6d
from ...kirin_addon.pose.space import random_valid_poses
from .. import geometry
from ..data.cache import FeatureCache
from ..diffusion import Diffusion
from ..training import ema_copy, save_checkpoint, save_weights_card, weights_card
from .config import PoseTrainConfig
from .data import RigPoses, load_pose_bank, skeleton_of
from .denoiser import POSE_INPUTS, PoseDenoiser

AUTHORED_WEIGHT = 6.0  # an authored rig is drawn this much more often than a procedural one
POSITION_WEIGHT = 20.0  # positions are in body sizes: their squared errors are small
BUCKETS = 2  # each batch is run as this many parts sorted by joint count (less padding)


def pose_positions_torch(
    d6: torch.Tensor, parents: torch.Tensor, offsets: torch.Tensor, paths: torch.Tensor, starts: torch.Tensor
) -> torch.Tensor:
    """(B,J,3) joint heads of 6D world deltas (B,J,6): p = start + A · (D_parent · o)."""
    return starts + geometry.forward_kinematics(geometry.sixd_to_matrix(d6), parents, offsets, paths)


class PoseBatches:
    """Random training batches, padded to the largest rig of each batch."""

    def __init__(self, cache: FeatureCache, bank: list[RigPoses], config: PoseTrainConfig, mean, std):
        self.cache, self.config = cache, config
        self.bank = [b for b in bank if not b.heldout]
        weights = np.array([AUTHORED_WEIGHT if b.authored else 1.0 for b in self.bank])
        self.weights = weights / weights.sum()
        self.rng = np.random.default_rng(config.seed)
        self.mean, self.std = np.asarray(mean, np.float32), np.asarray(std, np.float32)
        self.skeletons = {b.rig: skeleton_of(cache.rig(b.rig)) for b in self.bank}

    def draw(self, batch: int, buckets: int = 1) -> list[dict[str, torch.Tensor]]:
        """`buckets` batches that together hold `batch` poses, grouped by joint count so each pads
        little."""
        picks = self.rng.choice(len(self.bank), size=batch, p=self.weights)
        picks = picks[np.argsort([self.bank[i].poses.shape[1] for i in picks], kind="stable")]
        return [self._assemble(part) for part in np.array_split(picks, buckets) if len(part)]

    def _assemble(self, picks: np.ndarray) -> dict[str, torch.Tensor]:
        batch = len(picks)
        joints = max(self.bank[i].poses.shape[1] for i in picks)
        out = {
            "x0": np.zeros((batch, joints, 6), np.float32),
            "geometry": np.zeros((batch, joints, self.config.model.geometry), np.float32),
            "skin": np.zeros((batch, joints, self.config.model.skin), np.float32),
            "names": np.zeros((batch, joints, self.config.model.text_dim), np.float32),
            "hops": np.full((batch, joints, joints), self.config.model.max_hops, np.int64),
            "edges": np.full((batch, joints, joints), self.config.model.edge_types - 1, np.int64),
            "joint_mask": np.zeros((batch, joints), bool),
            "parents": np.zeros((batch, joints), np.int64),
            "offsets": np.zeros((batch, joints, 3), np.float32),
            "paths": np.zeros((batch, joints, joints), np.float32),
            "starts": np.zeros((batch, joints, 3), np.float32),
        }
        for row, pick in enumerate(picks):
            entry = self.bank[pick]
            arrays = self.cache.rig(entry.rig)
            skeleton = self.skeletons[entry.rig]
            count = entry.poses.shape[1]
            if self.rng.random() < self.config.random_share:
                pose = matrix_to_6d(random_valid_poses(skeleton, entry.limits, 1, self.rng)[0])
            else:
                pose = entry.poses[self.rng.integers(len(entry.poses))]
            out["x0"][row, :count] = (pose - self.mean) / self.std
            out["geometry"][row, :count] = arrays.geometry
            out["skin"][row, :count] = arrays.skin
            if self.rng.random() >= self.config.drop_names:
                out["names"][row, :count] = arrays.names
            out["hops"][row, :count, :count] = arrays.hops
            out["edges"][row, :count, :count] = arrays.edges
            out["joint_mask"][row, :count] = True
            out["parents"][row, :count] = np.maximum(skeleton.parents, 0)
            out["offsets"][row, :count] = skeleton.offsets
            out["paths"][row, :count, :count] = skeleton.paths
            out["starts"][row, :count] = skeleton.root_heads
        return {k: torch.from_numpy(v) for k, v in out.items()}


def bank_statistics(bank: list[RigPoses]) -> tuple[np.ndarray, np.ndarray]:
    poses = np.concatenate([b.poses.reshape(-1, 6) for b in bank if not b.heldout])
    return poses.mean(0).astype(np.float32), np.maximum(poses.std(0), 1e-3).astype(np.float32)


def pose_loss(model: PoseDenoiser, diffusion: Diffusion, batch: dict, mean: torch.Tensor, std: torch.Tensor):
    x0 = batch["x0"]
    size = x0.shape[0]
    t = torch.randint(0, diffusion.steps, (size,))
    noise = torch.randn_like(x0)
    x_t = diffusion.q_sample(x0, t, noise)
    mask = batch["joint_mask"][..., None].float()
    predicted = model(x_t, t, **{k: batch[k] for k in POSE_INPUTS}).float()
    reconstruction = (((predicted - x0) ** 2) * mask).sum() / (mask.sum() * 6)
    fk = (batch["parents"], batch["offsets"], batch["paths"], batch["starts"])
    true_positions = pose_positions_torch(x0 * std + mean, *fk)
    positions = pose_positions_torch(predicted * std + mean, *fk)
    position_error = (((positions - true_positions) ** 2) * mask).sum() / (mask.sum() * 3)
    return reconstruction + POSITION_WEIGHT * position_error, reconstruction, position_error


def save_pose_weights(
    model: PoseDenoiser,
    folder: Path,
    config: PoseTrainConfig,
    mean,
    std,
    step: int,
    extra: dict | None = None,
) -> None:
    """EMA weights as safetensors + model.json (config, normalisation, training facts)."""
    card = weights_card(config, mean, std, step, extra)
    save_weights_card(model, folder, "pose_denoiser.safetensors", card)


def train_pose_prior(config: PoseTrainConfig, bank_path: str | Path, progress: bool = True) -> dict:
    """Train (or resume) a pose prior; returns a summary. `config.data[0]` is the feature cache the
    bank was built from."""
    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = FeatureCache(config.data[0])
    bank = load_pose_bank(bank_path)
    mean, std = bank_statistics(bank)
    batches = PoseBatches(cache, bank, config, mean, std)
    model = PoseDenoiser(config.model)
    ema = ema_copy(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    diffusion = Diffusion(config.diffusion.steps, config.diffusion.schedule)
    step, seconds = 0, 0.0
    checkpoint = out / "checkpoint.pt"
    if checkpoint.exists():
        state = torch.load(checkpoint, weights_only=True)
        model.load_state_dict(state["model"])
        ema.load_state_dict(state["ema"])
        optimizer.load_state_dict(state["optimizer"])
        step, seconds = int(state["step"]), float(state["seconds"])
    mean_t, std_t = torch.from_numpy(mean), torch.from_numpy(std)

    def save() -> None:
        state = {"model": model.state_dict(), "ema": ema.state_dict(), "optimizer": optimizer.state_dict(),
                 "step": step, "seconds": seconds}
        save_checkpoint(checkpoint, state)
        facts = {"train_seconds": round(seconds), "train_rigs": len(batches.bank)}
        save_pose_weights(ema, out / "weights", config, mean, std, step, facts)

    started = time.perf_counter()
    log = open(out / "train.log", "a")
    while step < config.steps:
        if config.max_seconds and time.perf_counter() - started > config.max_seconds:
            break
        tick = time.perf_counter()
        progress_share = step / max(config.steps, 1)
        lr = config.lr * min(1.0, (step + 1) / config.warmup)
        lr *= config.min_lr + (1 - config.min_lr) * 0.5 * (1 + math.cos(math.pi * progress_share))
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        parts = batches.draw(config.batch, BUCKETS)
        for part in parts:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss, reconstruction, position = pose_loss(model, diffusion, part, mean_t, std_t)
            (loss / len(parts)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        decay = min(config.ema, (1 + step) / (10 + step))
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters(), strict=True):
                pe.mul_(decay).add_(pm.detach(), alpha=1 - decay)
        step += 1
        seconds += time.perf_counter() - tick
        if step % config.log_every == 0:
            line = (
                f"step {step} loss {loss.item():.4f} x0 {reconstruction.item():.4f} "
                f"pos {position.item():.5f} lr {lr:.2e} {seconds / step:.3f}s/step"
            )
            log.write(line + "\n")
            log.flush()
            if progress:
                print(line, flush=True)
        if step % config.checkpoint_every == 0:
            save()
    save()
    log.close()
    return {"step": step, "seconds": round(seconds, 1), "rigs": len(batches.bank)}
