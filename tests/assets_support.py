"""Where the third-party assets of ../shared live (tests skip what needs them when absent)."""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parents[1].parent / "shared" / "assets"


def asset_files(*patterns: str) -> list[Path]:
    """Asset files matching glob patterns under ../shared/assets (empty when it is absent)."""
    if not ASSETS.is_dir():
        return []
    return sorted({p for pattern in patterns for p in ASSETS.glob(pattern)})
