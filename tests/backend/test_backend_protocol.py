"""The wire format: arrays, rigs, meshes and motions survive the trip exactly, and anything
malformed is refused with a message that names the field. No server, no model."""

from __future__ import annotations

import ast
import base64
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kirin.kirin_addon.backend.protocol import (
    ProtocolError,
    decode_array,
    encode_array,
    generate_to_json,
    mesh_from_json,
    mesh_to_json,
    motion_from_json,
    motion_to_json,
    rig_from_json,
    rig_to_json,
)
from kirin.kirin_addon.core.motion import Motion
from kirin.kirin_addon.core.rig import RigError
from kirin.kirin_addon.generate.request import GenerateRequest

BACKEND = Path(__file__).resolve().parents[2] / "kirin_addon" / "backend"


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8"])
def test_arrays_round_trip_little_endian(dtype):
    values = (np.arange(24).reshape(2, 3, 4) % 7).astype(dtype)
    wire = encode_array(values, dtype)
    assert wire["shape"] == [2, 3, 4] and wire["dtype"] == dtype
    little = np.frombuffer(base64.b64decode(wire["data"]), dtype=np.dtype(dtype).newbyteorder("<"))
    assert np.array_equal(little.reshape(2, 3, 4), values)
    kind = "float" if dtype.startswith("float") else "int"
    assert np.array_equal(decode_array(wire, "x", (2, None, 4), kind=kind), values)


def test_float64_is_exact_and_float32_rounds():
    values = np.array([1 / 3, np.pi, -1e-300])
    assert np.array_equal(decode_array(encode_array(values, "float64"), "x"), values)
    assert np.allclose(decode_array(encode_array(values, "float32"), "x")[:2], values[:2], rtol=1e-7)


@pytest.mark.parametrize(
    ("obj", "shape", "kind", "words"),
    [
        ([1, 2, 3], None, "float", "expected an array object"),
        ({"dtype": "complex64", "shape": [1], "data": ""}, None, "float", "unknown dtype"),
        ({"dtype": "float32", "shape": [-1], "data": ""}, None, "float", "non-negative"),
        ({"dtype": "float32", "shape": [True], "data": ""}, None, "float", "non-negative"),
        ({"dtype": "float32", "shape": [3], "data": "AAAA"}, None, "float", "do not fit"),
        ({"dtype": "float32", "shape": [1], "data": "!!!!"}, None, "float", "base64"),
        ({"dtype": "float32", "shape": [10**6, 10**6], "data": ""}, None, "float", "more than"),
        ({"dtype": "float32", "shape": [1], "data": "A" * 10_000}, None, "float", "too many"),
        (encode_array(np.zeros((2, 3))), (2, 4), "float", "expected shape (2, 4)"),
        (encode_array(np.zeros((2, 3))), (2, 3, 1), "float", "expected shape"),
        (encode_array(np.array([1.0, np.nan])), None, "float", "NaN or infinite"),
        (encode_array(np.array([1.0, np.inf])), None, "float", "NaN or infinite"),
        (encode_array(np.array([1.0, -1e30])), None, "float", "beyond"),
        (encode_array(np.zeros(3, np.int32)), None, "float", "float32 or float64"),
        (encode_array(np.zeros(3)), None, "int", "integer"),
        (encode_array(np.array([0, 2], np.uint8)), None, "bool", "0/1"),
    ],
)
def test_malformed_arrays_are_refused_with_the_field_name(obj, shape, kind, words):
    with pytest.raises(ProtocolError, match="^rig.rest") as info:
        decode_array(obj, "rig.rest", shape, kind=kind)
    assert words in str(info.value)


def test_rig_round_trips_exactly(creature):
    rig = rig_from_json(rig_to_json(creature.rig))
    assert rig.names == creature.rig.names
    assert np.array_equal(rig.parents, creature.rig.parents)
    assert np.array_equal(rig.rest, creature.rig.rest) and np.array_equal(rig.tails, creature.rig.tails)
    assert np.array_equal(rig.deform, creature.rig.deform)


def test_rig_checks(creature):
    good = rig_to_json(creature.rig)
    count = len(good["names"])
    with pytest.raises(ProtocolError, match="no deform bones"):
        rig_from_json({**good, "deform": [False] * count})
    with pytest.raises(ProtocolError, match=rf"rig.rest: expected shape \({count}, 4, 4\)"):
        rig_from_json({**good, "rest": encode_array(creature.rig.rest[:-1])})
    with pytest.raises(ProtocolError, match="parents"):
        rig_from_json({**good, "parents": good["parents"][:-1]})
    with pytest.raises(ProtocolError, match="names"):
        rig_from_json({**good, "names": []})
    with pytest.raises(RigError, match="unique"):
        rig_from_json({**good, "names": ["same"] * count})
    tails = creature.rig.rest[:, :3, 3].copy()  # every bone zero-length
    with pytest.raises(RigError, match="Zero-length"):
        rig_from_json({**good, "tails": encode_array(tails)})


