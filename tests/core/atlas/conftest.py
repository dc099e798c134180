"""The ray engine's test modules share a two-node Ray cluster on this machine (their helpers: ray_support)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def cluster():
    """Two Ray nodes of one CPU each on this machine, shared by the module (Ray is slow to start on 2 cores)."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    c.add_node(num_cpus=1)
    ray.init(address=c.address, log_to_driver=False)
    yield c
    ray.shutdown()
    c.shutdown()
