"""The video fit's optimisation, given to the video pipeline (kirin_addon/video/pipeline.py: its plan,
starts, camera and root path; kirin_addon/video/fit_protocol.py: what crosses): Kirin's sequence-level
optimisation (issue 8, part 3) in torch.

Unknowns, all in the canonical frame of the rig (core/canonical.py: +Z up, −Y forward, body size 1):

* per frame and joint, the world delta D_tj = R_world · R_rest⁻¹ as a 6D rotation (two columns);
* per frame, the main root's head position r_t — parametrised as the camera sees it: the root's
  normalised image position and log(k / depth) (fit_optimise.RootPath), so that the single-view valley
  "λ times bigger, λ times further" is the one axis log k and Adam does not crawl along it;
* one body scale k for the clip: the filmed creature is k × the rig (fitted only when the camera
  is given — with an estimated camera k = 1 fixes the gauge, the camera being placed to match);
* a fixed camera: the given `PinholeCamera` (armature space), or one estimated once (below).

Forward kinematics of world deltas is a matrix product (`geometry.ancestor_paths`):
p_j = r + s_j + Σ_k A[j,k] · D_parent(k) · o_k, o_k the rest offset of k from its parent, s_j the
rest offset of j's root from the main root; bone tails are p_j + D_j · (tail_j − head_j). The world
the camera sees is k · p. Evidence points are joint heads.

Loss (weights in `VideoFitConfig`; the issue's 1.0 / 100 / 0.2 for projection / rotation smoothness /
increment smoothness are the defaults, and the normalisations below are what make them balance):

* projection — Geman-McClure ρ = e²/(e² + σ²) of each joint head's pixel error e, measured in units
  of the *subject's* 2D size (the median diagonal of the silhouette's bounding box, else of the
  keypoints' scaled up by the share of the rig they span) rather than the image diagonal, so the
  balance with the priors does not depend on how the subject is framed; weighted by confidence
  (NaN points weigh nothing), summed over joints and averaged over the frames that have keypoints
  (more points in a frame, less smoothing; a few labelled frames weigh per frame what many do).
  σ anneals from `robust_scale_start` to `robust_scale` over the first half of the
  steps (graduated non-convexity: a wide basin first, outliers ignored at the end).
* silhouette — a differentiable soft silhouette of a capsule proxy: each bone a capsule head → tail
  with radius the median distance to the bone of the mesh vertices it dominates (`mesh` given), else
  `radius_share` × its length; non-deforming bones are not drawn. Rendered per frame on a
  `silhouette_size`² grid over a square crop around the mask's bounding box (the subject fills the
  grid however small it is in the video): soft = σ(−min_b(d_b − ρ_b)/τ), d_b a pixel's distance to
  the projected bone axis, ρ_b the projected radius. Terms: 1 − soft IoU with the mask, plus a
  chamfer pair in subject sizes — points along every bone pulled inside the mask (its outside
  distance transform, sampled) and mask pixels pulled onto the nearest capsule. The IoU and the
  mask→proxy half are rendered every `silhouette_every` steps on `silhouette_frames` random frames.
* smoothness — mean over frames and joints of the squared frame-to-frame difference of the
  (orthonormalised) 6D rotations, and of their second differences (rotation increments); the root
  path gets a squared-acceleration term (body sizes).
* prior — squared 6D distance to the initial pose (a weak pull to the init: joints without evidence
  stay where the init had them), and a term keeping the raw 6D columns orthonormal.
* upright — the trunk (the pelvis the gait controllers find, else the main root) may tilt its up
  axis `upright_deg` (20°) from the vertical for free; beyond, the cosine it lacks costs `upright`
  (10), in the rigid stage too (on its per-frame turns). Real footage gives poor evidence: on
  Muybridge's bison, background subtraction finds only pieces of the legs, and without this term
  the body tipped over to explain them (up to 36° here, 171° through the add-on). An animal that
  really rolls over is not fitted.
* ground — the clip stands on the ground plane of the canonical frame (where the rig's feet stand
  at rest): feet below it are penalised, and each frame's lowest foot is pulled onto it through a
  Geman-McClure of scale `ground_scale` (a frame in the air costs a bounded amount). This makes the
  body scale observable with a given camera and keeps the trajectory on the ground. The feet are the
  legs' planted joints (generate/rig_roles.py), and foot controls and pole targets outside the body
  are carried by the joints they follow. Where the camera came from the footage's own ground (the
  pipeline's estimate), the lower half of the frames' lowest-foot heights is also pulled down in full
  (`settled`): a whole clip floating above a ground the film shows is no gallop's flight.

Schedule. An *epoch* is `steps_per_epoch` (30) Adam steps, each on the whole sequence (every frame
and joint; the silhouette as above): 20 epochs = 600 steps. Rotations use the issue's lr 1e-3;
the root path and log-scale `lr_root` (Adam moves a coordinate by at most ~lr a step: 1e-3 would
move the root 0.6 body sizes in 600 steps). At 1e-3 a rotation coordinate moves at most ~0.6 in
600 steps (~35°) beyond what the rigid stage explains: on the tests' rearing cow, full keypoints are
within 1 px after 200 steps, and the 600 leave room for inits further off. Before the epochs a
rigid stage turns and places the initial pose per frame: for each of `init_yaws` headings, on
`rigid_frames` frames, a per-frame root rotation and translation are fitted (`rigid_steps` steps at
`lr_rigid`, keypoints and the silhouette distance transform only) and the heading with the lowest
data loss wins (a creature seen from the side fits its mirror image badly but gradient descent does
not turn a body around); the winner is refined on all frames. The pipeline plans the hypotheses
(kirin_addon/video/fit_rigid.py); `FitProblem.rigid` fits them.

Measured (2 CPU cores busy with a training job, one torch thread; procedural cow, 36 joints, 60
frames of kirin_addon/video/synth.py at 320×240, keypoints with 1 px noise, occluded ones dropped;
PCK@0.1 of the rigid stage alone → the fit; given camera / estimated camera):

  gallop   all visible keypoints     0.05 s/frame   0.88 → 0.98 / 0.86 → 0.98
  gallop   7 keypoints + silhouettes 0.21–0.23      0.87 → 0.98 / 0.88 → 0.97
  gallop   silhouettes only          0.16–0.19      0.68 → 0.71 / 0.63 → 0.70
  rear_up  all visible keypoints     0.04–0.05      0.95 → 0.96 / 0.95 → 0.97
  rear_up  7 keypoints + silhouettes 0.13           0.83 → 1.00 / 0.82 → 0.93
  rear_up  silhouettes only          0.16–0.20      0.60 → 1.00 / 0.59 → 0.95

"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ...kirin_addon.core.camera import PinholeCamera
from ...kirin_addon.video.fit_body import FitBody
from ...kirin_addon.video.fit_config import VideoFitConfig
from ...kirin_addon.video.fit_evidence import FitEvidence
from ...kirin_addon.video.fit_protocol import FitStart, FittedMotion, RigidFit, RigidTask
from .. import geometry
from .fit_body import Body
from .fit_optimise import full_fit, rigid_fit
from .fit_problem import Problem


class TorchVideoFitter:
    """The video pipeline's optimiser (kirin_addon/video/fit_protocol.VideoFitter) in torch."""

    def body(self, body: FitBody) -> TorchBody:
        return TorchBody(Body(body))


