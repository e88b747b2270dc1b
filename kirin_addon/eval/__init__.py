"""Measuring motion: contacts, skating, penetration, jitter, gait statistics, plausibility bounds."""
