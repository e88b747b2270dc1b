"""The topology-agnostic motion denoiser (MDM's x0 prediction on AnyTop/MotionDreamer-style tokens).

One token per (temporal patch, joint): `frames_per_token` frames of one joint's features. Each block
attends
  - across the joints of a frame, with learned per-head biases for hop distance and edge type
    (the skeleton's graph, whatever its size),
  - across time for each joint, within ±window tokens with a learned relative-position bias
    (length-agnostic), plus a rest-pose anchor token that every frame sees (the rig's invariant),
  - to the condition tokens z_c[i] = z_text[i] + z_img + z_t (Kirin), each condition replaceable
    by a learned null for classifier-free guidance,
with every sub-layer's norm modulated (shift, scale, gate: DiT's adaptive LayerNorm) by one global
condition z_g = z_t + z_sentence + z_img, where z_sentence is the prompt's MiniLM sentence vector
(the masked mean of its token features). Cross-attention alone learned the prompt too slowly on
this budget (v0 moved the same for "walks" and "gallops"); a pooled sentence vector is what MiniLM
is trained to produce, and adaptive norms hand it to every token. The modulation starts at
identity, so a model trained without it resumes unchanged. Predicts the clean features x0.
"""

from __future__ import annotations

import torch
from torch import nn

from ..layers import NEG, Attention, modulate, timestep_embedding
from .config import DenoiserConfig

# The denoiser's keyword inputs besides x and t, in call order (training batches, ONNX, runners).
CONDITION_INPUTS = (
    "geometry",
    "skin",
    "names",
    "hops",
    "edges",
    "joint_mask",
    "text",
    "text_mask",
    "image",
    "text_on",
    "image_on",
)


def added_since_v0(name: str) -> bool:
    """Parameters added after the first shipped model (the global condition); they start as the
    identity, so weights without them load and compute exactly what they did."""
    return name.startswith(("sentence.", "null_sentence")) or ".modulation." in name


