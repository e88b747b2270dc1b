"""Pose Space over real HTTP (the shared in-process backend, CPU, one thread, the shipped pose prior):
project a dragged paw with a pinned foot, an out-of-reach target, sample, walk, the mesh_key round
trip and bad input refused with a 4xx naming the field. The prior is retrained from time to time:
these tests assert behaviour, not values, and time nothing."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.backend.protocol_pose import UNKNOWN_MESH_KEY_STATUS, pose_project_to_json
from kirin.kirin_addon.backend.results import BackendError, PoseResult
from kirin.kirin_addon.core.canonical import detect_canonical_frame
from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.core.rotations import quat_identity
from kirin.kirin_addon.eval.metrics import bone_length_error
from kirin.kirin_addon.pose.request import PoseProjectRequest, PoseSampleRequest, PoseWalkRequest
from kirin.kirin_addon.pose.space import JointLimits

PAW, PIN, HEAD = "mixamorig:LeftHandToe", "mixamorig:RightToeBase", "mixamorig:Head"


@pytest.fixture(scope="module")
def pose_client(client):
    if not client.health()["pose"]["available"]:
        pytest.skip("no shipped pose prior")
    return client


@pytest.fixture(scope="module")
def frame(creature):
    return detect_canonical_frame(creature.rig)


def body(frame) -> float:
    return 1.0 / frame.scale  # armature units per body size


def canonical_offset(frame, offset) -> np.ndarray:
    """An offset given in body sizes in the canonical frame (+Z up, −Y forward), in armature space."""
    return frame.rotation.T @ np.asarray(offset, np.float64) * body(frame)


def rotation_angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angles (degrees) between unit quaternions (…,4)."""
    dot = np.abs(np.sum(a * b, axis=-1)) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return np.degrees(2 * np.arccos(np.clip(dot, 0.0, 1.0)))


def drag_paw(client, creature, frame, ranges=None, **kwargs) -> tuple[PoseResult, np.ndarray, Motion]:
    rig = creature.rig
    rest = Motion.rest(rig)
    before = joint_positions(rig, rest)[0]
    paw, pin = rig.names.index(PAW), rig.names.index(PIN)
    target = before[paw] + canonical_offset(frame, (0.0, -0.08, 0.06))  # forward and up
    request = PoseProjectRequest(rest, {paw: target}, pins=[pin], ranges=ranges)
    return client.project_pose(rig, request, **kwargs), target, rest


# ----------------------------------------------------------------------------- project
def test_project_reaches_a_paw_target_with_the_foot_pinned(pose_client, creature, frame):
    rig = creature.rig
    result, target, rest = drag_paw(pose_client, creature, frame)
    assert result.motion.frame_count == 1 and result.motion.joint_count == rig.joint_count
    assert result.reached and result.message == ""
    assert result.handle_error.shape == (2,) and result.handle_error.max() < 0.02
    after, before = joint_positions(rig, result.motion)[0], joint_positions(rig, rest)[0]
    paw, pin = rig.names.index(PAW), rig.names.index(PIN)
    assert np.linalg.norm(after[paw] - target) / body(frame) < 0.02
    assert np.linalg.norm(after[pin] - before[pin]) / body(frame) < 0.02
    assert bone_length_error(rig, result.motion).max_error < 1e-5
    assert np.linalg.norm(after - before, axis=-1).max() > 0.02 * body(frame)  # it did move
    assert result.seconds > 0 and result.mesh_key is None
    pose = pose_client.health()["pose"]
    assert pose["loaded"] and pose["backend"] in ("onnxruntime", "torch") and pose["model"]


def test_a_drag_keeps_to_the_ranges_it_is_given(pose_client, creature, frame):
    rig = creature.rig
    free = drag_paw(pose_client, creature, frame)[0]
    turned = JointLimits.from_motion(rig, free.motion, margin=0.0).swing  # each joint's swing after the drag
    turned[rig.parents < 0] = 0.0
    most = int(np.argmax(turned))
    ranges = JointLimits(np.full(rig.joint_count, np.pi), np.full(rig.joint_count, np.pi))
    ranges.swing[most] = 0.3 * turned[most]  # the joint the drag turns most may barely turn
    kept = drag_paw(pose_client, creature, frame, ranges=ranges)[0]
    assert JointLimits.from_motion(rig, kept.motion, margin=0.0).swing[most] < 0.7 * turned[most]
    assert kept.handle_error.max() < 0.03  # the other joints took the turn


