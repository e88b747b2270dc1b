"""The pose prior: its network, data, training loop, ONNX export, DDIM inversion and the shipped
weights' operations (sample, project, walk) on a rig it never saw."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from cache_support import small_cache

from kirin.kirin_addon.core.motion import Motion, forward_kinematics
from kirin.kirin_addon.library.build import BuildConfig
from kirin.kirin_addon.library.families.build import build_creature
from kirin.kirin_addon.pose.pipeline import PosePipeline, ProjectOptions, frame_shares
from kirin.kirin_addon.pose.posed import PoseSpaceError, pose_from_motion, pose_to_motion
from kirin.kirin_addon.pose.space import JointLimits, normalised_positions, random_valid_poses
from kirin.models.data.cache import FeatureCache
from kirin.models.diffusion import DDIMOptions, Diffusion
from kirin.models.onnx import OnnxDenoiser
from kirin.models.pose.config import PoseDenoiserConfig, PoseTrainConfig
from kirin.models.pose.data import build_pose_bank, keep_moving_frames, load_pose_bank, save_pose_bank
from kirin.models.pose.denoiser import POSE_INPUTS, PoseDenoiser
from kirin.models.pose.export import POSE_ONNX_INPUTS, export_pose_onnx, pose_example_inputs
from kirin.models.pose.sampler import DEFAULT_POSE_MODEL, PosePrior
from kirin.models.pose.train import train_pose_prior

SMALL = PoseDenoiserConfig(width=32, heads=2, layers=2, ffn=64)


def test_padding_does_not_change_real_joints():
    torch.manual_seed(0)
    net = PoseDenoiser(SMALL).eval()
    example = pose_example_inputs(net, batch=1, joints=5)
    inputs = {k: example[k] for k in POSE_INPUTS}
    x = torch.randn(1, 5, 6)
    t = torch.tensor([300])
    padded = {k: v for k, v in inputs.items()}
    pad = 3
    padded["geometry"] = torch.cat([inputs["geometry"], torch.randn(1, pad, SMALL.geometry)], 1)
    padded["skin"] = torch.cat([inputs["skin"], torch.randn(1, pad, SMALL.skin)], 1)
    padded["names"] = torch.cat([inputs["names"], torch.randn(1, pad, SMALL.text_dim)], 1)
    hops = torch.full((1, 5 + pad, 5 + pad), SMALL.max_hops)
    hops[:, :5, :5] = inputs["hops"]
    edges = torch.full((1, 5 + pad, 5 + pad), SMALL.edge_types - 1)
    edges[:, :5, :5] = inputs["edges"]
    padded["hops"], padded["edges"] = hops, edges
    padded["joint_mask"] = torch.cat(
        [torch.ones(1, 5, dtype=torch.bool), torch.zeros(1, pad, dtype=torch.bool)], 1
    )
    with torch.no_grad():
        plain = net(x, t, **inputs)
        with_padding = net(torch.cat([x, torch.randn(1, pad, 6)], 1), t, **padded)
    assert torch.allclose(plain, with_padding[:, :5], atol=1e-5)


def test_onnx_export_agrees_with_torch(tmp_path):
    torch.manual_seed(1)
    net = PoseDenoiser(SMALL).eval()
    path = export_pose_onnx(net, tmp_path / "pose.onnx")
    runner = OnnxDenoiser(path, inputs=POSE_ONNX_INPUTS)
    for joints in (3, 17):
        example = pose_example_inputs(net, batch=2, joints=joints)
        with torch.no_grad():
            expected = net(**example)
        assert torch.allclose(runner(**example), expected, atol=1e-4)


def test_ddim_inversion_round_trips_with_an_exact_predictor():
    diffusion = Diffusion(1000)
    target = torch.randn(2, 7, 6)

    def oracle(x, t, _on):
        return target.clone()

    for strength in (1.0, 0.5):
        noise = diffusion.invert_ddim(oracle, target, steps=10, strength=strength)
        assert not torch.allclose(noise, target, atol=1e-2)  # it did climb the schedule
        options = DDIMOptions(10, strength=strength)
        back = diffusion.sample_ddim(oracle, tuple(target.shape), options, noise=noise)
        assert torch.allclose(back, target, atol=1e-5)


def test_walk_shares_round_as_the_samplers_linspace_did():
    for count in range(1, 2001):
        expected = torch.linspace(0.0, 1.0, count + 1).numpy()
        assert np.array_equal(frame_shares(count, last=True), expected), count
        assert np.array_equal(frame_shares(count, last=False), expected[:-1]), count


def test_static_frames_are_filtered():
    still = np.zeros((50, 4, 3))
    assert list(keep_moving_frames(still, 0.02)) == [0]
    moving = np.zeros((5, 2, 3))
    moving[:, 0, 0] = np.arange(5) * 0.05
    assert list(keep_moving_frames(moving, 0.02)) == [0, 1, 2, 3, 4]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("pose")
    cache = small_cache(
        root, BuildConfig(clips=16, seed=5, clips_per_creature=4, min_frames=30, max_frames=40, workers=1)
    )
    bank = build_pose_bank(FeatureCache(cache))
    save_pose_bank(bank, root / "bank.npz")
    config = PoseTrainConfig(
        data=[str(cache)],
        out=str(root / "run"),
        batch=8,
        steps=3,
        checkpoint_every=3,
        log_every=1,
        model=SMALL,
    )
    summary = train_pose_prior(config, root / "bank.npz", progress=False)
    return root, bank, config, summary


def test_pose_bank_and_training(trained):
    root, bank, config, summary = trained
    assert bank and all(len(b.poses) >= 1 for b in bank)
    assert all(np.isfinite(b.poses).all() and b.poses.shape[-1] == 6 for b in bank)
    loaded = load_pose_bank(root / "bank.npz")
    assert [b.name for b in loaded] == [b.name for b in bank]
    assert np.array_equal(loaded[0].poses, bank[0].poses)
    assert np.allclose(loaded[0].limits.swing, bank[0].limits.swing)
    assert summary["step"] == 3
    assert (root / "run" / "weights" / "pose_denoiser.safetensors").exists()
    # Resuming continues from the checkpoint's step.
    config.steps = 5
    assert train_pose_prior(config, root / "bank.npz", progress=False)["step"] == 5
    pipeline = PosePipeline(PosePrior.load(root / "run" / "weights", backend="torch"))
    posed = pipeline.prepare(build_creature("biped", 2).rig)
    poses = pipeline.sample(posed, 3, steps=4)
    assert poses.shape == (3, posed.joint_count, 3, 3) and np.isfinite(poses).all()


# ----------------------------------------------------------------------------- the shipped prior
shipped = pytest.mark.skipif(not (DEFAULT_POSE_MODEL / "model.json").exists(), reason="no shipped pose prior")


@pytest.fixture(scope="module")
def prior():
    """Pose Space's pipeline given the shipped prior."""
    torch.set_num_threads(1)
    return PosePipeline(PosePrior.load())