class Block(nn.Module):
    SUBLAYERS = 4  # spatial, temporal, cross, feed-forward: each gets shift, scale and gate

    def __init__(self, config: DenoiserConfig):
        super().__init__()
        w, h = config.width, config.heads
        # Zero-initialised: every shift, scale and gate starts at 0 (the gates act as 1 + gate).
        self.modulation = nn.Sequential(nn.SiLU(), nn.Linear(w, 3 * self.SUBLAYERS * w))
        nn.init.zeros_(self.modulation[1].weight)
        nn.init.zeros_(self.modulation[1].bias)
        self.norm_spatial = nn.LayerNorm(w)
        self.spatial = Attention(w, h)
        self.norm_temporal = nn.LayerNorm(w)
        self.temporal = Attention(w, h)
        self.norm_cross = nn.LayerNorm(w)
        self.cross = Attention(w, h)
        self.norm_ffn = nn.LayerNorm(w)
        self.ffn = nn.Sequential(nn.Linear(w, config.ffn), nn.GELU(), nn.Linear(config.ffn, w))
        self.hop_bias = nn.Embedding(config.max_hops + 1, h)
        self.edge_bias = nn.Embedding(config.edge_types, h)
        self.window = config.window
        self.relative_bias = nn.Embedding(2 * config.window + 1, h)
        self.anchor_bias = nn.Parameter(torch.zeros(h))
        nn.init.zeros_(self.hop_bias.weight)
        nn.init.zeros_(self.edge_bias.weight)
        nn.init.zeros_(self.relative_bias.weight)

    def spatial_mask(self, hops: torch.Tensor, edges: torch.Tensor, joint_mask: torch.Tensor) -> torch.Tensor:
        """(B,H,J,J) additive bias: graph terms plus padding."""
        bias = (self.hop_bias(hops) + self.edge_bias(edges)).permute(0, 3, 1, 2)
        return bias + torch.where(joint_mask, 0.0, NEG)[:, None, None, :]

    def temporal_mask(self, tokens: int, device: torch.device) -> torch.Tensor:
        """(H,N+1,N+1) for N motion tokens after the anchor: relative bias inside the window, the anchor
        visible to all and seeing all."""
        index = torch.arange(tokens, device=device)
        offset = index[None, :] - index[:, None]
        inside = offset.abs() <= self.window
        rel = self.relative_bias(offset.clamp(-self.window, self.window) + self.window).permute(2, 0, 1)
        rel = rel + torch.where(inside, 0.0, NEG)[None]
        # Row/column 0 is the anchor (built with cat, not slice assignment, so ONNX keeps N dynamic).
        anchor_col = self.anchor_bias[:, None, None] + torch.zeros_like(rel[:, :, :1])
        anchor_row = self.anchor_bias[:, None, None] + torch.zeros_like(rel[:, :1, :])
        corner = torch.zeros_like(rel[:, :1, :1])
        full = torch.cat([torch.cat([corner, anchor_row], dim=2), torch.cat([anchor_col, rel], dim=2)], dim=1)
        return full

    def forward(
        self,
        x: torch.Tensor,
        spatial_bias: torch.Tensor,
        temporal_bias: torch.Tensor,
        context: torch.Tensor,
        context_bias: torch.Tensor,
        condition: torch.Tensor,
    ) -> torch.Tensor:
        batch, frames, joints, width = x.shape
        mod = self.modulation(condition).view(batch, self.SUBLAYERS, 3, width)
        shift, scale, gate = mod[:, :, 0], mod[:, :, 1], 1.0 + mod[:, :, 2]
        g = gate[:, :, None, None, :]  # (B,4,1,1,w) against (B,N,J,w)
        # Spatial: the joints of one frame token.
        y = modulate(self.norm_spatial(x), shift[:, 0], scale[:, 0]).reshape(batch * frames, joints, width)
        bias = (
            spatial_bias[:, None].expand(-1, frames, -1, -1, -1).reshape(batch * frames, -1, joints, joints)
        )
        x = x + g[:, 0] * self.spatial(y, y, bias).view(batch, frames, joints, width)
        # Temporal: one joint over time, anchor first.
        y = modulate(self.norm_temporal(x), shift[:, 1], scale[:, 1])
        y = y.transpose(1, 2).reshape(batch * joints, frames, width)
        y = self.temporal(y, y, temporal_bias[None]).view(batch, joints, frames, width).transpose(1, 2)
        x = x + g[:, 1] * y
        # Cross-attention to the condition tokens.
        y = modulate(self.norm_cross(x), shift[:, 2], scale[:, 2]).reshape(batch, frames * joints, width)
        x = x + g[:, 2] * self.cross(y, context, context_bias).view(batch, frames, joints, width)
        return x + g[:, 3] * self.ffn(modulate(self.norm_ffn(x), shift[:, 3], scale[:, 3]))


