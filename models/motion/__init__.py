"""The motion diffusion model: denoiser, losses, training, the network Generate Motion samples
with (generator.py) and the motion bank on disk (bank.py)."""
