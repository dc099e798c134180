"""The services layer: every ``st.cache_resource`` (models, indexes) and ``st.cache_data`` (embeddings,
metrics) wrapper around ``core``, one module per domain, and nothing else. Pages call these, never heavy
``core`` functions directly.

Cached values that stand for arrays or texts carry their cache key with them (``keyed.Vectors``,
``keyed.Texts``): a key and the data it names cannot drift apart, because they are one value.
Long work shows an ``st.progress`` bar created inside the cached function (a cache hit replays nothing).
"""
