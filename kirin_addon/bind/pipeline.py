"""Auto-Bind's pipeline: fit a family's template skeleton to an unrigged mesh, then skin the mesh to
it — planned and composed here, given the template fit's optimiser (`TemplateFitter`, torch:
models/bind/template_fit.py, which describes what it fits and its loss) and, for the "learned"
weights, the network that re-weighs them (`WeightScorer`, models/bind/learned_weights.py).

The fit, as `BindPipeline.fit` plans it, in the target's normalised frame (bbox centre at the
origin, bbox diagonal 1), so a mesh in any units and orientation fits the same way:

- the target: surface samples for the loss and fresh ones for the reported Chamfer;
- the starts: the mesh's principal axes matched to the template's under all 24 proper
  sign/permutation ambiguities (each also turned ±45° about each axis), scored, the best refined by
  similarity ICP (templates.initial_alignments). Where the mesh is mirror-symmetric (a bind pose),
  each start is snapped onto its mirror plane and the fitter keeps the similarity locked to it (it
  may only pitch about the plane normal and slide in the plane): ICP on a template of other
  proportions settles a few degrees off, and legs then pair wrongly;
- stages: coarse (similarity + scales) for `orientations` distinct starts, then fine (+ joint
  rotations) for the best `finalists`; the lowest final loss wins (only articulation tells a rat
  from a reversed rat whose long tail plays the template's neck). Family detection (family=None)
  gives every family the coarse stage from its best `detect_orientations` starts, ranks families by
  Chamfer, and finishes the best.

Result: the template rig with scaled bones and fitted rest orientations, mapped by the similarity
into the target's own coordinates and units: its rest matrices are the asset's bind transforms B_j
(rigid, orthonormal, positive bone lengths).

Quality: the worst of three grades (thresholds in `FitConfig`), set from
`benchmarks/bench_template_fit.py`: mean bidirectional Chamfer (fraction of the target's bbox
diagonal, fresh samples) good ≤ 1.5 % < fair ≤ 3 % < poor; mean bind-pose rotation per joint
good ≤ 20° < fair ≤ 30° < poor; mean relative stretch of template edges good ≤ 2.5 % < fair ≤
3.2 % < poor. Procedural creatures of the right family land at 0.25–0.85 %, 3–18° and 0.2–2.2 %;
a lumpy blob is covered by the bird template to 1.8 % but only bent by 35° per joint and
stretched by 3.6 %: poor.

Cost (one thread, shared 2-core machine): 3–8 s per fit with the family given, whatever the mesh
size (it is only sampled: 4.6 s for a 20k-vertex mesh, 5.5 s for 2M vertices); 10–13 s with
family detection (8 families). A loaded machine can double that.

The skin (`BindPipeline.skin`), by the request's `weights`: the fitted template's weights
transferred to the mesh (weight_transfer.py), bone heat on the mesh (heat_weights.py), bone heat
with the transferred weights as its prior, or those three re-weighed by the learned network.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import cKDTree

from ..core.creature import FAMILIES, Creature
from ..core.rig import Rig
from ..core.rotations import rotation_angle
from .fit_protocol import FitConfig, FitRun, FitStart, FitTarget, TemplateFitter, WeightScorer
from .heat_weights import PRIOR_WEIGHT, HeatConfig, HeatResult, rig_heat_weights
from .request import BindRequest
from .skin_weights import finish_weights
from .templates import (
    chamfer_distance,
    check_mesh,
    dense_weights,
    initial_alignments,
    mirror_plane,
    sample_surface,
    snap_to_plane,
    template,
    triangle_areas,
)
from .weight_features import weight_features
from .weight_transfer import TransferConfig, TransferResult, transfer_weights

Progress = Callable[[float, str], None]
QUALITY = ("good", "fair", "poor")
MIN_WEIGHT = 0.01  # learned weights: as bone heat's, smaller weights are dropped before the influence limit


@dataclass
class FitResult:
    family: str
    rig: Rig  # in the TARGET's coordinates and units: rest = B_j (bind transforms)
    template_vertices: np.ndarray  # (Vt,3) the template mesh deformed by the fit, target coordinates
    template_triangles: np.ndarray  # (Ft,3)
    template_weights: np.ndarray  # (Vt,J) dense template skin weights, rows sum to 1
    chamfer: dict  # target_to_template, template_to_target, mean: fractions of the target bbox diagonal
    quality: str  # "good" / "fair" / "poor"
    transform: np.ndarray  # (4,4) similarity template-canonical → target
    scores: dict[str, float] = field(default_factory=dict)  # family → Chamfer mean fraction (probe)
    seconds: float = 0.0
    creature: Creature | None = None  # the template: roles (pelvis, limbs, ...) index `rig`'s joints
    bone_scales: np.ndarray | None = None  # (J,2) fitted length and width scale of each bone
    deformation: dict = field(default_factory=dict)  # bend (deg), edge stretch, scale range, final loss
    message: str = ""  # one line for the user: the quality and, when not good, why


@dataclass
class LearnedResult:
    weights: np.ndarray  # (V, J) float32, rows sum to 1
    heat: HeatResult  # bone heat alone (its masks are the learned set's too)


class BindPipeline:
    """Auto-Bind on a given optimiser and (for the learned weights) weight scorer."""

    def __init__(self, fitter: TemplateFitter, scorer: WeightScorer | None = None):
        self.fitter = fitter
        self.scorer = scorer

    def fit(self, vertices, triangles, family: str | None = None, config: FitConfig | None = None,
            progress: Progress | None = None) -> FitResult:
        """Fit a template skeleton to a mesh (any orientation, scale, position); see the module docstring.

        `family` None detects it: every family in `config.families` gets a short coarse fit from its
        best orientations, the lowest Chamfer wins and its fit is finished. Raises ValueError for a
        mesh that cannot be fitted at all (no triangles, NaN, too few vertices, no area); a mesh
        that fits badly gives a result of quality "poor" instead.
        """
        config = config or FitConfig()
        start = time.perf_counter()
        if family is not None and family not in FAMILIES:
            raise ValueError(f"Unknown family {family!r}; expected one of {', '.join(FAMILIES)}.")
        report = progress or (lambda fraction, message: None)
        with self.fitter.session(config):
            report(0.0, "Sampling the mesh")
            target = fit_target(vertices, triangles, config)
            families = [family] if family is not None else list(config.families)
            keep = config.orientations if family is not None else config.detect_orientations
            finalists = max(1, config.finalists)
            total = len(families) * keep * config.coarse_steps + finalists * config.fine_steps
            done = [0]

            def tick(steps: int) -> None:
                done[0] += steps
                if done[0] % 25 == 0:
                    report(min(done[0] / max(total, 1), 0.99), "Fitting the template")

            scores: dict[str, float] = {}
            candidates: dict[str, list[FitRun]] = {}
            for name in families:
                report(min(done[0] / max(total, 1), 0.99), f"Trying the {name} template")
                candidates[name] = self._candidates(name, target, config, keep, tick)
                scores[name] = min(_probe_score(run, target) for run in candidates[name])
            best = min(scores, key=scores.get)
            # A rigid-plus-scales fit can prefer a reversed body (a rat's long tail taken for the
            # template's neck) that only articulation shows to be worse: the finalists are ranked
            # after the full fine stage.
            finished = []
            for run in candidates[best][:finalists]:
                run.run("fine", config.fine_steps, tick)
                finished.append((run.final_loss(), run))
            run = min(finished, key=lambda item: item[0])[1]
            result = _result(run, target, best, scores, config, start)
            report(1.0, result.message)
            return result

    def _candidates(self, family: str, target: FitTarget, config: FitConfig, keep: int,
                    tick: Callable[[int], None]) -> list[FitRun]:
        """Runs from `keep` distinct starts after the coarse stage each, lowest loss first."""
        out = []
        for begin in fit_starts(family, target, config, keep):
            run = self.fitter.start(family, target, begin, config)
            run.run("coarse", config.coarse_steps, tick)
            out.append(run)
        return sorted(out, key=lambda run: run.last_loss)

    def skin(self, request: BindRequest, fit: FitResult, config: TransferConfig,
             report: Progress) -> tuple[TransferResult, str]:
        """The mesh's weights for the fitted rig, by the request's `weights`, and the method's name.

        Masks: transfer's own; for the heat sets, matched = heated by its nearest visible bone,
        inpainted = only diffused to, fallback = a piece no bone is visible from."""
        result = None
        if request.weights != "heat":  # bone heat alone needs no template weights
            report(0.8, "transferring the template's skin weights")
            result = transfer_weights(fit.template_vertices, fit.template_triangles, fit.template_weights,
                                      request.vertices, request.triangles, config)
        if request.weights == "transfer":
            return result, config.method
        if request.weights == "learned":
            if self.scorer is None:
                raise ValueError("The learned weights need the weight network, and this pipeline has none.")
            report(0.85, "computing bone heat and the learned weights")
            learned = learned_weights(request.vertices, request.triangles, fit.rig, result.weights,
                                      self.scorer, config.max_influences)
            heat = learned.heat
            masks = (heat.heated, ~heat.heated, heat.blind)
            return TransferResult(learned.weights, *masks, heat.stats), "learned"
        report(0.9, "computing bone-heat weights")
        prior = result.weights if request.weights == "blend" else None
        heat_config = HeatConfig(prior_weight=PRIOR_WEIGHT if prior is not None else 0.0,
                                 max_influences=config.max_influences)
        heat = rig_heat_weights(request.vertices, request.triangles, fit.rig, prior, heat_config)
        method = "heat" if prior is None else f"heat+{config.method}"
        return TransferResult(heat.weights, heat.heated, ~heat.heated, heat.blind, heat.stats), method


def learned_weights(vertices: np.ndarray, triangles: np.ndarray, rig: Rig, transferred: np.ndarray,
                    scorer: WeightScorer, max_influences: int = 4) -> LearnedResult:
    """(V, J) weights of the mesh for the fitted `rig` (its deform bones), from the template weights
    `transferred` onto the mesh (V, J) and bone heat with and without them as a prior, re-weighed by
    `scorer` (the learned network)."""
    heat = rig_heat_weights(vertices, triangles, rig, None, HeatConfig(max_influences=max_influences))
    blend = rig_heat_weights(vertices, triangles, rig, transferred,
                             HeatConfig(prior_weight=PRIOR_WEIGHT, max_influences=max_influences))
    found = weight_features(vertices, triangles, rig,
                            {"heat": heat.weights, "blend": blend.weights, "transfer": transferred})
    dense = found.dense(scorer(found.features, found.valid), rig.joint_count).astype(np.float32)
    dense[dense < MIN_WEIGHT] = 0.0  # a vertex's strongest of ≤ 8 candidates is ≥ 1/8: never dropped
    return LearnedResult(finish_weights(dense, max_influences), heat)


# --------------------------------------------------------------------------- the fit's plan
def fit_target(vertices, triangles, config: FitConfig) -> FitTarget:
    """The checked mesh, normalised and sampled (ValueError for a mesh that cannot be fitted)."""
    verts, tris = check_mesh(vertices, triangles)
    used = np.zeros(len(verts), dtype=bool)
    used[tris.ravel()] = True
    lo = np.min(verts, axis=0, where=used[:, None], initial=np.inf)  # no copy of a huge mesh
    hi = np.max(verts, axis=0, where=used[:, None], initial=-np.inf)
    diagonal = float(np.linalg.norm(hi - lo))
    if not np.isfinite(diagonal) or diagonal <= 0.0:
        raise ValueError("The mesh has no extent: all its vertices are at one point.")
    centre = 0.5 * (lo + hi)
    areas = triangle_areas(verts, tris)
    total = config.target_samples + config.eval_samples
    points, _, _ = sample_surface(verts, tris, total, config.seed, areas)
    points = (points - centre) / diagonal
    loss_points = points[: config.target_samples]
    eval_points = points[config.target_samples:]
    return FitTarget(loss_points, eval_points, centre, diagonal, cKDTree(loss_points), cKDTree(eval_points))


def fit_starts(family: str, target: FitTarget, config: FitConfig, keep: int) -> list[FitStart]:
    """`keep` distinct starting similarities: ICP-refined PCA orientations, each snapped onto the
    target's mirror plane near its sagittal plane where the target is mirror-symmetric (ICP on
    a template of other proportions tends to settle a few degrees off, legs then pair wrongly)."""
    vertices = template(family).mesh.vertices
    rng = np.random.default_rng(config.seed)
    sub_t = target.points[rng.permutation(len(target.points))[:600]]
    tpl_points = vertices[rng.permutation(len(vertices))[:600]]
    out: list[FitStart] = []
    for cand in initial_alignments(sub_t, tpl_points, config.icp_iterations, keep=2 * keep):
        begin = FitStart(cand.rotation, cand.scale, cand.translation, cand.chamfer)
        if config.mirror_lock:
            plane = mirror_plane(sub_t[:400], target.eval_points, cand.rotation[:, 0],
                                 reference_tree=target.eval_tree)
            if plane.symmetric:
                snapped = snap_to_plane(cand, plane)
                begin = FitStart(snapped.rotation, snapped.scale, snapped.translation, cand.chamfer,
                                 plane.normal)
        if all(rotation_angle(begin.rotation, o.rotation) > np.radians(10.0)
               or np.linalg.norm(begin.translation - o.translation) > 0.05 for o in out):
            out.append(begin)
        if len(out) == keep:
            break
    return out


def _probe_score(run: FitRun, target: FitTarget) -> float:
    """Mean bidirectional Chamfer (fraction of the diagonal) of a probe, on the loss samples."""
    points = run.surface_points()
    return 0.5 * float(target.tree.query(points)[0].mean() + cKDTree(points).query(target.points)[0].mean())


def fit_quality(chamfer: float, deformation: dict, config: FitConfig) -> tuple[str, str]:
    """(quality, message): the worst of three grades, with the reason for the worst."""
    grades = [
        (0 if chamfer <= config.good else 1 if chamfer <= config.fair else 2,
         f"the surfaces are {100 * chamfer:.1f} % of the mesh size apart"),
        (0 if deformation["bend_mean_deg"] <= config.bend_fair
         else 1 if deformation["bend_mean_deg"] <= config.bend_poor else 2,
         f"the template had to bend {deformation['bend_mean_deg']:.0f}° per joint on average"),
        (0 if deformation["edge_stretch"] <= config.stretch_fair
         else 1 if deformation["edge_stretch"] <= config.stretch_poor else 2,
         f"the template's surface had to stretch {100 * deformation['edge_stretch']:.1f} %"),
    ]
    grade, reason = max(grades, key=lambda item: item[0])
    return QUALITY[grade], reason


def _result(run: FitRun, target: FitTarget, family: str, scores: dict[str, float], config: FitConfig,
            start: float) -> FitResult:
    """The finished run mapped into the target's coordinates and units, graded."""
    creature = template(family)
    fitted = run.fitted()
    rotation, scale, trans = fitted.rotation, fitted.scale, fitted.translation
    # Normalised target frame → target: x = diagonal * x_n + centre.
    d, c = target.diagonal, target.centre
    to_target = lambda p: d * (scale * p @ rotation.T + trans) + c  # noqa: E731
    bone_rot, heads = fitted.bone_rotations, fitted.heads
    lengths = fitted.bone_scales[:, 1] * creature.rig.lengths
    tails = heads + bone_rot[:, :, 1] * lengths[:, None]
    rest = np.zeros((creature.rig.joint_count, 4, 4))
    rest[:, :3, :3] = rotation @ bone_rot
    rest[:, :3, 3] = to_target(heads)
    rest[:, 3, 3] = 1.0
    rig = Rig(list(creature.rig.names), creature.rig.parents.copy(), rest, to_target(tails),
              creature.rig.deform.copy())
    verts = to_target(fitted.vertices)
    triangles = creature.mesh.triangles
    # Reported Chamfer: fresh target samples against a dense sampling of the fitted template.
    dense, _, _ = sample_surface(verts, triangles, config.eval_samples, config.seed + 1)
    chamfer = chamfer_distance(target.eval_points * d + c, np.concatenate([verts, dense]), d)
    transform = np.eye(4)
    transform[:3, :3] = d * scale * rotation
    transform[:3, 3] = d * trans + c
    deformation = run.deformation()
    quality, reason = fit_quality(chamfer["mean"], deformation, config)
    message = {"good": f"The {family} template fits the mesh closely.",
               "fair": f"The {family} template fits the mesh roughly ({reason}); check the skeleton before "
                       "binding.",
               "poor": f"The mesh does not look like a {family} in a bind pose ({reason}): the fitted "
                       "skeleton is unreliable."}[quality]
    return FitResult(family=family, rig=rig, template_vertices=verts,
                     template_triangles=triangles.copy(), template_weights=dense_weights(creature),
                     chamfer=chamfer, quality=quality, transform=transform, scores=scores,
                     seconds=time.perf_counter() - start, creature=creature,
                     bone_scales=fitted.bone_scales[:, 1:].copy(), deformation=deformation,
                     message=message)