@pytest.fixture(scope="module")
def creature(prior):
    rig = build_creature("quadruped", 77).rig  # a seed outside the training library's creatures
    posed = prior.prepare(rig)
    return rig, posed, pose_from_motion(posed, Motion.rest(rig))


@shipped
def test_user_rig_round_trip(prior, creature):
    rig, posed, _ = creature
    rng = np.random.default_rng(0)
    axis = rng.normal(size=(rig.joint_count, 3))
    from kirin.kirin_addon.core.rotations import quat_from_axis_angle

    motion = Motion(
        30.0,
        rig.heads[rig.main_root][None] + 0.1,
        quat_from_axis_angle(axis, rng.uniform(0, 0.5, rig.joint_count))[None],
    )
    back = pose_to_motion(posed, [pose_from_motion(posed, motion)])
    assert np.allclose(forward_kinematics(rig, back), forward_kinematics(rig, motion), atol=1e-8)


@shipped
def test_shipped_onnx_and_torch_agree(prior, creature):
    _, posed, _ = creature
    torch_prior = PosePipeline(PosePrior.load(backend="torch"))
    a = prior.sample(posed, 2, seed=3)
    b = torch_prior.sample(posed, 2, seed=3)
    assert np.abs(a - b).max() < 1e-3


@shipped
def test_samples_are_plausible_and_varied(prior, creature):
    _, posed, pose = creature
    skeleton = posed.skeleton
    samples = prior.sample(posed, 32, seed=1)
    assert np.isfinite(samples).all()
    positions = normalised_positions(skeleton, samples)
    assert positions.std(axis=0).mean() > 1e-3  # not one pose
    # Far less violent than random rotations inside generous limits.
    wild = random_valid_poses(
        skeleton, JointLimits.default(skeleton), 32, np.random.default_rng(1), root_tilt=True
    )
    spread = np.linalg.norm(positions - normalised_positions(skeleton, pose.deltas), axis=-1).mean()
    wild_spread = np.linalg.norm(
        normalised_positions(skeleton, wild) - normalised_positions(skeleton, pose.deltas), axis=-1
    ).mean()
    assert spread < wild_spread


