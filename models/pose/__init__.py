"""The pose prior (ViPS): denoiser, training data, training and sampler."""
