"""Driving video → motion on the user's own rig: Kirin's sequence-level optimisation (issue 8, part 3).

Unknowns, all in the canonical frame of the rig (core/canonical.py: +Z up, −Y forward, body size 1):

* per frame and joint, the world delta D_tj = R_world · R_rest⁻¹ as a 6D rotation (two columns);
* per frame, the main root's head position r_t — parametrised as the camera sees it: the root's
  normalised image position and log(k / depth) (`_RootPath`), so that the single-view valley
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
  are carried by the joints they follow. Where the camera came from the footage's own ground (below),
  the lower half of the frames' lowest-foot heights is also pulled down in full (`settled`): a whole
  clip floating above a ground the film shows is no gallop's flight.

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
not turn a body around); the winner is refined on all frames.

Global translation, estimated separately and then combined (the issue's wording): per frame the
confidence-weighted 2D centroid of the keypoints (the silhouette's where a frame has fewer than
three), averaged over three frames, back-projected at the depth at which the evidence's 2D spread
matches the spread of the same joints of the rig in body lengths (median over the clip), then slid
along its ray to the rest height above the ground plane where the view is steep enough
(ground-aligned). This path initialises the root of every heading hypothesis; the rigid stage and
the epochs refine it with everything else.

Estimated camera (when `camera` is None): focal `config.focal` or max(W, H) pixels, principal point
at the image centre, level (no roll). Where the evidence has a horizon (kirin_addon/video/ground.py)
and silhouettes, the tilt puts the horizon on its row and the height puts the floor on the row the
silhouettes stand on (fit_start._camera_on_the_ground); otherwise `camera_elevation_deg` of downward
tilt. It looks at the rig's rest root from its side (which side does not matter: the heading
search turns the body), at the distance where the median 2D extent of the evidence matches the rig's
extent. After the fit the world is turned about the vertical and shifted along the ground, camera
included (the images do not change), so that the motion starts at the rig's rest position facing its
own forward.

Output: `VideoFitResult.motion` on the user's rig in armature space (rotations through the
inverse-bind correction of `motion_from_world_deltas`, fps = evidence.fps) and `camera` in the same
armature space, such that `camera.project(joint_positions(rig, motion))` reproduces the fit — for a
given camera and a scale k ≠ 1 that is the given camera moved towards the rig's canonical origin by
1/k (the same images: the motion is on the user's rig, not on one k times bigger); `scale` = k.

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

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import torch

from ...kirin_addon.core.camera import PinholeCamera
from ...kirin_addon.core.canonical import CanonicalFrame, canonical_rig, detect_canonical_frame
from ...kirin_addon.core.motion import (
    Motion,
    joint_positions,
    motion_from_world_deltas,
    motion_from_world_transforms,
    world_deltas,
)
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.rotations import heading, matrix_to_6d, matrix_to_quat, quat_to_matrix, yaw_matrix
from ...kirin_addon.core.skinning import SkinnedMesh
from ...kirin_addon.generate.rig_roles import RoleError, detect_roles, followers_attached, planting_joints
from .. import geometry
from .fit_body import Body, capsule_radii
from .fit_config import VideoFitConfig, VideoFitError, VideoFitResult
from .fit_evidence import FitEvidence, check_evidence
from .fit_optimise import full_fit, report_progress, rigid_fit
from .fit_problem import Problem
from .fit_start import estimate_camera, initial_root_path


def fit_motion(rig: Rig, evidence, mesh: SkinnedMesh | None = None, config: VideoFitConfig | None = None,
               init: Motion | Sequence[Motion] | None = None, camera: PinholeCamera | None = None,
               progress: Callable[[float], None] | None = None) -> VideoFitResult:
    """Fit a motion of `rig` to 2D evidence of a video (see the module docstring).

    `evidence`: an `Evidence2D` (image_size (W,H), fps, points (T,J,2) px with NaN where unknown,
    confidence (T,J), silhouettes (T,h,w) or None), one keypoint column per rig joint (its head).
    `init`: a starting motion on the rig (same frame count; e.g. the inverse-dynamics model's
    prediction), or several (a gait at the phases of its cycle: the rigid stage keeps the one, and the
    heading, that explain the evidence best); rest pose otherwise. `camera`: the video's camera in
    armature space; estimated when None. `progress(fraction)` is called as the fit goes; an exception
    it raises stops the fit and propagates."""
    started = time.perf_counter()
    config = config or VideoFitConfig()
    rig.validate()
    ev = check_evidence(evidence, rig, config)
    frames = ev.points.shape[0]
    starts = [] if init is None else [init] if isinstance(init, Motion) else list(init)
    for start in starts:
        start.check_rig(rig)
        if start.frame_count != frames:
            raise VideoFitError(f"The initial motion has {start.frame_count} frames but the video evidence "
                                f"has {frames}.")
    frame = detect_canonical_frame(rig, up=config.up_axis, forward=config.forward_axis,
                                   mesh_vertices=None if mesh is None else mesh.vertices)
    canon = canonical_rig(rig, frame)
    carried, tops, feet = _rig_to_move(canon.rig, canon.feet)
    radii = capsule_radii(carried, frame, mesh, config.radius_share)
    body = Body(carried, radii, feet)
    generator = torch.Generator().manual_seed(config.seed)
    report_progress(progress, 0.0)

    # Initial poses (canonical world deltas, (P,T,J,3,3): one per start) and camera.
    deltas0 = _start_deltas(rig, frame, starts, frames)
    estimated = camera is None
    camera_c, grounded = estimate_camera(ev, body, config) if estimated else \
        (camera.transformed(frame.matrix()), False)
    config = config if grounded else replace(config, settled=0.0)  # only a ground the footage shows
    fit_scale = (not estimated) if config.fit_scale is None else bool(config.fit_scale)
    fit_scale = fit_scale and body.feet.numel() > 0
    problem = Problem(body, ev, camera_c, config)
    # The init's root path is in the given camera's world: it starts the first heading hypothesis.
    init_path = frame.to_canonical_points(starts[0].root_positions) if starts and not estimated else None
    start_deltas, start_root, yaw, chosen = _rigid_stage(problem, deltas0, init_path, camera_c, config,
                                                         progress)

    # Full stage: all rotations, root path, body scale.
    deltas_c, root_c, scale, losses = full_fit(problem, start_deltas, start_root, fit_scale, config,
                                               progress, generator)

    # Back to the user's rig.
    camera_fit = PinholeCamera(camera_c.focal, camera_c.center, camera_c.rotation,
                               camera_c.translation / scale)
    if estimated and config.align_start:
        deltas_c, root_c, camera_fit = _align_start(body, deltas_c, root_c, camera_fit)
    motion, camera_arm = _on_user_rig(rig, frame, deltas_c, root_c, camera_fit, ev.fps)
    if tops:  # foot controls and pole targets go where the legs carried them
        motion = _with_followers(rig, frame, body, tops, deltas_c, root_c, motion)
    seen = ev.weights > 0
    reprojection = _reprojection_px(camera_arm.project(joint_positions(rig, motion)), ev)
    seconds = time.perf_counter() - started
    report = {
        "frames": frames,
        "joints": rig.joint_count,
        "joints_with_evidence": int(np.count_nonzero(seen.any(0))),
        "silhouettes": ev.masks is not None,
        "camera_estimated": estimated,
        "camera_from_ground": grounded,
        "scale_fitted": fit_scale,
        "heading_deg": float(np.degrees(yaw)),
        "starts": len(deltas0),
        "start_chosen": chosen,
        "steps": config.epochs * config.steps_per_epoch,
        "rigid_steps": config.rigid_steps,
        "losses": losses,
        "reprojection_px": float(np.nanmean(reprojection)) if np.isfinite(reprojection).any() else None,
        "seconds_per_frame": seconds / frames,
    }
    report_progress(progress, 1.0)
    return VideoFitResult(motion, camera_arm, scale, reprojection, seconds, report)


def _start_deltas(rig: Rig, frame: CanonicalFrame, starts: list[Motion], frames: int) -> np.ndarray:
    """(P,T,J,3,3) canonical world deltas of each start (the rest pose when there is none)."""
    if not starts:
        return np.broadcast_to(np.eye(3), (1, frames, rig.joint_count, 3, 3)).copy()
    return np.stack([frame.to_canonical_rotations(quat_to_matrix(world_deltas(rig, start)))
                     for start in starts])


def _rigid_stage(problem: Problem, deltas0: np.ndarray, init_path: np.ndarray | None,
                 camera_c: PinholeCamera, config: VideoFitConfig,
                 progress: Callable[[float], None] | None) -> tuple[torch.Tensor, torch.Tensor, float, int]:
    """Per-frame root rotation + translation for each start (P of them, deltas0 (P,T,J,3,3)) turned to
    each initial heading, on a subset of frames; the best start and heading is then refined on all
    frames. Returns its turned deltas (T,J,3,3), the root path (T,3) the full stage starts from, the
    winning heading (radians) and the winning start's index."""
    body, count, frames = problem.body, deltas0.shape[0], deltas0.shape[1]
    yaws = np.arange(max(config.init_yaws, 1)) * (2 * np.pi / max(config.init_yaws, 1))
    d0 = torch.as_tensor(deltas0, dtype=torch.float32)
    with torch.no_grad():  # each start's pose about its main root: the rigid stage only turns it
        rel_heads, rel_tails = (p.reshape(count, frames, *p.shape[1:])
                                for p in body.positions(d0.flatten(0, 1), torch.zeros(count * frames, 3)))
    paths = []  # per heading, from the first start (the phase of a gait barely moves the evidence's centre)
    for h, yaw in enumerate(yaws):
        turned = (torch.as_tensor(yaw_matrix(yaw), dtype=torch.float32) @ d0[0]).numpy().astype(np.float64)
        if init_path is not None and h == 0:
            paths.append(init_path)
        else:
            paths.append(initial_root_path(problem, body, turned, camera_c, 1.0))
    subset = np.unique(np.linspace(0, frames - 1, min(frames, config.rigid_frames)).round().astype(np.int64))
    # Hypothesis h is start h // len(yaws) at heading h % len(yaws).
    which = np.repeat(np.arange(count), len(yaws))
    turns = np.broadcast_to(np.tile(yaw_matrix(yaws), (count, 1, 1))[:, None],
                            (count * len(yaws), len(subset), 3, 3))
    search = problem.restricted(subset)
    barred = _facing_barred(config.facing, yaws, deltas0[:, 0, body.trunk], camera_c)  # (P,Y)
    pose = (lambda p: p[0][subset]) if count == 1 else (lambda p: p[which][:, subset])  # noqa: E731
    score, turns6, roots = rigid_fit(search, pose(rel_heads), pose(rel_tails),
                                     matrix_to_6d(turns), np.tile(np.stack(paths), (count, 1, 1))[:, subset],
                                     config, config.rigid_steps)
    best = int(torch.argmin(torch.where(torch.as_tensor(barred.ravel()), torch.inf, score)))
    chosen = int(which[best])
    report_progress(progress, 0.08)
    # The winner on every frame: the subset's rotations and root path interpolated, then refined.
    index = np.arange(frames)
    turn_all = np.stack([np.interp(index, subset, turns6[best, :, k]) for k in range(6)], -1)
    root_all = np.stack([np.interp(index, subset, roots[best, :, k]) for k in range(3)], -1)
    _, turns6, roots = rigid_fit(problem, rel_heads[chosen], rel_tails[chosen], turn_all[None],
                                 root_all[None], config, config.rigid_steps // 2, score=False)
    with torch.no_grad():
        turn = geometry.sixd_to_matrix(torch.as_tensor(turns6[0], dtype=torch.float32))[:, None]
        start_deltas = turn @ d0[chosen]
        start_root = torch.as_tensor(roots[0], dtype=torch.float32)
    report_progress(progress, 0.15)
    return start_deltas, start_root, float(yaws[best % len(yaws)]), chosen


FACINGS = ("left", "right", "toward", "away")  # where the subject's head points in the video
_FACING_SHARE = 0.5  # of the forward axis that must point that way in the camera's frame


def _facing_barred(facing: str | None, yaws: np.ndarray, trunk0: np.ndarray,
                   camera_c: PinholeCamera) -> np.ndarray:
    """(P,Y) bool: the hypotheses (start p turned to heading y) whose body at the first frame does not
    face as the user said (`facing` None: none barred; a silhouette cannot tell its front from its
    back: a bison's massive forequarters look like a bull's rump). `trunk0` (P,3,3): each start's
    trunk turn at its first frame."""
    barred = np.zeros((len(trunk0), len(yaws)), bool)
    if facing is None:
        return barred
    forward = np.einsum("yab,pbc,c->pya", yaw_matrix(yaws), trunk0, np.array([0.0, -1.0, 0.0]))
    seen = forward @ camera_c.rotation.T  # in the camera's frame: x right, z away
    x, z = seen[..., 0], seen[..., 2]
    along = {"right": x, "left": -x, "toward": -z, "away": z}[facing]
    barred = along < _FACING_SHARE
    return np.zeros_like(barred) if barred.all() else barred


def _rig_to_move(canon_rig: Rig, lowest: np.ndarray) -> tuple[Rig, list[int], np.ndarray]:
    """The canonical rig the fit moves, with each branch outside the body (a foot control on the floor,
    a pole target) hung from the joint it follows (generate/rig_roles.py); those branches' tops; and the
    joints that stand on the ground: each leg's planted joint where the legs are found, else the rig's
    lowest joints (`lowest`). A separate root would otherwise stay at its rest offset from the body (the
    Quaternius animals' hooves hang from such foot controls, and would float beside the legs), and a pole
    target on the floor would stand in for the feet the ground term keeps there."""
    try:
        roles = detect_roles(canon_rig)
    except RoleError:
        return canon_rig, [], lowest
    feet = np.asarray(planting_joints(roles), dtype=np.int64)
    tops = sorted(top for top in roles.followers if top < roles.joint_count)
    return (followers_attached(roles, tips=False) if tops else canon_rig), tops, feet


def _with_followers(rig: Rig, frame: CanonicalFrame, body: Body, tops: list[int], deltas_c: np.ndarray,
                    root_c: np.ndarray, motion: Motion) -> Motion:
    """The fitted motion with the follower branches where the fit carried them: their tops take the
    translations that put them there on the user's rig (no other joint moves off its parent)."""
    with torch.no_grad():
        heads, _ = body.positions(torch.as_tensor(deltas_c, dtype=torch.float32),
                                  torch.as_tensor(root_c, dtype=torch.float32))
    world = np.zeros(deltas_c.shape[:2] + (4, 4))
    world[..., :3, :3] = frame.from_canonical_rotations(deltas_c) @ rig.rest_rotations[None]
    world[..., :3, 3] = frame.from_canonical_points(heads.numpy().astype(np.float64))
    world[..., 3, 3] = 1.0
    placed = motion_from_world_transforms(rig, world, motion.fps, tolerance=0.0)
    moved = np.zeros((motion.frame_count, rig.joint_count, 3))
    if placed.translations is not None:
        moved[:, tops] = placed.translations[:, tops]
    return Motion(motion.fps, motion.root_positions, motion.rotations, moved)


def _on_user_rig(rig: Rig, frame: CanonicalFrame, deltas_c: np.ndarray, root_c: np.ndarray,
                 camera_fit: PinholeCamera, fps: float) -> tuple[Motion, PinholeCamera]:
    """The fitted canonical deltas and root path as a motion of the user's rig, and the camera in
    its armature space."""
    deltas_arm = frame.from_canonical_rotations(deltas_c)
    root_arm = frame.from_canonical_points(root_c)
    motion = motion_from_world_deltas(rig, matrix_to_quat(deltas_arm), root_arm, fps)
    return motion, camera_fit.transformed(frame.inverse_matrix())


def _reprojection_px(projected: np.ndarray, ev: FitEvidence) -> np.ndarray:
    """(T,) mean pixel error of the joints with evidence (NaN for a frame with none)."""
    error = np.linalg.norm(projected - ev.points, axis=-1)
    seen = ev.weights > 0
    with np.errstate(invalid="ignore"):
        return np.where(seen.any(1), (error * seen).sum(1) / np.maximum(seen.sum(1), 1), np.nan)


def _align_start(body: Body, deltas: np.ndarray, root: np.ndarray,
                 camera: PinholeCamera) -> tuple[np.ndarray, np.ndarray, PinholeCamera]:
    """Turn about the vertical and shift along the ground, camera included, so that frame 0 has the
    root at its rest ground position facing the rig's forward (−Y)."""
    yaw0 = float(heading(deltas[:, body.main])[0])
    turn = yaw_matrix(-yaw0)
    similarity = np.eye(4)
    similarity[:3, :3] = turn
    moved = root[0] @ turn.T
    similarity[:2, 3] = body.rest_heads[body.main, :2] - moved[:2]
    deltas = turn @ deltas  # the body turns, its rest does not
    root = root @ turn.T + similarity[:3, 3]
    return deltas, root, camera.transformed(similarity)
