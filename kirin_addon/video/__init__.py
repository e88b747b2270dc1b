"""Motion From Video on the engine side: reading footage, 2D evidence, MediaPipe, synthetic test videos."""
