"""The pose prior's denoiser (ViPS): x0 prediction over one static pose, one token per joint.

Each token is a joint's noisy world delta (6D, heading frame) plus what the rig says about that
joint — the motion model's skeleton encoding: rest geometry, pooled skin features (zeros without a
mesh) and the embedded joint name. Blocks attend across the joints with learned per-head biases
for hop distance and edge type, so any tree of any size is one sequence; the noise level reaches
every sub-layer through adaptive LayerNorm (DiT). No text, no time axis: small enough that a few
denoising steps fit an interactive drag on a CPU.
"""

from __future__ import annotations

import torch
from torch import nn

from ..layers import NEG, Attention, modulate, timestep_embedding
from .config import PoseDenoiserConfig

# The denoiser's keyword inputs besides x and t, in call order (training batches, ONNX, runners).
POSE_INPUTS = ("geometry", "skin", "names", "hops", "edges", "joint_mask")


class PoseBlock(nn.Module):
    SUBLAYERS = 2  # attention across joints, feed-forward

    def __init__(self, config: PoseDenoiserConfig):
        super().__init__()
        w, h = config.width, config.heads
        self.modulation = nn.Sequential(nn.SiLU(), nn.Linear(w, 3 * self.SUBLAYERS * w))
        nn.init.zeros_(self.modulation[1].weight)
        nn.init.zeros_(self.modulation[1].bias)
        self.norm_attention = nn.LayerNorm(w, elementwise_affine=False)
        self.attention = Attention(w, h)
        self.norm_ffn = nn.LayerNorm(w, elementwise_affine=False)
        self.ffn = nn.Sequential(nn.Linear(w, config.ffn), nn.GELU(), nn.Linear(config.ffn, w))
        self.hop_bias = nn.Embedding(config.max_hops + 1, h)
        self.edge_bias = nn.Embedding(config.edge_types, h)
        nn.init.zeros_(self.hop_bias.weight)
        nn.init.zeros_(self.edge_bias.weight)

    def graph_bias(self, hops: torch.Tensor, edges: torch.Tensor, joint_mask: torch.Tensor) -> torch.Tensor:
        bias = (self.hop_bias(hops) + self.edge_bias(edges)).permute(0, 3, 1, 2)
        return bias + torch.where(joint_mask, 0.0, NEG)[:, None, None, :]

    def forward(self, x: torch.Tensor, bias: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        batch, _, width = x.shape
        mod = self.modulation(condition).view(batch, self.SUBLAYERS, 3, width)
        shift, scale, gate = mod[:, :, 0], mod[:, :, 1], 1.0 + mod[:, :, 2]
        y = modulate(self.norm_attention(x), shift[:, 0], scale[:, 0])
        x = x + gate[:, 0, None] * self.attention(y, y, bias)
        y = modulate(self.norm_ffn(x), shift[:, 1], scale[:, 1])
        return x + gate[:, 1, None] * self.ffn(y)


class PoseDenoiser(nn.Module):
    """x0 = f(x_t, t, rig). Shapes: x (B,J,6) normalised noisy pose; t (B,) noise level; geometry
    (B,J,G); skin (B,J,S); names (B,J,384); hops/edges (B,J,J) int64; joint_mask (B,J) bool."""

    def __init__(self, config: PoseDenoiserConfig):
        super().__init__()
        self.config = config
        w = config.width
        self.input = nn.Linear(config.channels, w)
        self.name = nn.Linear(config.text_dim, w)
        self.joint = nn.Sequential(
            nn.Linear(config.geometry + config.skin + w, w), nn.GELU(), nn.Linear(w, w)
        )
        self.time = nn.Sequential(nn.Linear(w, w), nn.GELU(), nn.Linear(w, w))
        self.blocks = nn.ModuleList(PoseBlock(config) for _ in range(config.layers))
        self.norm_out = nn.LayerNorm(w)
        self.output = nn.Linear(w, config.channels)

    def forward(
        self,
        x: torch.Tensor,
        t: torch.Tensor,
        geometry: torch.Tensor,
        skin: torch.Tensor,
        names: torch.Tensor,
        hops: torch.Tensor,
        edges: torch.Tensor,
        joint_mask: torch.Tensor,
    ) -> torch.Tensor:
        z_t = self.time(timestep_embedding(t, self.config.width))
        joint = self.joint(torch.cat([geometry, skin, self.name(names)], dim=-1))
        h = self.input(x) + joint + z_t[:, None]
        for block in self.blocks:
            h = block(h, block.graph_bias(hops, edges, joint_mask), z_t)
        return self.output(self.norm_out(h))
