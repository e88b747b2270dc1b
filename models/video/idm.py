"""The per-rig inverse-dynamics model (the video-prior paper): silhouette crop → pose.

A small CNN, trained for one rig on renders of that rig (models/video/idm_train.py), reads a square crop
of the subject's silhouette — centred on the mask's bounding box, the box's longer side ×
`CROP_MARGIN` scaled to `crop` pixels — and predicts, per frame:

- every joint's world delta D_j = R_world · R_rest⁻¹ (canonical axes: +Z up, −Y forward, unit body
  size) seen from the *crop camera*: C·D_j (6D), C the camera turned to look straight through the
  crop's centre (x right, y down, z forward). The main root's entry is the root orientation
  relative to the camera; the others are the pose in the frame the image shows it in, so a leg
  swung towards the image's left is a rotation about the camera's axes — what a CNN can read off
  a silhouette. (Deltas in the creature's heading frame plus a separate heading, the first design,
  stayed at the rest pose's error in CPU-budget trials: the pose had to be un-rotated by a heading
  the network was still guessing.) Turning to the crop's ray makes the targets independent of
  where the subject is in the frame;
- where the root is: its pixel offset from the crop's centre in half crop sides (u, v), and
  log(E) with E = crop side (px) × root depth / focal — the crop's extent in body sizes at the
  root's depth. With the camera's focal length and the rig's size, that is the root's distance.

`IDM.predict` turns a silhouette sequence into a `Motion` of the user's rig: crops, one batched
network call, a running median (isolated front/back flips of an ambiguous silhouette) and Gaussian
temporal smoothing of every output, then D_j = Cᵀ·(C·D_j) and the inverse-bind correction
(motion_from_world_deltas). With the video's camera (kirin_addon/core/camera.py's PinholeCamera, in the
rig's armature space) the root lands where the video has it; without, `default_camera` — the one
the sequence fit estimates — is assumed.

Weights are one safetensors file whose metadata holds the JSON card (config, rig key, training
report); `idm_cache_dir` is where trained models are kept per rig (~/.cache/kirin/idm/<key>).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ...kirin_addon.core.camera import PinholeCamera
from ...kirin_addon.core.canonical import CanonicalFrame, detect_canonical_frame
from ...kirin_addon.core.motion import Motion, forward_kinematics, motion_from_world_deltas
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.rotations import matrix_to_6d, matrix_to_quat, sixd_to_matrix
from ...kirin_addon.core.skinning import SkinnedMesh
from ...kirin_addon.pose.space import Skeleton

CROP_MARGIN = 1.15  # crop side = longer side of the mask's bounding box × this
FORMAT_VERSION = 1
WEIGHTS_FILE = "idm.safetensors"


class IDMError(ValueError):
    """Bad input to the inverse-dynamics model; the message is user-facing."""


@dataclass
class IDMConfig:
    crop: int = 64  # input crop side (pixels)
    channels: tuple[int, ...] = (16, 32, 64, 128)  # conv widths, each level halves the crop
    hidden: int = 256
    norm: str = "batch"  # "batch" or "group" normalisation after each strided conv
    smoothing: float = 1.0  # Gaussian sigma in frames for the temporal smoothing (0: none)
    median: int = 5  # running median window in frames before it (1: none)
    mask_threshold: float = 0.5  # silhouette values at or above this are the subject


def rig_key(rig: Rig, mesh: SkinnedMesh | None, config: IDMConfig, extra: str = "") -> str:
    """A short hash of everything a trained IDM depends on: the rig, its mesh and the network."""
    digest = hashlib.sha256()
    digest.update(json.dumps([FORMAT_VERSION, rig.names, asdict(config), extra]).encode())
    for array in (rig.parents, np.round(rig.rest, 5), np.round(rig.tails, 5)):
        digest.update(np.ascontiguousarray(array).tobytes())
    if mesh is not None:
        for array in (np.round(mesh.vertices, 5), mesh.triangles, mesh.joint_indices,
                      np.round(mesh.joint_weights, 4)):
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:20]


def idm_cache_dir(key: str | None = None) -> Path:
    """~/.cache/kirin/idm (or $KIRIN_CACHE/idm), or the folder of one rig's model."""
    root = Path(os.environ.get("KIRIN_CACHE", Path.home() / ".cache" / "kirin")) / "idm"
    return root if key is None else root / key