def test_samples_keep_to_the_ranges_they_are_given(pose_client, creature):
    rig = creature.rig
    rest = Motion.rest(rig)
    free = pose_client.sample_poses(rig, PoseSampleRequest(rest, count=4, seed=3)).motion
    tight = JointLimits(np.full(rig.joint_count, 0.2), np.full(rig.joint_count, 0.1))
    assert (JointLimits.from_motion(rig, free, margin=0.0).swing > 0.2 + 1e-3).any()
    kept = pose_client.sample_poses(rig, PoseSampleRequest(rest, count=4, seed=3, ranges=tight)).motion
    measured = JointLimits.from_motion(rig, kept, margin=0.0)
    assert (measured.swing <= 0.2 + 1e-5).all() and (measured.twist <= 0.1 + 1e-5).all()


def test_an_absurd_target_is_not_reached_and_says_so(pose_client, creature, frame):
    rig = creature.rig
    rest = Motion.rest(rig)
    positions = joint_positions(rig, rest)[0]
    up = frame.rotation.T @ np.array([0.0, 0.0, 1.0])
    lowest = float((positions @ up).min())
    head = rig.names.index(HEAD)
    target = positions[head] + (lowest - positions[head] @ up - 0.5 * body(frame)) * up
    result = pose_client.project_pose(rig, PoseProjectRequest(rest, {head: target}))
    assert not result.reached and result.message
    assert result.handle_error.shape == (1,) and result.handle_error[0] > 0.02
    assert np.isfinite(result.motion.rotations).all() and np.isfinite(result.motion.root_positions).all()
    assert bone_length_error(rig, result.motion).max_error < 1e-5


# ----------------------------------------------------------------------------- sample and walk
def test_sample_gives_distinct_plausible_poses(pose_client, creature):
    rig = creature.rig
    rest = Motion.rest(rig)
    result = pose_client.sample_poses(rig, PoseSampleRequest(rest, count=5, seed=3))
    motion = result.motion
    assert motion.frame_count == 5 and motion.joint_count == rig.joint_count
    assert result.handle_error is None and result.reached
    assert np.isfinite(motion.rotations).all() and np.isfinite(motion.root_positions).all()
    assert bone_length_error(rig, motion).max_error < 1e-5
    for i in range(5):
        for j in range(i):
            assert rotation_angles(motion.rotations[i], motion.rotations[j]).max() > 1.0
    again = pose_client.sample_poses(rig, PoseSampleRequest(rest, count=5, seed=3))
    assert np.allclose(again.motion.rotations, motion.rotations, atol=1e-6)  # seeded


def test_walk_passes_through_the_keys(pose_client, creature, frame):
    rig = creature.rig
    dragged, _, rest = drag_paw(pose_client, creature, frame)
    sampled = pose_client.sample_poses(rig, PoseSampleRequest(rest, count=1, seed=7)).motion
    keys = Motion(
        30.0,
        np.concatenate([rest.root_positions, dragged.motion.root_positions, sampled.root_positions]),
        np.concatenate([rest.rotations, dragged.motion.rotations, sampled.rotations]),
    )
    result = pose_client.walk_poses(rig, PoseWalkRequest(keys, [4, 3]))
    motion = result.motion
    assert motion.frame_count == 4 + 3 + 1 and motion.joint_count == rig.joint_count
    assert np.isfinite(motion.rotations).all()
    for key, at in enumerate((0, 4, 7)):
        assert rotation_angles(motion.rotations[at], keys.rotations[key]).max() < 1.0
    assert bone_length_error(rig, motion).max_error < 1e-5
    latent = pose_client.walk_poses(rig, PoseWalkRequest(keys, [4, 3], method="latent")).motion
    assert latent.frame_count == 8
    for key, at in enumerate((0, 4, 7)):
        assert rotation_angles(latent.rotations[at], keys.rotations[key]).max() < 1.0
    # Keeping to the keys' own ranges: every in-between inside them, the keys as they were.
    ranges = JointLimits.from_motion(rig, keys, margin=0.0)
    kept = pose_client.walk_poses(rig, PoseWalkRequest(keys, [4, 3], ranges=ranges)).motion
    for key, at in enumerate((0, 4, 7)):
        assert rotation_angles(kept.rotations[at], keys.rotations[key]).max() < 1.0
    inside = JointLimits.from_motion(rig, kept, margin=0.0)
    assert (inside.swing <= ranges.swing + 1e-5).all() and (inside.twist <= ranges.twist + 1e-5).all()