def test_mesh_and_motion_round_trip(creature):
    rig, mesh = creature.rig, creature.mesh
    back = mesh_from_json(mesh_to_json(mesh), rig.joint_count)
    assert back.vertex_count == mesh.vertex_count
    assert np.array_equal(back.triangles, mesh.triangles)
    assert np.allclose(back.joint_weights, mesh.joint_weights, atol=1e-6)
    wire = mesh_to_json(mesh)
    with pytest.raises(ProtocolError, match="bone index"):
        mesh_from_json(wire, 2)
    bad = dict(wire, joint_weights=encode_array(np.zeros_like(mesh.joint_weights)))
    with pytest.raises(ProtocolError, match="no skin weights"):
        mesh_from_json(bad, rig.joint_count)
    motion = Motion.rest(rig, 5, 24.0)
    again = motion_from_json(motion_to_json(motion), rig.joint_count, 5)
    assert again.fps == 24.0 and np.allclose(again.rotations, motion.rotations)
    with pytest.raises(ProtocolError, match="motion.rotations: expected shape"):
        motion_from_json(motion_to_json(motion), rig.joint_count + 1)
    zero = dict(motion_to_json(motion), rotations=encode_array(np.zeros((5, rig.joint_count, 4))))
    with pytest.raises(ProtocolError, match="zero"):
        motion_from_json(zero, rig.joint_count)


def test_a_256_bone_rig_travels_and_one_bone_more_is_refused():
    """Issue 31's any size: 256 bones (fingers, twist bones, a face) with their skin and a keyed motion
    cross the wire exactly; 257 get the add-on's own words."""
    from kirin.benchmarks.big_rig import big_creature
    from kirin.kirin_addon.backend.protocol import generate_from_json

    creature = big_creature("biped", 1)
    keep = Motion.rest(creature.rig, 4)
    request = GenerateRequest("a robot waves", frames=8, keep=keep)
    body = generate_to_json(creature.rig, request, creature.mesh)
    rig, mesh, request = generate_from_json(body)
    assert rig.joint_count == 256 and np.array_equal(rig.rest, creature.rig.rest)
    assert np.array_equal(mesh.joint_indices, creature.mesh.joint_indices)
    assert request.keep.joint_count == 256
    bigger = big_creature("biped", 1, total=257).rig
    with pytest.raises(ProtocolError, match="The armature has 257 bones; Kirin handles at most 256"):
        rig_from_json(rig_to_json(bigger))


def test_generate_request_is_plain_json(creature):
    import json

    keep = Motion.rest(creature.rig, 4)
    body = generate_to_json(
        creature.rig,
        GenerateRequest("a dog", frames=8, keep=keep, keep_frames=[0, 3]),
        creature.mesh,
    )
    assert json.loads(json.dumps(body, allow_nan=False))["keep"]["frames"] == [0, 3]


def test_a_decoded_generate_request_is_checked_once_by_its_own_check(creature, monkeypatch):
    """The wire format decodes the fields' kinds and leaves what may be asked to
    `GenerateRequest.check`, which it calls once."""
    from kirin.kirin_addon.backend.protocol import generate_from_json
    from kirin.kirin_addon.generate.request import GenerateRequestError

    keep = Motion.rest(creature.rig, 4)
    body = generate_to_json(creature.rig, GenerateRequest("a dog", frames=8, keep=keep, keep_frames=[3, 0]))
    checks = []
    original = GenerateRequest.check
    monkeypatch.setattr(GenerateRequest, "check", lambda self: checks.append(self) or original(self))
    rig, mesh, request = generate_from_json(body)
    assert len(checks) == 1 and checks[0] is request and mesh is None
    assert request.keep_frames.tolist() == [0, 3] and rig.joint_count == creature.rig.joint_count
    for changes, words in (({"prompt": "  "}, "prompt is empty"), ({"frames": 0}, "Frames must be from 1"),
                           ({"variants": 17}, "Variants"), ({"fps": 0.01}, "frame rate"),
                           ({"guidance": 101.0}, "Guidance"), ({"prompt": "a" * 2001}, "2001 characters"),
                           ({"prompt": None}, "prompt, a reference image"),
                           ({"keep": {**body["keep"], "frames": [7]}}, r"keep.frames\) must lie in 0..3")):
        with pytest.raises(GenerateRequestError, match=words):
            generate_from_json({**body, **changes})
    for changes, words in (({"frames": "8"}, "frames must be a whole number"), ({"fps": True}, "fps must be"),
                           ({"prompt": 3}, "prompt: expected text"), ({"loop": 1}, "loop")):
        with pytest.raises(ProtocolError, match=words):
            generate_from_json({**body, **changes})


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_client_side_uses_only_the_standard_library_and_numpy():
    # Blender bundles numpy and nothing else that the backend uses.
    allowed = set(sys.stdlib_module_names) | {"numpy"}
    client_side = ("client.py", "process.py", "results.py", "protocol.py", "protocol_bind.py",
                   "protocol_pose.py", "protocol_video.py", "__init__.py")
    for name in client_side:
        assert _imports(BACKEND / name) <= allowed, name
    code = ("import sys, kirin.kirin_addon.backend.client, kirin.kirin_addon.backend.process\n"
            "bad = {'torch', 'fastapi', 'uvicorn', 'pydantic', 'scipy', 'onnxruntime'} & set(sys.modules)\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
