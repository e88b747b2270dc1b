"""Training losses on the predicted x0 (MDM's simple loss plus geometric terms, AnyTop-style).

- features: MSE of the normalised features;
- positions: forward kinematics from the predicted world deltas (one matrix product with the
  rig's ancestor paths, see geometry.ancestor_paths) against the data's joint positions —
  the rotations must explain the positions, so bone lengths stay right;
- velocity: frame-to-frame displacement of those FK positions;
- foot contact: where the data has a foot planted, the predicted foot velocity is zero.
"""

from __future__ import annotations

import torch

from ...kirin_addon.generate.features import POS, ROT, VEL
from .. import geometry
from .config import LossConfig


def fk_positions(features: torch.Tensor, batch: dict) -> torch.Tensor:
    """(B,T,J,3) joint positions (heading frame) from denormalised features: each joint's root
    position plus the rotated rest bones along its path."""
    rotations = geometry.sixd_to_matrix(features[..., ROT], eps=1e-6)  # (B,T,J,3,3)
    along = geometry.forward_kinematics(rotations, batch["parents"], batch["offsets"], batch["paths"])
    roots = torch.gather(
        features[..., POS], 2, batch["root_of"][:, None, :, None].expand(-1, features.shape[1], -1, 3)
    )
    return roots + along


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.to(values.dtype)
    while mask.dim() < values.dim():
        mask = mask.unsqueeze(-1)
    mask = mask.expand_as(values)
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def diffusion_losses(
    pred: torch.Tensor, batch: dict, mean: torch.Tensor, std: torch.Tensor, fps: float, weights: LossConfig
) -> dict[str, torch.Tensor]:
    """`pred` and `batch["x0"]` are normalised (B,T,J,C); returns each term and the weighted total."""
    target = batch["x0"]
    valid = batch["frame_mask"][:, :, None] & batch["joint_mask"][:, None, :]  # (B,T,J)
    out = {"features": masked_mean((pred - target) ** 2, valid)}
    pred_d = pred * std + mean
    target_d = target * std + mean
    pos_scale = std[POS].mean()
    fk = fk_positions(pred_d, batch)
    out["positions"] = masked_mean(((fk - target_d[..., POS]) / pos_scale) ** 2, valid)
    step_valid = valid[:, 1:] & valid[:, :-1]
    vel_scale = std[VEL].mean() / fps
    out["velocity"] = masked_mean(
        ((fk[:, 1:] - fk[:, :-1]) - (target_d[:, 1:, :, POS] - target_d[:, :-1, :, POS])) ** 2 / vel_scale**2,
        step_valid,
    )
    planted = valid & batch["feet"][:, None, :] & (target_d[..., 12] > 0.5)
    out["foot_contact"] = masked_mean((pred_d[..., VEL] / std[VEL].mean()) ** 2, planted)
    out["total"] = (
        weights.features * out["features"]
        + weights.positions * out["positions"]
        + weights.velocity * out["velocity"]
        + weights.foot_contact * out["foot_contact"]
    )
    return out
