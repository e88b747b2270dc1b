"""The motion diffusion model: denoiser, losses, training, retrieval and the generator."""