# ----------------------------------------------------------------------------- network
class IDMNet(nn.Module):
    """Conv pyramid (3×3 stride 2, then 3×3) → MLP → camera-seen deltas (J,6) and root (3)."""

    def __init__(self, joints: int, config: IDMConfig):
        super().__init__()
        self.joints = joints
        layers: list[nn.Module] = []
        previous = 1
        for width in config.channels:
            norm = nn.BatchNorm2d(width) if config.norm == "batch" else nn.GroupNorm(4, width)
            layers += [nn.Conv2d(previous, width, 3, stride=2, padding=1), norm, nn.SiLU(),
                       nn.Conv2d(width, width, 3, padding=1), nn.SiLU()]
            previous = width
        self.features = nn.Sequential(*layers)
        side = config.crop // (2 ** len(config.channels))
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(previous * side * side, config.hidden), nn.SiLU(),
            nn.Linear(config.hidden, config.hidden), nn.SiLU(),
            nn.Linear(config.hidden, joints * 6 + 3),
        )
        identity = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0])
        with torch.no_grad():  # start at the rest pose, seen from the front
            last = self.head[-1]
            last.weight.mul_(0.1)
            last.bias.zero_()
            last.bias[: joints * 6] = identity.repeat(joints)

    def forward(self, crops: torch.Tensor) -> dict[str, torch.Tensor]:
        """crops (B,1,S,S) → deltas (B,J,6) seen from the crop camera, root (B,3) = (u, v, log E)."""
        out = self.head(self.features(crops))
        count = self.joints * 6
        return {"deltas": out[:, :count].reshape(-1, self.joints, 6), "root": out[:, count:]}


