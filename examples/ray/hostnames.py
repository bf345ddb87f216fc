"""A Ray driver for ray-cluster.sbatch: one task pinned to each node of the cluster
reports the host it ran on, with the CPUs and GPUs Ray has there.

    sbatch -N3 --ntasks-per-node=1 -c4 --gres=gpu:2 ray-cluster.sbatch hostnames.py
"""

import os
import socket

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy


@ray.remote(num_cpus=1)
def where():
    return socket.gethostname(), os.environ.get("CUDA_VISIBLE_DEVICES", "")


ray.init(address=os.environ.get("RAY_ADDRESS", "auto"), log_to_driver=False)
nodes = [n for n in ray.nodes() if n["Alive"]]
found = ray.get(
    [
        where.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
        ).remote()
        for n in nodes
    ]
)
for node, (host, _) in sorted(zip(nodes, found), key=lambda p: p[1][0]):
    r = node["Resources"]
    print(f"task ran on {host}: CPU={r.get('CPU', 0):g} GPU={r.get('GPU', 0):g}")
print(f"cluster: CPU={ray.cluster_resources().get('CPU', 0):g} "
      f"GPU={ray.cluster_resources().get('GPU', 0):g} nodes={len(nodes)}")