class TorchBody:
    """The body as tensors (fit_protocol.BodyModel): its kinematics in float32, as the fit sees it."""

    def __init__(self, body: Body):
        self.tensors = body

    @property
    def floor(self) -> float:
        return float(self.tensors.foot_heights.mean())

    def pose(self, deltas: np.ndarray, root: np.ndarray | None = None,
             turn: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        d = torch.as_tensor(deltas, dtype=torch.float32)
        if turn is not None:
            d = torch.as_tensor(turn, dtype=torch.float32) @ d
        r = torch.zeros(d.shape[:-3] + (3,)) if root is None else torch.as_tensor(root, dtype=torch.float32)
        with torch.no_grad():
            heads, tails = self.tensors.positions(d, r)
        return heads.numpy().astype(np.float64), tails.numpy().astype(np.float64)

    def problem(self, evidence: FitEvidence, camera: PinholeCamera, config: VideoFitConfig,
                starts: np.ndarray) -> TorchProblem:
        return TorchProblem(Problem(self.tensors, evidence, camera, config), starts)


class TorchProblem:
    """One clip's optimisation (fit_protocol.FitProblem): the data terms, and each start's pose about its
    main root (the rigid stage only turns and places it)."""

    def __init__(self, problem: Problem, starts: np.ndarray):
        self.problem = problem
        self.starts = torch.as_tensor(starts, dtype=torch.float32)
        count, frames = self.starts.shape[:2]
        with torch.no_grad():
            flat = problem.body.positions(self.starts.flatten(0, 1), torch.zeros(count * frames, 3))
        self.rel_heads, self.rel_tails = (p.reshape(count, frames, *p.shape[1:]) for p in flat)

    def rigid(self, task: RigidTask) -> RigidFit:
        problem = self.problem if task.frames is None else self.problem.restricted(task.frames)
        starts = np.unique(task.starts)
        if len(starts) == 1:  # one pose for every hypothesis
            heads, tails = self.rel_heads[int(starts[0])], self.rel_tails[int(starts[0])]
            index = slice(None) if task.frames is None else task.frames
            heads, tails = heads[index], tails[index]
        else:
            which = torch.as_tensor(task.starts, dtype=torch.long)
            index = slice(None) if task.frames is None else task.frames
            heads, tails = self.rel_heads[which][:, index], self.rel_tails[which][:, index]
        score, turns6, roots = rigid_fit(problem, heads, tails, task.turns6, task.roots, problem.config,
                                         task.steps, score=task.score)
        return RigidFit(turns6, roots, None if score is None else score.numpy())

    def fit(self, start: FitStart, progress: Callable[[float], None] | None) -> FittedMotion:
        with torch.no_grad():
            turn = geometry.sixd_to_matrix(torch.as_tensor(start.turns6, dtype=torch.float32))[:, None]
            start_deltas = turn @ self.starts[start.start]
            start_root = torch.as_tensor(start.root, dtype=torch.float32)
        generator = torch.Generator().manual_seed(self.problem.config.seed)
        deltas, root, scale, losses = full_fit(self.problem, start_deltas, start_root, start.fit_scale,
                                               self.problem.config, progress, generator)
        return FittedMotion(deltas, root, scale, losses)
