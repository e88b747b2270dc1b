"""The creature and motion library: procedural families, gait and action controllers, captions, ingest of
authored clips, gait calibration and previews."""