class Denoiser(nn.Module):
    """x0 = f(x_t, t, rig, text, image); see the module docstring. Shapes:

    x (B,N,J,P·C) noisy tokens; t (B,) noise level; geometry (B,J,G); skin (B,J,S); names (B,J,384)
    joint-name embeddings; hops/edges (B,J,J) int64; joint_mask (B,J) bool; text (B,L,384) token
    features with text_mask (B,L) bool; image (B,1280); text_on/image_on (B,) 1.0 = use the
    condition, 0.0 = its learned null (classifier-free guidance).
    """

    def __init__(self, config: DenoiserConfig):
        super().__init__()
        self.config = config
        w = config.width
        token = config.frames_per_token * config.channels
        self.input = nn.Linear(token, w)
        self.joint = nn.Sequential(
            nn.Linear(config.geometry + config.skin + w, w), nn.GELU(), nn.Linear(w, w)
        )
        self.name = nn.Linear(config.text_dim, w)
        self.anchor = nn.Sequential(nn.Linear(w, w), nn.GELU(), nn.Linear(w, w))
        self.time = nn.Sequential(nn.Linear(w, w), nn.GELU(), nn.Linear(w, w))
        self.text = nn.Linear(config.text_dim, w)
        self.sentence = nn.Sequential(nn.Linear(config.text_dim, w), nn.GELU(), nn.Linear(w, w))
        self.image = nn.Linear(config.image_dim, w)
        self.null_text = nn.Parameter(torch.zeros(w))
        self.null_sentence = nn.Parameter(torch.zeros(w))
        self.null_image = nn.Parameter(torch.zeros(w))
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.norm_out = nn.LayerNorm(w)
        self.output = nn.Linear(w, token)

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
        text: torch.Tensor,
        text_mask: torch.Tensor,
        image: torch.Tensor,
        text_on: torch.Tensor,
        image_on: torch.Tensor,
    ) -> torch.Tensor:
        w = self.config.width
        z_t = self.time(timestep_embedding(t, w))  # (B,w)
        on = text_on[:, None, None]
        z_text = on * self.text(text) + (1.0 - on) * self.null_text  # (B,L,w)
        # Without text only the first (null) token is attended to.
        first = torch.zeros(text_mask.shape, dtype=z_text.dtype, device=z_text.device)
        first[:, 0] = 1.0
        use = (text_on[:, None] > 0.5).to(z_text.dtype)
        keep = use * text_mask.to(z_text.dtype) + (1.0 - use) * first > 0.5
        z_img = image_on[:, None] * self.image(image) + (1.0 - image_on[:, None]) * self.null_image
        context = z_text + z_img[:, None] + z_t[:, None]  # z_c[i] = z_text[i] + z_img + z_t
        context_bias = torch.where(keep, 0.0, NEG)[:, None, None, :]
        z_sentence = self.sentence(sentence_vector(text, text_mask))
        z_sentence = text_on[:, None] * z_sentence + (1.0 - text_on[:, None]) * self.null_sentence
        condition = z_t + z_sentence + z_img  # z_g: the global condition of the adaptive norms

        joint = self.joint(torch.cat([geometry, skin, self.name(names)], dim=-1))  # (B,J,w)
        h = self.input(x) + joint[:, None] + z_t[:, None, None]
        h = torch.cat([self.anchor(joint)[:, None], h], dim=1)  # rest-pose anchor token first
        tokens = x.shape[1]
        for block in self.blocks:
            spatial = block.spatial_mask(hops, edges, joint_mask)
            temporal = block.temporal_mask(tokens, x.device)
            h = block(h, spatial, temporal, context, context_bias, condition)
        return self.output(self.norm_out(h[:, 1:]))


def sentence_vector(text: torch.Tensor, text_mask: torch.Tensor) -> torch.Tensor:
    """MiniLM's sentence embedding from its token features: the masked mean, L2-normalised (the
    recipe of models/encoders/text.py and the evaluator's `sentence_vectors`)."""
    mask = text_mask.to(text.dtype)[..., None]
    pooled = (text * mask).sum(1) / mask.sum(1).clamp(min=1.0)
    return pooled / pooled.norm(dim=-1, keepdim=True).clamp(min=1e-12)


def patchify(features: torch.Tensor, frames_per_token: int) -> torch.Tensor:
    """(B,T,J,C) → (B,T/P,J,P·C); T must be a multiple of P."""
    batch, frames, joints, channels = features.shape
    p = frames_per_token
    return (
        features.view(batch, frames // p, p, joints, channels)
        .permute(0, 1, 3, 2, 4)
        .reshape(batch, frames // p, joints, p * channels)
    )


def unpatchify(tokens: torch.Tensor, frames_per_token: int) -> torch.Tensor:
    batch, count, joints, width = tokens.shape
    p = frames_per_token
    return (
        tokens.view(batch, count, joints, p, width // p)
        .permute(0, 1, 3, 2, 4)
        .reshape(batch, count * p, joints, width // p)
    )


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
