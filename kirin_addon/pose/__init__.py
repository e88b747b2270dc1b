"""Pose Space on the engine side: static poses, kinematics, IK with handles, joint limits."""