@shipped
def test_projection_meets_handles_and_pins(prior, creature):
    rig, posed, pose = creature
    feet = rig.foot_candidates()
    foot, pinned = int(feet[0]), int(feet[-1])
    positions = posed.skeleton.positions(pose.deltas) + pose.root
    target = positions[foot] + np.array([0.0, -0.12, 0.1])
    result = prior.project(posed, pose, {foot: target}, pins=[pinned])
    assert result.reached and result.handle_error.max() < 0.02, result.message
    moved = posed.skeleton.positions(result.pose.deltas) + result.pose.root
    assert np.linalg.norm(moved[foot] - target) < 0.02
    assert np.linalg.norm(moved[pinned] - positions[pinned]) < 0.02
    # Deterministic: the same drag gives the same pose (a drag must not flicker).
    again = prior.project(posed, pose, {foot: target}, pins=[pinned])
    assert np.allclose(again.pose.deltas, result.pose.deltas)


@shipped
def test_absurd_targets_are_refused(prior, creature):
    rig, posed, pose = creature
    head = int(np.argmax(posed.skeleton.heads[:, 2]))
    positions = posed.skeleton.positions(pose.deltas) + pose.root
    below = positions[:, 2].min() - 0.5
    result = prior.project(posed, pose, {head: np.array([positions[head, 0], positions[head, 1], below])})
    assert not result.reached
    assert "reach" in result.message
    assert np.isfinite(result.pose.deltas).all()
    with pytest.raises(PoseSpaceError, match="not in the rig"):
        prior.project(posed, pose, {rig.joint_count + 3: positions[0]})
    with pytest.raises(PoseSpaceError, match="at least one"):
        prior.project(posed, pose, {})


@shipped
def test_walk_passes_through_the_keys(prior, creature):
    rig, posed, pose = creature
    foot = int(rig.foot_candidates()[0])
    positions = posed.skeleton.positions(pose.deltas) + pose.root
    other = prior.project(posed, pose, {foot: positions[foot] + np.array([0.0, -0.15, 0.12])}).pose
    frames = prior.walk(posed, [pose, other, pose], [6, 4])
    assert len(frames) == 11
    for index, key in ((0, pose), (6, other), (10, pose)):
        assert np.abs(frames[index].deltas - key.deltas).max() < 1e-3
    steps = [
        np.abs(
            normalised_positions(posed.skeleton, a.deltas) - normalised_positions(posed.skeleton, b.deltas)
        ).max()
        for a, b in zip(frames[:-1], frames[1:], strict=True)
    ]
    assert max(steps) < 0.2  # no jumps between in-betweens
    with pytest.raises(PoseSpaceError, match="two or more"):
        prior.walk(posed, [pose], [])