def test_project_pose_not_relative_reposes_more(pose_client, creature):
    """Project Pose (relative False) is the prior's own answer; a drag's edit is relative to the
    pose: with the same handles, the relative one changes the rest of the body less."""
    rig = creature.rig
    rest = Motion.rest(rig)
    feet = rig.foot_candidates()
    heads = joint_positions(rig, rest)[0]
    targets = {int(feet[0]): heads[int(feet[0])] + np.array([0.0, -0.05, 0.05]) * rig.body_size}
    relative = pose_client.project_pose(rig, PoseProjectRequest(rest, targets)).motion
    absolute = pose_client.project_pose(rig, PoseProjectRequest(rest, targets, relative=False)).motion
    moved_relative = rotation_angles(relative.rotations[0], rest.rotations[0]).mean()
    moved_absolute = rotation_angles(absolute.rotations[0], rest.rotations[0]).mean()
    assert moved_relative < moved_absolute


# ----------------------------------------------------------------------------- mesh_key
def test_mesh_key_round_trip(pose_client, creature, frame, monkeypatch):
    result, _, _ = drag_paw(pose_client, creature, frame, mesh=creature.mesh)
    key = result.mesh_key
    assert isinstance(key, str) and key and result.reached
    sent = []
    request = pose_client.request

    def recording(method, path, body=None, timeout=None):
        sent.append(body)
        return request(method, path, body, timeout)

    monkeypatch.setattr(pose_client, "request", recording)
    # The key alone: the mesh is not sent again.
    again, _, _ = drag_paw(pose_client, creature, frame, mesh=creature.mesh, mesh_key=key)
    assert again.mesh_key == key and again.reached
    assert len(sent) == 1 and "mesh" not in sent[0] and sent[0]["mesh_key"] == key
    # A key the backend does not hold: a clear error, or (the mesh at hand) the mesh sent again.
    with pytest.raises(BackendError) as info:
        drag_paw(pose_client, creature, frame, mesh_key="f" * 64)
    assert info.value.status == UNKNOWN_MESH_KEY_STATUS
    assert "mesh_key" in info.value.message and "send the mesh" in info.value.message
    sent.clear()
    resent, _, _ = drag_paw(pose_client, creature, frame, mesh=creature.mesh, mesh_key="f" * 64)
    assert resent.mesh_key == key and [("mesh" in b) for b in sent] == [False, True]


# ----------------------------------------------------------------------------- bad input
def refused(call, field: str) -> str:
    with pytest.raises(BackendError) as info:
        call()
    assert info.value.status is not None and 400 <= info.value.status < 500, info.value.message
    assert field in info.value.message, info.value.message
    return info.value.message


