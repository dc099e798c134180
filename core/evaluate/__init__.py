"""Scoring a space on a task: cosine per pair, correlations, STS with a calibrator."""
