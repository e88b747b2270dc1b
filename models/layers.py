"""Building blocks both denoisers share (motion and pose): timestep embedding, attention with an
additive bias, DiT's adaptive LayerNorm modulation, and the mask value."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

NEG = -1e4  # additive mask: exp(-1e4) is zero in fp32 and bf16, without the NaNs of -inf rows


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class Attention(nn.Module):
    def __init__(self, width: int, heads: int, context: int | None = None):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(width, width)
        self.kv = nn.Linear(context or width, 2 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x: torch.Tensor, context: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        batch, length, width = x.shape
        h = self.heads
        q = self.q(x).view(batch, length, h, width // h).transpose(1, 2)
        kv = self.kv(context).view(batch, context.shape[1], 2, h, width // h).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        if bias is not None:
            bias = bias.to(q.dtype)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return self.out(y.transpose(1, 2).reshape(batch, length, width))


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Adaptive LayerNorm: x (B,...,w) normalised, then shifted and scaled per sample ((B,w) each)."""
    view = (x.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],)
    return x * (1.0 + scale.view(view)) + shift.view(view)