def test_bad_pose_requests_are_refused_naming_the_field(pose_client, creature):
    rig = creature.rig
    rest = Motion.rest(rig)
    paw = rig.names.index(PAW)
    point = joint_positions(rig, rest)[0][paw]
    J = rig.joint_count

    def project(request):
        return pose_client.project_pose(rig, request)

    def sample(request):
        return pose_client.sample_poses(rig, request)

    def walk(request):
        return pose_client.walk_poses(rig, request)

    refused(lambda: project(PoseProjectRequest(rest, {J + 5: point})), "targets.joints")
    refused(lambda: project(PoseProjectRequest(rest, {paw: point}, pins=[-1])), "pins")
    refused(lambda: project(PoseProjectRequest(rest, {paw: [np.nan, 0.0, 0.0]})), "targets.points")
    refused(lambda: project(PoseProjectRequest(rest, {})), "targets.joints")
    refused(lambda: project(PoseProjectRequest(rest, {paw: point}, strength=0.0)), "strength")
    wrong = JointLimits(np.ones(J - 1), np.ones(J - 1))
    refused(lambda: project(PoseProjectRequest(rest, {paw: point}, ranges=wrong)), "ranges.swing")
    negative = JointLimits(np.ones(J), -np.ones(J))
    refused(lambda: project(PoseProjectRequest(rest, {paw: point}, ranges=negative)), "ranges.twist")
    short = Motion(30.0, rest.root_positions, quat_identity((1, J - 1)))
    refused(lambda: project(PoseProjectRequest(short, {paw: point})), "pose.rotations")
    refused(lambda: project(PoseProjectRequest(Motion.rest(rig, 2), {paw: point})), "pose")
    refused(lambda: sample(PoseSampleRequest(rest, count=0)), "count")
    refused(lambda: sample(PoseSampleRequest(rest, count=65)), "count")
    refused(lambda: sample(PoseSampleRequest(short, count=2)), "pose.rotations")
    refused(lambda: walk(PoseWalkRequest(rest, [])), "keys")
    refused(lambda: walk(PoseWalkRequest(Motion.rest(rig, 2), [3, 3])), "frames")
    refused(lambda: walk(PoseWalkRequest(Motion.rest(rig, 2), [0])), "frames")
    refused(lambda: walk(PoseWalkRequest(Motion.rest(rig, 2), [5000])), "frames")
    refused(lambda: walk(PoseWalkRequest(Motion.rest(rig, 2), [3], ranges=wrong)), "ranges.swing")
    body = pose_project_to_json(rig, PoseProjectRequest(rest, {paw: point}))
    refused(lambda: pose_client.request("POST", "/pose/project", {**body, "bogus": 1}), "bogus")
    refused(lambda: pose_client.request("POST", "/pose/project", {**body, "mesh_key": 7}), "mesh_key")
    # Still serving.
    assert pose_client.health()["status"] == "ok"
    assert project(PoseProjectRequest(rest, {paw: point})).motion.frame_count == 1


def test_a_missing_pose_prior_is_a_clear_503(tmp_path):
    from kirin.models.server.jobs import JobError
    from kirin.models.server.pose import PoseService

    service = PoseService(tmp_path)
    assert service.info()["available"] is False
    with pytest.raises(JobError) as info:
        service.prior()
    assert info.value.status == 503 and str(tmp_path) in info.value.message


# ----------------------------------------------------------------------------- any size (issue 31)
def test_a_256_bone_rig_is_dragged_and_a_257_bone_one_refused(pose_client):
    """Over HTTP with the shipped prior: a 256-bone biped (fingers, twist bones, a face) with its mesh,
    fingers curled, gets its hand dragged to a target; the fingers come along curled. One bone more
    is refused with a message that says how many Kirin handles."""
    from kirin.benchmarks.big_rig import big_creature
    from kirin.kirin_addon.core.rotations import quat_from_axis_angle

    creature = big_creature("biped", 1)
    rig = creature.rig
    rotations = quat_identity((1, rig.joint_count))
    fingers = creature.extras["fingers"]
    rotations[0, fingers] = quat_from_axis_angle(np.array([1.0, 0.0, 0.0]), np.radians(30.0))
    curled = Motion(30.0, rig.heads[rig.main_root][None], rotations)
    hand = creature.limbs_of("arm")[0].joints[-1]
    before = joint_positions(rig, curled)[0]
    target = before[hand] + np.array([0.0, -0.1, -0.15])
    result = pose_client.project_pose(rig, PoseProjectRequest(curled, {hand: target}), mesh=creature.mesh)
    assert result.motion.joint_count == 256 and result.reached, result.message
    after = joint_positions(rig, result.motion)[0]
    assert np.linalg.norm(after[hand] - target) < 0.02 * rig.body_size
    # The prior corrects the finger bones it sees by a few degrees at most; the curl stays.
    assert rotation_angles(result.motion.rotations[0, fingers], rotations[0, fingers]).max() < 5.0
    bigger = big_creature("biped", 1, total=257)
    with pytest.raises(BackendError, match="rig.names.*at most 256.*257") as refused:  # the add-on says
        pose_client.project_pose(bigger.rig, PoseProjectRequest(Motion.rest(bigger.rig), {hand: target}))
    assert 400 <= refused.value.status < 500  # it first (read_rig: "257 bones; Kirin handles at most 256")
