"""Training the per-rig inverse-dynamics model (models/video/idm.py) on renders of the rig itself.

The video-prior paper's recipe on the user's own rig, in minutes on the CPU:

1. poses — plausible poses sampled from the pose prior (models/pose/sampler.py, ViPS) for this
   very rig when its weights load (`prior_share`), mixed with poses drawn uniformly inside joint
   limits (the prior's limits for the rig, else wide defaults), each scaled towards rest by a
   random share, for coverage; non-deforming joints (floor roots, IK targets) held at rest
   relative to their parents, since no silhouette shows them; each turned to a random heading;
2. renders — the rig's skinned mesh (a capsule proxy when there is none) posed by linear blend
   skinning in the canonical frame and seen from a random camera around it (any azimuth, −5…45°
   elevation, 20…70° field of view, the subject anywhere from filling the view to a third of
   it); only the silhouette is drawn, straight into the square crop around its bounding box
   (kirin_addon/core/raster.coverage, 2× supersampled), with the box jittered a little as a
   segmentation would;
3. targets — every joint's world delta seen from the crop camera (C·D, 6D) and the root's place in
   the crop (u, v, log extent), exactly the quantities `IDM.to_motion` reads;
4. a few thousand crops, AdamW with a cosine schedule, loss = 6D regression + joint positions in
   the camera's axes (forward kinematics of the predicted deltas, body sizes) + root terms; the
   silhouettes are dilated or eroded at random in each batch. A time limit stops training early.

Measured (2 busy cores, one torch thread; Fox, 24 joints, 576 triangles): 3000 crops of 64² —
poses 11 s (half from the prior), renders 6 s, 24 epochs of the network 104 s: 122 s in all (30
epochs took 167 s for the same benchmark PCK within 0.01: benchmarks/bench_video.py).
The report in `idm.card["report"]` has the held-out joint error against the rest pose seen from
the front and the rest pose turned to the true orientation.

`load_or_train_idm` keeps trained models under ~/.cache/kirin/idm/<rig key>.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ...kirin_addon.core.canonical import CanonicalFrame
from ...kirin_addon.core.raster import coverage
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.rotations import matrix_to_6d, rotvec_to_matrix, yaw_matrix
from ...kirin_addon.core.skinning import SkinnedMesh, linear_blend_skinning
from ...kirin_addon.library.procedural import capsule_mesh
from ...kirin_addon.pose.space import JointLimits, Skeleton, random_valid_poses
from .. import geometry
from .idm import (
    CROP_MARGIN,
    IDM,
    IDMConfig,
    IDMNet,
    default_frame,
    front_view_rotation,
    idm_cache_dir,
    ray_alignment,
    rig_key,
)

Progress = Callable[[float, str], None]


@dataclass
class IDMTrainConfig:
    samples: int = 3000  # rendered crops (5 % held out for the report)
    epochs: int = 24
    batch: int = 64
    lr: float = 2e-3
    weight_decay: float = 1e-4
    seed: int = 0
    prior_share: float = 0.6  # share of the poses from the pose prior (when it loads)
    prior: bool = True  # use the pose prior at all
    elevation_deg: tuple[float, float] = (-5.0, 45.0)
    fov_deg: tuple[float, float] = (20.0, 70.0)
    distance: tuple[float, float] = (1.0, 3.0)  # × the distance at which the subject fills the view
    box_jitter: float = 0.04  # crop box centre and size jitter, in crop sides
    position_weight: float = 2.0
    root_weight: float = 1.0
    morphology: float = 0.3  # probability of a random dilation or erosion of a training crop
    supersample: int = 2
    threads: int = 1
    time_limit: float | None = 170.0  # seconds of training (rendering excluded); None: no limit


@dataclass
class TrainingSet:
    crops: np.ndarray  # (N,S,S) float32
    deltas: np.ndarray  # (N,J,6) world deltas seen from the crop camera (C·D)
    root: np.ndarray  # (N,3) u, v, log extent
    positions: np.ndarray  # (N,J,3) joint positions in the crop camera's axes, root at the origin

    def __len__(self) -> int:
        return len(self.crops)


# ----------------------------------------------------------------------------- poses
def training_poses(rig: Rig, mesh: SkinnedMesh | None, frame: CanonicalFrame, count: int,
                   rng: np.random.Generator, config: IDMTrainConfig) -> tuple[np.ndarray, dict]:
    """(count,J,3,3) heading-frame poses: prior samples and random valid poses; and what was used."""
    skeleton = Skeleton.from_rig(rig.transformed(frame.matrix()))
    limits = JointLimits.default(skeleton)
    from_prior = np.zeros((0, rig.joint_count, 3, 3))
    info: dict = {"prior": 0, "random": 0}
    wanted = int(round(count * config.prior_share)) if config.prior else 0
    if wanted:
        try:
            from ...kirin_addon.pose.pipeline import PosePipeline
            from ..pose.sampler import PosePrior

            prior = PosePipeline(PosePrior.load())
            posed = prior.learn_rig(prior.prepare(rig, mesh, frame=frame))
            limits = posed.limits
            chunks = [prior.sample(posed, min(512, wanted - start), seed=config.seed + start)
                      for start in range(0, wanted, 512)]
            from_prior = np.concatenate(chunks)
        except Exception as exc:  # noqa: BLE001 - any failure of the optional prior falls back
            info["prior_error"] = f"{type(exc).__name__}: {exc}"
    random = random_valid_poses(skeleton, limits, count - len(from_prior), rng)
    # Random valid poses go from gentle to the limits, so the rest neighbourhood is well covered.
    local = skeleton.local_rotations(random)
    local = _scale_rotations(local, rng.uniform(0.0, 1.0, (len(random), 1, 1, 1)))
    random = skeleton.from_local(local)
    info.update(prior=len(from_prior), random=len(random))
    poses = np.concatenate([from_prior, random]) if len(from_prior) else random
    # Non-deforming joints (a floor root, IK targets) turn nothing the camera sees: held at rest
    # relative to their parents, so that the main root's orientation is the body's.
    local = skeleton.local_rotations(poses)
    deform = np.asarray(rig.deform, bool)
    if deform.any():
        local[:, ~deform] = np.eye(3)
    return skeleton.from_local(local)[rng.permutation(len(poses))], info


def _scale_rotations(rotations: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """Rotations (…,3,3) with their angle scaled by `amount` (same axis)."""
    from scipy.spatial.transform import Rotation

    flat = rotations.reshape(-1, 3, 3)
    rotvec = Rotation.from_matrix(flat).as_rotvec().reshape(rotations.shape[:-2] + (3,))
    return rotvec_to_matrix(rotvec * amount[..., 0])


# ----------------------------------------------------------------------------- renders
def render_training_set(
    rig: Rig,
    mesh: SkinnedMesh,
    frame: CanonicalFrame,
    poses: np.ndarray,
    rng: np.random.Generator,
    config: IDMTrainConfig,
    idm_config: IDMConfig,
) -> TrainingSet:
    """Silhouette crops of the rig in `poses` (N,J,3,3 heading frame) from random cameras."""
    canon = rig.transformed(frame.matrix())
    skeleton = Skeleton.from_rig(canon)
    vertices = frame.to_canonical_points(mesh.vertices)
    inverse_rest = np.linalg.inv(canon.rest)
    count, size = len(poses), idm_config.crop
    crops = np.zeros((count, size, size), np.float32)
    targets = np.zeros((count, rig.joint_count, 6))
    root = np.zeros((count, 3))
    positions = np.zeros((count, rig.joint_count, 3))
    main = canon.main_root
    for start in range(0, count, 128):
        chunk = slice(start, min(start + 128, count))
        n = chunk.stop - chunk.start
        yaw = rng.uniform(-np.pi, np.pi, n)
        deltas = yaw_matrix(yaw)[:, None] @ poses[chunk]
        pose = np.zeros((n, rig.joint_count, 4, 4))
        pose[..., :3, :3] = deltas @ canon.rest_rotations[None]
        pose[..., :3, 3] = skeleton.positions(deltas, canon.heads[main])
        pose[..., 3, 3] = 1.0
        skinned = linear_blend_skinning(vertices, mesh.joint_indices, mesh.joint_weights, pose @ inverse_rest)
        crops[chunk], crop_camera, root[chunk] = _render_chunk(skinned, mesh.triangles, pose[:, main, :3, 3],
                                                               rng, config, size)
        seen = crop_camera[:, None] @ deltas
        targets[chunk] = matrix_to_6d(seen)
        positions[chunk] = skeleton.positions(seen)
    positions -= positions[:, main:main + 1]
    return TrainingSet(crops, targets.astype(np.float32), root.astype(np.float32),
                       positions.astype(np.float32))


def _render_chunk(vertices: np.ndarray, triangles: np.ndarray, root_position: np.ndarray,
                  rng: np.random.Generator, config: IDMTrainConfig, size: int):
    """Crops (n,S,S), crop cameras (n,3,3: world → camera looking through the crop's centre) and
    root targets (n,3) of posed meshes (n,V,3)."""
    n = len(vertices)
    lo, hi = vertices.min(axis=1), vertices.max(axis=1)
    centre = (lo + hi) / 2
    radius = np.maximum(np.linalg.norm(hi - lo, axis=1) / 2, 1e-6)
    azimuth = rng.uniform(0, 2 * np.pi, n)
    elevation = np.radians(rng.uniform(*config.elevation_deg, n))
    fov = np.radians(rng.uniform(*config.fov_deg, n))
    distance = radius / np.sin(fov / 2) * rng.uniform(*config.distance, n)
    direction = np.stack([np.cos(elevation) * np.cos(azimuth), np.cos(elevation) * np.sin(azimuth),
                          np.sin(elevation)], axis=1)
    target = centre + rng.normal(0.0, 1.0, (n, 3)) * 0.15 * radius[:, None]
    forward = -direction
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right, axis=1, keepdims=True)
    rotation = np.stack([right, np.cross(forward, right), forward], axis=1)  # (n,3,3)
    translation = -np.einsum("nab,nb->na", rotation, target + direction * distance[:, None])
    focal = 256.0 / np.tan(fov / 2)
    cam = np.einsum("nab,nvb->nva", rotation, vertices) + translation[:, None]
    pixels = focal[:, None, None] * cam[..., :2] / cam[..., 2:3]
    box_lo, box_hi = pixels.min(axis=1), pixels.max(axis=1)
    side = np.max(box_hi - box_lo, axis=1) * CROP_MARGIN * (1.0 + rng.uniform(-1, 1, n) * config.box_jitter)
    crop_centre = (box_lo + box_hi) / 2 + rng.uniform(-1, 1, (n, 2)) * config.box_jitter * side[:, None]
    local = (pixels - crop_centre[:, None] + side[:, None, None] / 2) * (size / side)[:, None, None]
    crops = coverage(local, triangles, (size, size), config.supersample)
    align = ray_alignment(crop_centre, np.stack([focal, focal], axis=1), np.zeros(2))
    root_cam = np.einsum("nab,nb->na", rotation, root_position) + translation
    uv = (focal[:, None] * root_cam[:, :2] / root_cam[:, 2:3] - crop_centre) / (side[:, None] / 2)
    extent = np.log(side * root_cam[:, 2] / focal)
    return crops, align @ rotation, np.concatenate([uv, extent[:, None]], axis=1)


# ----------------------------------------------------------------------------- training
def _augment(crops: torch.Tensor, probability: float, generator: torch.Generator) -> torch.Tensor:
    if probability <= 0:
        return crops
    choice = torch.rand(crops.shape[0], generator=generator)
    dilated = F.max_pool2d(crops, 3, stride=1, padding=1)
    eroded = -F.max_pool2d(-crops, 3, stride=1, padding=1)
    out = torch.where((choice < probability / 2)[:, None, None, None], dilated, crops)
    erode = (choice >= probability / 2) & (choice < probability)
    return torch.where(erode[:, None, None, None], eroded, out)


class _Kinematics:
    """Torch forward kinematics of heading-frame deltas (root at the origin)."""

    def __init__(self, skeleton: Skeleton):
        self.parents = torch.from_numpy(np.maximum(skeleton.parents, 0))
        self.offsets = torch.from_numpy(skeleton.offsets).float()
        self.paths = torch.from_numpy(skeleton.paths).float()
        start = skeleton.root_heads
        self.start = torch.from_numpy(start - start[skeleton.main_root]).float()

    def __call__(self, deltas: torch.Tensor) -> torch.Tensor:
        return self.start + geometry.forward_kinematics(deltas, self.parents, self.offsets, self.paths)


def losses(net_out: dict[str, torch.Tensor], batch: dict[str, torch.Tensor], kinematics: _Kinematics,
           config: IDMTrainConfig) -> tuple[torch.Tensor, dict[str, float]]:
    rotation = F.mse_loss(net_out["deltas"], batch["deltas"])
    predicted = kinematics(geometry.sixd_to_matrix(net_out["deltas"]))
    position = (predicted - batch["positions"]).norm(dim=-1).mean()
    root = F.mse_loss(net_out["root"], batch["root"])
    total = rotation + config.position_weight * position + config.root_weight * root
    return total, {"rotation": rotation.item(), "position": position.item(), "root": root.item()}


def train_idm(
    rig: Rig,
    mesh: SkinnedMesh | None = None,
    config: IDMTrainConfig | None = None,
    idm_config: IDMConfig | None = None,
    frame: CanonicalFrame | None = None,
    progress: Progress | None = None,
    poses: np.ndarray | None = None,
) -> IDM:
    """Render and train an IDM for `rig` (its `mesh`, else a capsule proxy). `poses` (N,J,3,3
    heading frame, canonical) replaces the sampled training poses. The report is in `idm.card`."""
    config = config or IDMTrainConfig()
    idm_config = idm_config or IDMConfig()
    rig.validate()
    mesh = capsule_mesh(rig) if mesh is None else mesh
    frame = frame or default_frame(rig, mesh)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(max(1, config.threads))
    try:
        return _train(rig, mesh, frame, config, idm_config, progress, poses)
    finally:
        torch.set_num_threads(previous_threads)


def _train(rig, mesh, frame, config, idm_config, progress, poses) -> IDM:
    report = progress or (lambda _f, _m: None)
    rng = np.random.default_rng(config.seed)
    torch.manual_seed(config.seed)
    started = time.perf_counter()
    report(0.0, "sampling poses")
    if poses is None:
        poses, pose_info = training_poses(rig, mesh, frame, config.samples, rng, config)
    else:
        pose_info = {"given": len(poses)}
    pose_seconds = time.perf_counter() - started
    report(0.05, "rendering silhouettes")
    data = render_training_set(rig, mesh, frame, poses, rng, config, idm_config)
    render_seconds = time.perf_counter() - started - pose_seconds
    held = max(1, len(data) // 20) if len(data) >= 40 else 0
    tensors = {k: torch.from_numpy(np.ascontiguousarray(getattr(data, k))) for k in
               ("crops", "deltas", "root", "positions")}
    tensors["crops"] = tensors["crops"][:, None]
    train = {k: v[held:] for k, v in tensors.items()}
    valid = {k: v[:held] for k, v in tensors.items()}

    net = IDMNet(rig.joint_count, idm_config)
    skeleton = Skeleton.from_rig(rig.transformed(frame.matrix()))
    kinematics = _Kinematics(skeleton)
    optimiser = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    count = len(train["crops"])
    steps_per_epoch = max(1, math.ceil(count / config.batch))
    total_steps = steps_per_epoch * config.epochs
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total_steps) / total_steps)))
    generator = torch.Generator().manual_seed(config.seed)
    train_started = time.perf_counter()
    epochs_done, history = 0, []
    stopped_early = False
    for epoch in range(config.epochs):
        net.train()
        order = torch.randperm(count, generator=generator)
        running = []
        for step in range(steps_per_epoch):
            index = order[step * config.batch:(step + 1) * config.batch]
            batch = {k: v[index] for k, v in train.items()}
            batch["crops"] = _augment(batch["crops"], config.morphology, generator)
            loss, parts = losses(net(batch["crops"]), batch, kinematics, config)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            running.append(parts["position"])
        epochs_done = epoch + 1
        history.append(float(np.mean(running)))
        elapsed = time.perf_counter() - train_started
        report(0.1 + 0.9 * epochs_done / config.epochs, f"epoch {epochs_done}/{config.epochs}")
        if config.time_limit is not None and elapsed > config.time_limit and epochs_done < config.epochs:
            stopped_early = True
            break
    train_seconds = time.perf_counter() - train_started
    net.eval()
    result = {"samples": len(data), "held_out": held, "poses": pose_info, "epochs": epochs_done,
              "stopped_early": stopped_early, "pose_seconds": round(pose_seconds, 2),
              "render_seconds": round(render_seconds, 2), "train_seconds": round(train_seconds, 2),
              "seconds": round(time.perf_counter() - started, 2), "train_position_error": history}
    if held:
        with torch.inference_mode():
            out = net(valid["crops"])
            predicted = kinematics(geometry.sixd_to_matrix(out["deltas"]))
            # Baselines: the rest pose seen from the front (what no model gives), and the rest pose
            # turned like the true root (what knowing only the orientation gives).
            front = torch.from_numpy(front_view_rotation()).float()
            rest = kinematics(front.expand(held, rig.joint_count, 3, 3))
            root_turn = geometry.sixd_to_matrix(valid["deltas"][:, rig.main_root])
            oriented = kinematics(root_turn[:, None].expand(held, rig.joint_count, 3, 3))
            for key, value in (("position", predicted), ("rest", rest), ("oriented_rest", oriented)):
                result[f"held_out_{key}_error"] = float((value - valid["positions"]).norm(dim=-1).mean())
            result["held_out_root_error"] = float(F.mse_loss(out["root"], valid["root"]))
    card = {"train": asdict(config), "report": result}
    return IDM(net, rig, frame, idm_config, json.loads(json.dumps(card)))


def load_or_train_idm(
    rig: Rig,
    mesh: SkinnedMesh | None = None,
    config: IDMTrainConfig | None = None,
    idm_config: IDMConfig | None = None,
    frame: CanonicalFrame | None = None,
    cache_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> IDM:
    """The rig's IDM from the cache (keyed by rig, mesh and configs), trained and saved on a miss."""
    config = config or IDMTrainConfig()
    idm_config = idm_config or IDMConfig()
    frame = frame or default_frame(rig, mesh)
    extra = json.dumps([asdict(config), frame.rotation.tolist(), frame.scale, frame.origin.tolist()])
    key = rig_key(rig, mesh, idm_config, extra)
    folder = (Path(cache_dir) / key) if cache_dir is not None else idm_cache_dir(key)
    if (folder / "idm.safetensors").exists():
        try:
            return IDM.load(folder, rig)
        except (ValueError, OSError):
            pass  # a stale or broken file is retrained
    idm = train_idm(rig, mesh, config, idm_config, frame, progress)
    idm.card["key"] = key
    idm.save(folder)
    return idm
