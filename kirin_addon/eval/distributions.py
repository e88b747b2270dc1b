"""Comparing sets of samples: the Fréchet distance of fitted Gaussians (FID, ViPS' FSD) and
R-Precision (Guo et al. 2022), numpy + scipy only."""

from __future__ import annotations

import numpy as np


def r_precision(
    motions: np.ndarray,
    texts: np.ndarray,
    labels: list | None = None,
    pool: int = 32,
    top: int = 3,
    rounds: int = 10,
    seed: int = 0,
) -> np.ndarray:
    """(top,) fraction of motions whose own caption (row i of `texts`) is among the k nearest of a
    pool of `pool` captions: its own and `pool − 1` drawn from other clips — with a different label
    when `labels` are given (two clips of one action may share a caption meaning, so neither is a
    fair distractor for the other). Fewer candidates than `pool − 1` → all of them."""
    motions, texts = np.asarray(motions, np.float64), np.asarray(texts, np.float64)
    count = len(motions)
    if count < 2:
        return np.full(top, np.nan)
    rng = np.random.default_rng(seed)
    labels = list(range(count)) if labels is None else list(labels)
    label_ids = np.unique(np.array([str(x) for x in labels]), return_inverse=True)[1]
    hits = np.zeros(top)
    total = 0
    for _ in range(rounds):
        for i in range(count):
            others = np.flatnonzero(label_ids != label_ids[i])
            if not len(others):
                continue
            chosen = rng.choice(others, size=min(pool - 1, len(others)), replace=False)
            own = np.linalg.norm(motions[i] - texts[i])
            distances = np.linalg.norm(motions[i][None] - texts[chosen], axis=-1)
            rank = int(np.sum(distances < own))  # ties go to the motion's own caption
            hits += rank < np.arange(1, top + 1)
            total += 1
    return hits / max(total, 1) if total else np.full(top, np.nan)


def r_precision_pool(labels: list, pool: int = 32) -> float:
    """Mean number of captions a motion is ranked among by `r_precision` (chance top-k = k / this):
    fewer than `pool` when the split has few clips of other actions."""
    ids = np.unique(np.array([str(x) for x in labels]), return_inverse=True)[1]
    if len(ids) < 2:
        return float("nan")
    others = np.array([np.sum(ids != i) for i in ids])
    return float(np.mean(1 + np.minimum(pool - 1, others)))


def statistics(embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (unbiased) covariance of (N,D) embeddings."""
    embeddings = np.asarray(embeddings, np.float64)
    return embeddings.mean(0), np.atleast_2d(np.cov(embeddings, rowvar=False))


def gaussian_frechet_distance(
    mu1: np.ndarray, sigma1: np.ndarray, mu2: np.ndarray, sigma2: np.ndarray, eps: float = 1e-6
) -> float:
    """|μ1 − μ2|² + tr(Σ1 + Σ2 − 2 (Σ1 Σ2)^½) (Heusel et al.), with scipy's matrix square root."""
    from scipy import linalg

    mu1, mu2 = np.atleast_1d(mu1).astype(np.float64), np.atleast_1d(mu2).astype(np.float64)
    sigma1, sigma2 = np.atleast_2d(sigma1).astype(np.float64), np.atleast_2d(sigma2).astype(np.float64)
    diff = mu1 - mu2
    covmean = linalg.sqrtm(sigma1 @ sigma2)
    if not np.isfinite(covmean).all():
        # Singular products (fewer samples than dimensions): nudge both diagonals, as pytorch-fid does.
        offset = np.eye(len(sigma1)) * eps
        covmean = linalg.sqrtm((sigma1 + offset) @ (sigma2 + offset))
    covmean = np.real(covmean)
    return float(max(diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2.0 * np.trace(covmean), 0.0))


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Fréchet distance between Gaussians fitted to two sample sets (N,D) and (M,D) (FID's formula,
    ViPS' FSD when the rows are normalised joint positions)."""
    return gaussian_frechet_distance(*statistics(a), *statistics(b))
