"""Nearest neighbours: exact top-k, the one overlap@k, the FAISS index, 2-D/3-D maps and what a UMAP map costs."""
