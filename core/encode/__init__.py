"""Encoding texts into vectors: models, pooling, batched forward passes, corpora, precision, and their costs."""