@shipped
def test_the_prior_learns_each_rigs_stiffness_and_keeps_the_rest_of_a_drag(prior, creature):
    rig, posed, pose = creature
    prior.learn_rig(posed)
    assert posed.stiffness.shape == (rig.joint_count,) and (posed.stiffness > 0).all()
    assert posed.limits.swing.shape == (rig.joint_count,)
    # The samples bend legs more than the trunk: the root (and its stiffness factor) resists most.
    assert posed.stiffness[rig.main_root] > np.median(posed.stiffness)
    feet = rig.foot_candidates()
    foot = int(feet[0])
    positions = posed.skeleton.positions(pose.deltas) + pose.root
    target = positions[foot] + np.array([0.0, -0.08, 0.06])
    relative = prior.project(posed, pose, {foot: target})
    absolute = prior.project(posed, pose, {foot: target}, options=ProjectOptions(relative=False))
    chain = posed.skeleton.ancestors[foot] | (np.arange(rig.joint_count) == foot)
    away = ~chain
    local = posed.skeleton.local_rotations

    def change(result):
        cosine = (
            np.trace(np.swapaxes(local(result.pose.deltas), -1, -2) @ local(pose.deltas), axis1=-2, axis2=-1)
            - 1
        ) / 2
        return np.degrees(np.arccos(np.clip(cosine, -1, 1)))[away]

    # A drag leaves what it need not touch nearly as it was; Project Pose may re-pose it all.
    assert change(relative).mean() < change(absolute).mean()
    assert np.median(change(relative)) < 2.0


@shipped
def test_projection_keeps_to_the_rigs_own_ranges(prior, creature):
    rig, posed, pose = creature
    skeleton = posed.skeleton
    # The rig's "actions": a few of its plausible poses; their ranges are what a drag keeps to.
    actions = np.concatenate([prior.sample(posed, 8, seed=5), pose.deltas[None]])
    ranges = JointLimits.from_poses(skeleton, actions)
    positions = skeleton.positions(pose.deltas) + pose.root
    feet = rig.foot_candidates()
    rng = np.random.default_rng(2)
    free, kept = [], []
    for k in range(6):
        foot = int(feet[k % len(feet)])
        direction = rng.normal(size=3)
        target = {foot: positions[foot] + 0.2 * direction / np.linalg.norm(direction)}
        free.append(prior.project(posed, pose, target, options=ProjectOptions(seed=k)))
        kept.append(prior.project(posed, pose, target, ranges=ranges, options=ProjectOptions(seed=k)))
    excess = lambda results: sum(ranges.excess(skeleton, r.pose.deltas).sum() for r in results)  # noqa: E731
    assert excess(kept) < 0.6 * excess(free)
    # The turn went to joints with room: the handles are still (nearly) met.
    error = lambda results: np.mean([r.handle_error.max() for r in results])  # noqa: E731
    assert error(kept) < error(free) + 0.03


@shipped
def test_walk_keeps_its_in_betweens_inside_the_rigs_ranges(prior, creature):
    rig, posed, pose = creature
    skeleton = posed.skeleton
    foot = int(rig.foot_candidates()[0])
    positions = skeleton.positions(pose.deltas) + pose.root
    other = prior.project(posed, pose, {foot: positions[foot] + np.array([0.0, -0.15, 0.12])}).pose
    free = prior.walk(posed, [pose, other], [8])
    ranges = JointLimits.from_poses(skeleton, np.stack([pose.deltas, other.deltas]), margin=0.0)
    between = np.stack([p.deltas for p in free[1:-1]])
    assert ranges.violations(skeleton, between).any()  # the prior alone leaves the keys' ranges
    kept = prior.walk(posed, [pose, other], [8], ranges=ranges)
    sampled = prior.sample(posed, 4, seed=2, ranges=ranges)
    assert not ranges.violations(skeleton, sampled, tolerance=1e-6).any()
    assert not ranges.violations(skeleton, np.stack([p.deltas for p in kept[1:-1]]), tolerance=1e-6).any()
    for index, key in ((0, pose), (8, other)):
        assert np.abs(kept[index].deltas - key.deltas).max() < 1e-3


@shipped
def test_latent_walk_also_passes_through_the_keys(prior, creature):
    rig, posed, pose = creature
    other = prior.project(
        posed,
        pose,
        {
            int(rig.foot_candidates()[0]): posed.skeleton.positions(pose.deltas)[
                int(rig.foot_candidates()[0])
            ]
            + pose.root
            + np.array([0.0, -0.1, 0.1])
        },
    ).pose
    frames = prior.walk(posed, [pose, other], [5], method="latent")
    assert len(frames) == 6
    assert np.abs(frames[0].deltas - pose.deltas).max() < 1e-3
    assert np.abs(frames[-1].deltas - other.deltas).max() < 1e-3
    with pytest.raises(PoseSpaceError, match="Unknown walk method"):
        prior.walk(posed, [pose, other], [5], method="linear")
