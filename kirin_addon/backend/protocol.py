"""The backend's wire format, shared by the server and the client (numpy + standard library only).

Arrays travel inside JSON as `{"dtype": "float32", "shape": [T, J, 4], "data": "<base64>"}`, the
data little-endian and C-ordered whatever the machine, so a Blender on one box and a GPU backend on
another agree. Decoding is strict: the byte count must match the shape, the shape must match what
the field needs, and floats must be finite; every failure is a `ProtocolError` whose message names
the field, because it ends up in Blender's status bar.

This module holds what every request shares (arrays, numbers, rig, mesh, motion) and Generate
Motion's requests; each other feature's requests are in protocol_<feature>.py (bind, pose, video).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.motion import Motion
from ..core.rig import MAX_JOINTS, Rig
from ..core.skinning import SkinnedMesh
from ..generate.request import MAX_FPS, MIN_FPS, GenerateRequest

PROTOCOL_VERSION = 1
API = "/v1"  # every endpoint lives under this prefix
MAX_IMAGE_BYTES = 64 * 1024 * 1024  # a reference image file sent as its bytes
MAX_ELEMENTS = 64_000_000  # per array: refuse before allocating anything absurd
MAX_DIMS = 8
MAX_MAGNITUDE = 1e12  # larger float values are garbage, and their squares would overflow float32 maths
# Wire dtypes and their explicit little-endian numpy forms.
DTYPES: dict[str, str] = {"float32": "<f4", "float64": "<f8", "int32": "<i4", "int64": "<i8", "uint8": "|u1"}
_FLOAT = ("float32", "float64")
_INT = ("int32", "int64", "uint8")

Shape = Sequence[int | None]  # None: any length on that axis


class ProtocolError(ValueError):
    """A request or response that does not follow the protocol; the message is user-facing."""


# ----------------------------------------------------------------------------- arrays
def encode_array(array: np.ndarray | Sequence, dtype: str | None = None) -> dict[str, Any]:
    """An array as JSON-ready `{"dtype", "shape", "data"}`. `dtype` None keeps float64/float32/int
    kinds as they are (bools travel as uint8)."""
    values = np.asarray(array)
    if dtype is None:
        if values.dtype == np.bool_:
            dtype = "uint8"
        elif values.dtype.kind == "f":
            dtype = "float64" if values.dtype.itemsize > 4 else "float32"
        elif values.dtype.kind in "iu":
            dtype = "int64" if values.dtype.itemsize > 4 else "int32"
        else:
            raise ProtocolError(f"Cannot send an array of {values.dtype}.")
    if dtype not in DTYPES:
        raise ProtocolError(f"Unknown array dtype {dtype!r} (one of {', '.join(DTYPES)}).")
    wire = np.ascontiguousarray(values, dtype=DTYPES[dtype])
    data = base64.b64encode(wire.tobytes()).decode("ascii")
    return {"dtype": dtype, "shape": list(wire.shape), "data": data}


def _shape_text(shape: Shape) -> str:
    return "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"


def decode_array(
    obj: Any, what: str, shape: Shape | None = None, kind: str = "float", finite: bool = True
) -> np.ndarray:
    """The array an `encode_array` dict holds, checked: `shape` (None entries match any length),
    `kind` "float" (any wire dtype, returned as float64), "int" (integer dtypes, int64) or "bool"
    (uint8 0/1 or integers, bool); floats must be finite unless `finite` is False."""
    if not isinstance(obj, dict):
        raise ProtocolError(
            f"{what}: expected an array object {{dtype, shape, data}}, got {type(obj).__name__}."
        )
    dtype, dims, data = obj.get("dtype"), obj.get("shape"), obj.get("data")
    if dtype not in DTYPES:
        raise ProtocolError(f"{what}: unknown dtype {dtype!r} (one of {', '.join(DTYPES)}).")
    if (
        not isinstance(dims, list)
        or len(dims) > MAX_DIMS
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims)
    ):
        raise ProtocolError(f"{what}: shape must be a list of at most {MAX_DIMS} non-negative integers.")
    count = math.prod(dims)
    if count > MAX_ELEMENTS:
        raise ProtocolError(f"{what}: {count} values is more than the {MAX_ELEMENTS} one array may hold.")
    if not isinstance(data, str):
        raise ProtocolError(f"{what}: data must be a base64 string.")
    if shape is not None:
        if len(dims) != len(shape) or any(s is not None and s != d for s, d in zip(shape, dims, strict=True)):
            raise ProtocolError(f"{what}: expected shape {_shape_text(shape)}, got {tuple(dims)}.")
    item = np.dtype(DTYPES[dtype]).itemsize
    if len(data) > 4 * (-(-count * item // 3)) + 4:  # cheap check before decoding a huge string
        raise ProtocolError(f"{what}: {len(data)} base64 characters is too many for shape {tuple(dims)}.")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ProtocolError(f"{what}: data is not valid base64 ({exc}).") from None
    if len(raw) != count * item:
        raise ProtocolError(
            f"{what}: {len(raw)} bytes of data do not fit shape {tuple(dims)} of {dtype} "
            f"({count * item} bytes)."
        )
    values = np.frombuffer(raw, dtype=DTYPES[dtype]).reshape(dims)
    if kind == "float":
        if dtype not in _FLOAT:
            raise ProtocolError(f"{what}: expected float32 or float64 values, got {dtype}.")
        out = values.astype(np.float64)
        if finite and not np.all(np.isfinite(out)):
            raise ProtocolError(f"{what}: contains NaN or infinite values.")
        if finite and out.size and np.abs(out).max() > MAX_MAGNITUDE:
            raise ProtocolError(f"{what}: contains values beyond ±{MAX_MAGNITUDE:g}.")
        return out
    if kind == "int":
        if dtype not in _INT:
            raise ProtocolError(f"{what}: expected integer values, got {dtype}.")
        return values.astype(np.int64)
    if kind == "bool":
        if dtype not in _INT or np.any((values != 0) & (values != 1)):
            raise ProtocolError(f"{what}: expected 0/1 flags.")
        return values.astype(bool)
    raise ValueError(f"unknown kind {kind!r}")


# ----------------------------------------------------------------------------- flags and numbers
def _flags(obj: Any, what: str, count: int) -> np.ndarray | None:
    if obj is None:
        return None
    if not isinstance(obj, list) or len(obj) != count or not all(isinstance(v, bool) for v in obj):
        raise ProtocolError(f"{what}: expected {count} true/false values.")
    return np.array(obj, dtype=bool)


def whole_number(value: Any, what: str, low: int, high: int) -> int:
    """An integer field of a request in low..high (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ProtocolError(f"{what} must be a whole number from {low} to {high}, got {value!r}.")
    return value


def bounded_number(value: Any, what: str, low: float, high: float, low_inclusive: bool = False) -> float:
    """A finite number field of a request in (low, high], or [low, high] with `low_inclusive`."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not (low <= value if low_inclusive else low < value)
        or not value <= high
    ):
        bound = "from" if low_inclusive else "above"
        raise ProtocolError(f"{what} must be a number {bound} {low:g} and at most {high:g}, got {value!r}.")
    return float(value)


# ----------------------------------------------------------------------------- rig, mesh, motion
def rig_to_json(rig: Rig) -> dict[str, Any]:
    """A rig in armature space; float64 so that the backend measures bone lengths on the same rig."""
    out: dict[str, Any] = {
        "names": list(rig.names),
        "parents": [int(p) for p in rig.parents],
        "rest": encode_array(rig.rest, "float64"),
        "tails": encode_array(rig.tails, "float64"),
        "deform": [bool(d) for d in rig.deform],
        "connected": [bool(c) for c in rig.connected],
    }
    if rig.local_rest is not None:
        out["local_rest"] = encode_array(rig.local_rest, "float64")
    return out


def rig_from_json(obj: Any, what: str = "rig") -> Rig:
    """The rig of a request, validated as Generate Motion needs it (RigError messages pass through)."""
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what}: expected an object.")
    names = obj.get("names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise ProtocolError(f"{what}.names: expected a non-empty list of bone names.")
    count = len(names)
    if count > MAX_JOINTS:
        raise ProtocolError(f"The armature has {count} bones; Kirin handles at most {MAX_JOINTS}.")
    parents = obj.get("parents")
    if (
        not isinstance(parents, list)
        or len(parents) != count
        or not all(isinstance(p, int) and not isinstance(p, bool) for p in parents)
    ):
        raise ProtocolError(f"{what}.parents: expected {count} integer parent indices (-1 for a root).")
    rest = decode_array(obj.get("rest"), f"{what}.rest", (count, 4, 4))
    tails = decode_array(obj.get("tails"), f"{what}.tails", (count, 3))
    deform = _flags(obj.get("deform"), f"{what}.deform", count)
    connected = _flags(obj.get("connected"), f"{what}.connected", count)
    local_rest = None
    if obj.get("local_rest") is not None:
        local_rest = decode_array(obj["local_rest"], f"{what}.local_rest", (count, 4, 4))
    if deform is not None and not deform.any():
        raise ProtocolError("The armature has no deform bones: mark the bones that move the mesh as Deform.")
    rig = Rig(names, np.array(parents, dtype=np.int64), rest, tails, deform, connected, local_rest)
    rig.validate()
    return rig


def mesh_to_json(mesh: SkinnedMesh) -> dict[str, Any]:
    return {
        "vertices": encode_array(mesh.vertices, "float32"),
        "triangles": encode_array(mesh.triangles, "int32"),
        "joint_indices": encode_array(mesh.joint_indices, "int32"),
        "joint_weights": encode_array(mesh.joint_weights, "float32"),
    }


def mesh_from_json(obj: Any, joints: int, what: str = "mesh") -> SkinnedMesh:
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what}: expected an object.")
    vertices = decode_array(obj.get("vertices"), f"{what}.vertices", (None, 3))
    count = vertices.shape[0]
    if count == 0:
        raise ProtocolError(f"{what}: the mesh has no vertices.")
    triangles = decode_array(obj.get("triangles"), f"{what}.triangles", (None, 3), kind="int")
    indices = decode_array(obj.get("joint_indices"), f"{what}.joint_indices", (count, None), kind="int")
    weights = decode_array(obj.get("joint_weights"), f"{what}.joint_weights", (count, indices.shape[1]))
    if triangles.size and (triangles.min() < 0 or triangles.max() >= count):
        raise ProtocolError(f"{what}.triangles: a vertex index is outside 0..{count - 1}.")
    if indices.size and (indices.min() < 0 or indices.max() >= joints):
        raise ProtocolError(f"{what}.joint_indices: a bone index is outside 0..{joints - 1}.")
    if np.any(weights < 0):
        raise ProtocolError(f"{what}.joint_weights: weights must not be negative.")
    if not np.any(weights > 0):
        raise ProtocolError("The mesh has no skin weights: bind it to the armature first.")
    return SkinnedMesh(vertices, triangles, indices, weights)


def motion_to_json(motion: Motion, dtype: str = "float32") -> dict[str, Any]:
    """A motion; root positions always float64 (a few numbers, and far from the origin float32
    would already show)."""
    return {
        "fps": float(motion.fps),
        "root_positions": encode_array(motion.root_positions, "float64"),
        "rotations": encode_array(motion.rotations, dtype),
        "translations": None if motion.translations is None else encode_array(motion.translations, dtype),
    }


def motion_from_json(obj: Any, joints: int, frames: int | None = None, what: str = "motion") -> Motion:
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what}: expected an object.")
    fps = bounded_number(obj.get("fps"), f"{what}.fps", MIN_FPS, MAX_FPS, low_inclusive=True)
    rotations = decode_array(obj.get("rotations"), f"{what}.rotations", (frames, joints, 4))
    count = rotations.shape[0]
    if count == 0:
        raise ProtocolError(f"{what}: the motion has no frames.")
    if np.any(np.linalg.norm(rotations, axis=-1) < 1e-8):
        raise ProtocolError(f"{what}.rotations: a quaternion is zero (w, x, y, z expected).")
    root = decode_array(obj.get("root_positions"), f"{what}.root_positions", (count, 3))
    moved = None
    if obj.get("translations") is not None:
        moved = decode_array(obj["translations"], f"{what}.translations", (count, joints, 3))
    return Motion(fps, root, rotations, moved)


# ----------------------------------------------------------------------------- generate requests
def generate_to_json(rig: Rig, request: GenerateRequest, mesh: SkinnedMesh | None = None) -> dict[str, Any]:
    """The JSON body of POST /v1/jobs/generate (see the server's OpenAPI schema for each field): the
    request on `rig` (and its skinned `mesh`). A reference image given as a path is read by the
    backend (same machine); as bytes, the file itself travels (a backend elsewhere)."""
    body: dict[str, Any] = {
        "prompt": request.prompt,
        "rig": rig_to_json(rig),
        "frames": int(request.frames),
        "seed": int(request.seed),
        "variants": int(request.variants),
        "loop": bool(request.loop),
    }
    if request.fps is not None:
        body["fps"] = float(request.fps)
    if request.guidance is not None:
        body["guidance"] = float(request.guidance)
    if mesh is not None:
        body["mesh"] = mesh_to_json(mesh)
    image = request.image
    if isinstance(image, bytes):
        body["image_data"] = base64.b64encode(image).decode("ascii")
    elif image is not None:
        if isinstance(image, np.ndarray):
            raise ProtocolError("The reference image travels as a file (its path or bytes), not as pixels.")
        body["image_path"] = str(image)
    if request.keep is not None:
        body["keep"] = {"motion": motion_to_json(request.keep, "float64"),
                        "frames": [int(f) for f in request.kept_frames()]}
    return body


def generate_from_json(body: dict[str, Any]) -> tuple[Rig, SkinnedMesh | None, GenerateRequest]:
    """A generate request's JSON body decoded: the rig, its mesh and the request (the reference image
    still a path or the file's bytes, the kept frames distinct and sorted), the request checked by
    its own `GenerateRequest.check`; ProtocolError (a field of the wrong kind), RigError or
    GenerateRequestError otherwise. What needs the model (its frame rate) is checked by the backend."""
    prompt = body.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise ProtocolError("prompt: expected text.")
    image = _image_from_json(body.get("image_path"), body.get("image_data"))
    frames = _integer(body.get("frames", 120), "frames")
    variants = _integer(body.get("variants", 1), "variants")
    seed = _integer(body.get("seed", 0), "seed")
    fps = body.get("fps")
    fps = None if fps is None else _number(fps, "fps")
    guidance = body.get("guidance")
    guidance = None if guidance is None else _number(guidance, "guidance")
    loop = body.get("loop", False)
    if not isinstance(loop, bool):
        raise ProtocolError(f"loop: expected true or false, got {type(loop).__name__}.")
    rig = rig_from_json(body.get("rig"))
    mesh = None if body.get("mesh") is None else mesh_from_json(body["mesh"], rig.joint_count)
    keep, keep_frames = _keep_from_json(body.get("keep"), rig)
    request = GenerateRequest(prompt, image, frames, fps, seed, variants, guidance, keep, keep_frames, loop)
    return rig, mesh, request.check()


def _integer(value: Any, what: str) -> int:
    """A whole-number field (bools are not numbers here); its range is the request's check."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"{what} must be a whole number, got {value!r}.")
    return value


def _number(value: Any, what: str) -> float:
    """A number field; its range is the request's check."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProtocolError(f"{what} must be a number, got {value!r}.")
    return float(value)


def _image_from_json(path: Any, data: Any) -> str | bytes | None:
    """The reference image of a request: the path on the backend's machine or the file's bytes."""
    if path is not None and data is not None:
        raise ProtocolError("Give the reference image as image_path or image_data, not both.")
    if data is not None:
        if not isinstance(data, str) or len(data) > MAX_IMAGE_BYTES * 4 // 3 + 4:
            raise ProtocolError(
                f"image_data: expected the image file as base64 (at most {MAX_IMAGE_BYTES} bytes)."
            )
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise ProtocolError("image_data: not valid base64.") from None
    if path is not None and (not isinstance(path, str) or not path.strip()):
        raise ProtocolError("image_path: expected a file path.")
    return path


def _keep_from_json(obj: Any, rig: Rig) -> tuple[Motion | None, np.ndarray | None]:
    """Existing keys to honour: a motion on the rig and the distinct frames of it to keep (which
    frames may be kept is the request's check)."""
    if obj is None:
        return None, None
    if not isinstance(obj, dict):
        raise ProtocolError("keep: expected {motion, frames}.")
    motion = motion_from_json(obj.get("motion"), rig.joint_count, what="keep.motion")
    indices = obj.get("frames")
    if (
        not isinstance(indices, list)
        or not indices
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in indices)
    ):
        raise ProtocolError("keep.frames: expected a non-empty list of frame indices.")
    return motion, np.unique(np.array(indices, dtype=np.int64))
