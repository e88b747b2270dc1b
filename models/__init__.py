"""Kirin's neural networks (text/image encoders, motion diffusion, pose prior) and their training
and export. Torch is imported only here and in the backend; nothing is shipped yet."""
