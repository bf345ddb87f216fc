"""A Dask driver for dask-cluster.sbatch: one task on each worker reports the host it
ran on, with the worker's threads and GPUs.

    sbatch -N3 --ntasks-per-node=1 -c4 dask-cluster.sbatch hostnames.py
"""

import socket

from distributed import Client

client = Client()  # DASK_SCHEDULER_ADDRESS
workers = client.scheduler_info()["workers"]
futures = {
    addr: client.submit(socket.gethostname, workers=[addr], pure=False)
    for addr in workers
}
for addr, future in sorted(futures.items(), key=lambda p: workers[p[0]]["name"]):
    w = workers[addr]
    gpus = w.get("resources", {}).get("GPU", 0)
    print(f"task ran on {future.result()}: threads={w['nthreads']} GPU={gpus:g}")
client.close()