# ----------------------------------------------------------------------------- crops
def silhouette_boxes(silhouettes: np.ndarray, threshold: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Bounding boxes (T,4) = x0, y0, x1, y1 (pixel edges, mask coordinates) of each frame's mask,
    and which frames have one (T,) bool."""
    masks = np.asarray(silhouettes) >= threshold
    rows, cols = masks.any(axis=2), masks.any(axis=1)
    valid = rows.any(axis=1)
    height, width = masks.shape[1:]
    y0 = np.argmax(rows, axis=1)
    y1 = height - np.argmax(rows[:, ::-1], axis=1)
    x0 = np.argmax(cols, axis=1)
    x1 = width - np.argmax(cols[:, ::-1], axis=1)
    return np.stack([x0, y0, x1, y1], axis=1).astype(np.float64), valid


def crop_squares(boxes: np.ndarray, scale: tuple[float, float] = (1.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """Square crops around boxes (mask coordinates): centres (T,2) and sides (T,) in *image* pixels
    (mask pixels × `scale` = (image W / mask w, image H / mask h))."""
    sx, sy = scale
    centre = np.stack([(boxes[:, 0] + boxes[:, 2]) / 2 * sx, (boxes[:, 1] + boxes[:, 3]) / 2 * sy], axis=1)
    side = np.maximum((boxes[:, 2] - boxes[:, 0]) * sx, (boxes[:, 3] - boxes[:, 1]) * sy) * CROP_MARGIN
    return centre, np.maximum(side, 1e-6)


def sample_crops(silhouettes: np.ndarray, centres: np.ndarray, sides: np.ndarray, crop: int,
                 scale: tuple[float, float] = (1.0, 1.0), supersample: int = 2) -> np.ndarray:
    """(T,crop,crop) float32: each frame's square (centre, side in image pixels) resampled from the
    soft mask (bilinear, `supersample`² samples per output pixel, zero outside)."""
    masks = np.asarray(silhouettes, np.float32)
    frames, height, width = masks.shape
    sx, sy = scale
    s = int(supersample)
    steps = (np.arange(crop * s) + 0.5) / (crop * s) - 0.5  # (N,) in crop sides
    xs = (centres[:, 0, None] + steps[None] * sides[:, None]) / sx - 0.5  # (T,N) mask index coords
    ys = (centres[:, 1, None] + steps[None] * sides[:, None]) / sy - 0.5
    padded = np.zeros((frames, height + 2, width + 2), np.float32)
    padded[:, 1:-1, 1:-1] = masks
    xs, ys = np.clip(xs + 1, 0, width + 0.999), np.clip(ys + 1, 0, height + 0.999)
    x0, y0 = np.floor(xs).astype(np.int64), np.floor(ys).astype(np.int64)
    x1, y1 = np.minimum(x0 + 1, width + 1), np.minimum(y0 + 1, height + 1)
    fx, fy = (xs - x0)[:, None, :], (ys - y0)[:, :, None]
    t = np.arange(frames)[:, None, None]
    value = (padded[t, y0[:, :, None], x0[:, None, :]] * (1 - fx) * (1 - fy)
             + padded[t, y0[:, :, None], x1[:, None, :]] * fx * (1 - fy)
             + padded[t, y1[:, :, None], x0[:, None, :]] * (1 - fx) * fy
             + padded[t, y1[:, :, None], x1[:, None, :]] * fx * fy)
    return value.reshape(frames, crop, s, crop, s).mean(axis=(2, 4)).astype(np.float32)


def crop_sequence(silhouettes: np.ndarray, crop: int, image_size: tuple[int, int] | None = None,
                  threshold: float = 0.5):
    """Crops (T,crop,crop) of a silhouette sequence (T,h,w), their centres (T,2) and sides (T,) in
    image pixels, for each frame the frame whose mask it uses (T,) — frames with an empty mask use
    the nearest frame that has one — and the image size (W,H) (default the masks' own)."""
    silhouettes = np.asarray(silhouettes)
    if silhouettes.ndim != 3 or silhouettes.shape[0] == 0:
        raise IDMError("Silhouettes must be a non-empty sequence of masks (frames, height, width).")
    frames, height, width = silhouettes.shape
    size = (width, height) if image_size is None else (int(image_size[0]), int(image_size[1]))
    scale = (size[0] / width, size[1] / height)
    boxes, valid = silhouette_boxes(silhouettes, threshold)
    if not valid.any():
        raise IDMError("No subject in the silhouettes: every mask is empty.")
    index = np.arange(frames)
    good = np.flatnonzero(valid)
    source = good[np.argmin(np.abs(index[:, None] - good[None]), axis=1)]
    centres, sides = crop_squares(boxes[source], scale)
    crops = sample_crops(silhouettes[source].astype(np.float32), centres, sides, crop, scale)
    return crops, centres, sides, source, size


# ----------------------------------------------------------------------------- camera geometry
def camera_intrinsics(camera: PinholeCamera) -> tuple[np.ndarray, np.ndarray]:
    """(fx, fy) and (cx, cy) of a pinhole camera."""
    focal = np.broadcast_to(np.asarray(camera.focal, np.float64), (2,)).copy()
    return focal, np.asarray(camera.center, np.float64).reshape(2)


def ray_alignment(pixels: np.ndarray, focal: np.ndarray, center: np.ndarray) -> np.ndarray:
    """(…,3,3) the smallest rotation taking each pixel's viewing ray (camera axes) onto +z: a
    camera turned by it looks straight through that pixel."""
    d = np.concatenate([(np.asarray(pixels) - center) / focal, np.ones(np.shape(pixels)[:-1] + (1,))], -1)
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(d, z)
    sine = np.linalg.norm(axis, axis=-1, keepdims=True)
    cosine = d[..., 2:3]
    k = axis / np.maximum(sine, 1e-12)
    kx = np.zeros(d.shape[:-1] + (3, 3))
    kx[..., 0, 1], kx[..., 0, 2] = -k[..., 2], k[..., 1]
    kx[..., 1, 0], kx[..., 1, 2] = k[..., 2], -k[..., 0]
    kx[..., 2, 0], kx[..., 2, 1] = -k[..., 1], k[..., 0]
    eye = np.broadcast_to(np.eye(3), kx.shape)
    return eye + sine[..., None] * kx + (1 - cosine[..., None]) * (kx @ kx)


def canonical_camera(camera, frame: CanonicalFrame) -> tuple[np.ndarray, np.ndarray]:
    """The camera's world → camera rotation and translation for canonical-frame points
    (x_c = s·R·(x − o)), translations in canonical units (body sizes)."""
    seen = camera.transformed(frame.matrix())
    return seen.rotation, seen.translation


# ----------------------------------------------------------------------------- the model
@dataclass
class IDM:
    """A trained inverse-dynamics model for one rig."""

    net: IDMNet
    rig: Rig
    frame: CanonicalFrame
    config: IDMConfig = field(default_factory=IDMConfig)
    card: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.net.eval()
        self.skeleton = Skeleton.from_rig(self.rig.transformed(self.frame.matrix()))

    # .............................................................. raw outputs
    def run(self, crops: np.ndarray, batch: int = 256) -> dict[str, np.ndarray]:
        """Network outputs for crops (N,S,S): deltas (N,J,6) seen from the crop camera, root (N,3)."""
        outputs: dict[str, list[np.ndarray]] = {"deltas": [], "root": []}
        with torch.inference_mode():
            for start in range(0, len(crops), batch):
                x = torch.from_numpy(np.ascontiguousarray(crops[start:start + batch], np.float32))[:, None]
                for key, value in self.net(x).items():
                    outputs[key].append(value.double().numpy())
        return {k: np.concatenate(v) if v else np.zeros((0,)) for k, v in outputs.items()}

    def predict_poses(self, crops: np.ndarray) -> np.ndarray:
        """(N,J,3,3) world deltas seen from the crop camera (C·D) of single crops, unsmoothed."""
        return sixd_to_matrix(self.run(crops)["deltas"])

    # .............................................................. sequences
    def predict(
        self,
        silhouettes: np.ndarray,
        camera=None,
        image_size: tuple[int, int] | None = None,
        fps: float = 30.0,
        smoothing: float | None = None,
    ) -> Motion:
        """A motion of the rig from silhouettes (T,h,w) in [0,1] (bool is fine).

        `camera`: the video's PinholeCamera in the rig's armature space (pixels of an image of
        `image_size` = (W,H), default the silhouettes' own size); None assumes `default_camera`
        (the camera the video fit estimates: kirin_addon/video/fit_start.py). `smoothing`: Gaussian
        sigma in frames (default the config's)."""
        crops, centres, sides, _, size = crop_sequence(silhouettes, self.config.crop, image_size,
                                                        self.config.mask_threshold)
        frames = len(crops)
        out = self.run(crops)
        if self.config.median > 1 and frames >= self.config.median:
            out = {k: _running_median(v, self.config.median) for k, v in out.items()}
        sigma = self.config.smoothing if smoothing is None else smoothing
        if sigma > 0 and frames > 1:
            out = {k: _gaussian_smooth(v, sigma) for k, v in out.items()}
            # The crop geometry is smoothed the same way so that the root follows a steady box.
            centres, sides = _gaussian_smooth(centres, sigma), _gaussian_smooth(sides, sigma)
        if camera is None:
            camera = default_camera(self.rig, self.frame, size)
        return self.to_motion(out, camera, centres, sides, fps)

    def outputs_for(self, motion: Motion, camera, centres: np.ndarray,
                    sides: np.ndarray) -> dict[str, np.ndarray]:
        """What a perfect network would output for `motion` filmed by `camera` with these crops
        (the inverse of `to_motion`; for checks and oracle baselines)."""
        focal, center = camera_intrinsics(camera)
        rotation, translation = canonical_camera(camera, self.frame)
        crop_camera = ray_alignment(centres, focal, center) @ rotation
        world = forward_kinematics(self.rig, motion)
        rest_inverse = np.swapaxes(self.rig.rest_rotations, -1, -2)
        deltas = self.frame.to_canonical_rotations(world[..., :3, :3] @ rest_inverse)
        root = self.frame.to_canonical_points(world[:, self.rig.main_root, :3, 3])
        cam = root @ rotation.T + translation
        pixel = cam[:, :2] / cam[:, 2:3] * focal + center
        uv = (pixel - centres) / (sides[:, None] / 2)
        extent = np.log(sides * cam[:, 2] / focal.mean())
        return {"deltas": matrix_to_6d(crop_camera[:, None] @ deltas),
                "root": np.concatenate([uv, extent[:, None]], axis=1)}

    def to_motion(self, out: dict[str, np.ndarray], camera, centres: np.ndarray, sides: np.ndarray,
                  fps: float) -> Motion:
        """Network outputs (per frame) + crop geometry + camera → a motion of the rig."""
        focal, center = camera_intrinsics(camera)
        rotation, translation = canonical_camera(camera, self.frame)
        align = ray_alignment(centres, focal, center)  # (T,3,3)
        crop_camera = align @ rotation  # canonical world → crop camera
        deltas = np.swapaxes(crop_camera, -1, -2)[:, None] @ sixd_to_matrix(out["deltas"])
        u, v, log_extent = out["root"][:, 0], out["root"][:, 1], out["root"][:, 2]
        depth = np.exp(log_extent) * focal.mean() / sides  # canonical units
        pixel = centres + np.stack([u, v], axis=1) * sides[:, None] / 2
        cam_point = np.concatenate([(pixel - center) / focal * depth[:, None], depth[:, None]], axis=1)
        root = (cam_point - translation) @ rotation  # canonical world
        arm_deltas = self.frame.from_canonical_rotations(deltas)
        arm_root = self.frame.from_canonical_points(root)
        return motion_from_world_deltas(self.rig, matrix_to_quat(arm_deltas), arm_root, fps)

    # .............................................................. files
    def save(self, path: str | Path) -> Path:
        from safetensors.torch import save_file

        path = Path(path)
        if path.suffix != ".safetensors":
            path = path / WEIGHTS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        card = dict(self.card)
        card.update(format=FORMAT_VERSION, config=asdict(self.config), joints=self.rig.joint_count,
                    names=list(self.rig.names), frame=_frame_dict(self.frame))
        tensors = {k: v.detach().contiguous() for k, v in self.net.state_dict().items()}
        temporary = path.with_name(path.name + ".tmp")
        save_file(tensors, str(temporary), metadata={"card": json.dumps(card)})
        os.replace(temporary, path)
        return path

    @classmethod
    def load(cls, path: str | Path, rig: Rig) -> IDM:
        from safetensors import safe_open
        from safetensors.torch import load_file

        path = Path(path)
        if path.is_dir():
            path = path / WEIGHTS_FILE
        if not path.exists():
            raise IDMError(f"No inverse-dynamics model at {path}.")
        with safe_open(str(path), framework="pt") as handle:
            card = json.loads((handle.metadata() or {}).get("card", "{}"))
        if card.get("format") != FORMAT_VERSION:
            raise IDMError(f"{path} is not an inverse-dynamics model of this version.")
        if card.get("joints") != rig.joint_count or card.get("names") != list(rig.names):
            raise IDMError("This inverse-dynamics model was trained for another rig.")
        raw = dict(card["config"])
        raw["channels"] = tuple(raw["channels"])
        config = IDMConfig(**raw)
        net = IDMNet(rig.joint_count, config)
        net.load_state_dict(load_file(str(path)))
        return cls(net, rig, _frame_from_dict(card["frame"]), config, card)


def front_view_rotation() -> np.ndarray:
    """(3,3) canonical world → camera rotation of `default_camera` (level, in front, looking +Y)."""
    camera = PinholeCamera.look_at((0.0, -3.0, 0.35), (0.0, 0.0, 0.35), (0.0, 0.0, 1.0), 1.0, (0.0, 0.0))
    return camera.rotation


def default_camera(rig: Rig, frame: CanonicalFrame, size: tuple[int, int], distance: float = 3.0,
                   elevation_deg: float = 10.0) -> PinholeCamera:
    """The camera assumed when the video's is unknown, as a PinholeCamera in armature space: the
    one the video fit estimates (kirin_addon/video/fit_start.py) — from the creature's side
    (canonical −X), level but for `elevation_deg` of downward tilt, looking at the rest root, focal
    max(W, H) px, principal point at the image centre — `distance` body sizes away. So the orientation
    the IDM reads off the silhouette is the one the fit starts from when it estimates the camera
    itself."""
    width, height = size
    target = frame.to_canonical_points(rig.heads[rig.main_root])
    elevation = np.radians(elevation_deg)
    direction = np.array([-np.cos(elevation), 0.0, np.sin(elevation)])
    seen = PinholeCamera.look_at(target + distance * direction, target, (0.0, 0.0, 1.0),
                                 float(max(width, height)), (width / 2.0, height / 2.0))
    return seen.transformed(frame.inverse_matrix())


def _gaussian_smooth(values: np.ndarray, sigma: float) -> np.ndarray:
    from scipy.ndimage import gaussian_filter1d

    return gaussian_filter1d(np.asarray(values, np.float64), sigma, axis=0, mode="nearest")


def _running_median(values: np.ndarray, window: int) -> np.ndarray:
    from scipy.ndimage import median_filter

    size = (int(window),) + (1,) * (np.ndim(values) - 1)
    return median_filter(np.asarray(values, np.float64), size=size, mode="nearest")


def _frame_dict(frame: CanonicalFrame) -> dict:
    return {"rotation": frame.rotation.tolist(), "scale": float(frame.scale), "origin": frame.origin.tolist(),
            "up_axis": frame.up_axis, "forward_axis": frame.forward_axis}


def _frame_from_dict(data: dict) -> CanonicalFrame:
    return CanonicalFrame(rotation=np.array(data["rotation"]), scale=float(data["scale"]),
                          origin=np.array(data["origin"]), up_axis=data["up_axis"],
                          forward_axis=data["forward_axis"])


def default_frame(rig: Rig, mesh: SkinnedMesh | None) -> CanonicalFrame:
    return detect_canonical_frame(rig, mesh_vertices=None if mesh is None else mesh.vertices)
