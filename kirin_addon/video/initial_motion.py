"""Where an Extract Motion From Video job's fit starts (kirin_addon/video/pipeline.py): the prediction of
the rig's inverse-dynamics model (a network, given as its loader), else the rig's gait at the stride
frequency the silhouettes show, at the phases of its cycle (generate/gait_cycle.py), else the rig's
standing pose (the same controllers'), else the rest pose; and the fit's settings the request asks
for."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..core.canonical import CanonicalRig, canonical_rig
from ..core.json_values import plain
from ..core.motion import Motion
from ..core.rig import Rig
from ..core.rig_reduction import reduce_rig
from ..core.skinning import SkinnedMesh
from ..eval import footage
from .evidence import Evidence2D
from .fit_config import VideoFitConfig
from .gather import Report
from .request import FACING_AUTO, GAIT_AUTO, ExtractRequest

if TYPE_CHECKING:
    from ..generate.gait_cycle import GaitStarts


class StartModel(Protocol):
    """A rig's inverse-dynamics model (models/video/idm.py): silhouettes → a motion of the rig."""

    def predict(self, silhouettes: np.ndarray, *, image_size: tuple[int, int], fps: float) -> Motion:
        ...


# load(rig, mesh, progress=progress(fraction, message)) → the rig's model, trained on first use; a
# ValueError where it cannot be (the fit then starts from the standing pose).
IDMLoader = Callable[..., StartModel]


def idm_start(load: IDMLoader | None, rig: Rig, mesh: SkinnedMesh | None, evidence: Evidence2D,
              report: Report, notes: dict[str, Any]) -> Motion | None:
    """An initial motion (the fit's start) from the rig's inverse-dynamics model, trained on renders of
    the rig on first use and cached per rig; None with a note when there is none to use. The model
    reads silhouettes; its failure (bad masks...) leaves the fit to start from the standing pose."""
    if load is None:
        notes["idm"] = "not available: this backend has no inverse-dynamics model (models/video/idm.py)"
        return None
    if evidence.silhouettes is None:
        notes["idm"] = "not available without silhouettes: use background subtraction or a mask folder"
        return None
    report(0.07, "the rig's inverse-dynamics model (trained once per rig: minutes)")
    started = time.perf_counter()

    def progress(fraction: float, message: str = "") -> None:  # what report raises (a cancel) stops it
        report(0.07 + 0.07 * min(max(float(fraction), 0.0), 1.0),
               message or "training the rig's inverse-dynamics model")

    # A rig of more than 64 bones: the model is trained for its bones that matter; the rest ride on them.
    reduction = reduce_rig(rig, keep=canonical_rig(rig).feet)
    try:
        small_mesh = None if mesh is None else reduction.reduce_mesh(mesh)
        model = load(reduction.rig, small_mesh, progress=progress)
        motion = model.predict(evidence.silhouettes, image_size=evidence.image_size, fps=evidence.fps)
        motion = reduction.expand_motion(motion)
    except ValueError as exc:  # IDMError: the fit starts from the standing pose instead
        notes["idm"] = f"not used: {exc}"
        return None
    notes["idm"] = {"used": True, "seconds": time.perf_counter() - started,
                    "model": plain(getattr(model, "card", {}).get("key"))}
    return motion


def gait_starts_for(rig: Rig, mesh: SkinnedMesh | None, gait: str, evidence: Evidence2D,
                    notes: dict[str, Any]) -> GaitStarts | None:
    """The rig's gait (`gait`: 'auto' or words naming one) at the stride frequency the silhouettes show,
    at the phases of its cycle, or None (and why, in the notes): no
    silhouettes, no stride in them, a rig the gait controllers cannot drive."""
    from ..core.canonical import canonical_rig, detect_canonical_frame
    from ..generate.gait_cycle import GaitAsked, gait_starts

    if evidence.silhouettes is None:
        notes["gait"] = {"used": False, "why": "no silhouettes to read the stride from"}
        return None
    frequency = footage.silhouette_stride_hz(evidence.silhouettes > 0.5, evidence.fps)
    if frequency is None:
        notes["gait"] = {"used": False, "why": "the silhouettes show no stride"}
        return None
    vertices = None if mesh is None else mesh.vertices
    canon = canonical_rig(rig, detect_canonical_frame(rig, mesh_vertices=vertices))
    asked = gait.strip()
    words = "" if asked.casefold() == GAIT_AUTO else asked
    starts = gait_starts(canon, rig, GaitAsked(evidence.frame_count, evidence.fps, frequency, words), mesh)
    if starts is None:
        notes["gait"] = {"used": False, "why": "the gait controllers cannot drive this rig",
                         "stride_hz": frequency}
        return None
    notes["gait"] = {"used": True, **starts.report()}
    return starts


def standing_start(canon: CanonicalRig, rig: Rig, mesh: SkinnedMesh | None, fps: float) -> Motion | None:
    """The rig's standing pose (one frame), the fit's start where no motion is given; None where the
    controllers cannot stand the rig (the fit starts from rest)."""
    from ..generate.gait_cycle import standing_pose

    return standing_pose(canon, rig, fps, mesh)


def fit_config(request: ExtractRequest, gait: bool) -> VideoFitConfig:
    """The fit's settings a request asks for: its epochs and facing; with a gait start (`gait`) the prior
    that holds the legs where the evidence is silent."""
    config = VideoFitConfig() if request.epochs is None else VideoFitConfig(epochs=request.epochs)
    if request.facing != FACING_AUTO:
        config = replace(config, facing=request.facing)
    if gait:
        config = replace(config, prior=config.gait_prior)
    return config
