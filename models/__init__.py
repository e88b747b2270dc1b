"""Kirin's neural networks (text/image encoders, motion diffusion, pose prior, video fit, template fit),
their training and export, and their shipped weights (models/weights/, each with a model card). Torch is
imported only here and in the backend's server."""
