"""JupyterHub's real batchspawner.SlurmSpawner (unmodified) driven through the cluster's
commands on PATH (sbatch, squeue, scancel), the way JupyterHub drives a spawner: start(),
then poll() while the server runs, then stop(), then poll() again.

The Hub itself is reduced to what the spawner and the job talk to: a user, the Hub's
address, a database session it commits to, and the one Hub API call batchspawner's
single-user wrapper makes (POST /hub/api/batchspawner {"port": N}, with the server's
token), served here as batchspawner.api's handler does: it sets the spawner's port.

Prints one JSON object per line on stdout, what the spawner saw at each point:
  {"event": "submitted", "job_id": ...}         (from the spawner's own job_id)
  {"event": "started", "ip": ..., "port": ..., "status": ..., "seen": [every status, in order]}
  {"event": "answered", "url": ...}             (the server's /api/status, token-authenticated)
  {"event": "poll", "result": ..., "status": ...}
  {"event": "stopped", "result": ..., "status": ...}

usage: slurmspawner.py HUB_IP WORKDIR PARTITION OPTIONS [SERVER_ARGS...]
  (OPTIONS: the spawner's req_options, more sbatch options; it asks for one GPU)
"""

import asyncio
import json
import os
import secrets
import sys
import time
import types
import urllib.request

from batchspawner import SlurmSpawner
from jupyterhub.objects import Hub
from tornado import httpserver, netutil, web


def say(**event):
    print(json.dumps(event), flush=True)


class BatchSpawnerApi(web.RequestHandler):
    """What batchspawner.api.BatchSpawnerAPIHandler does, for the one spawner: the
    token identifies the spawner, the body's keys are set on it."""

    def initialize(self, spawner):
        self.spawner = spawner

    def post(self):
        token = self.request.headers.get("Authorization", "").removeprefix("token ")
        if token != self.spawner.api_token:
            raise web.HTTPError(403)
        for key, value in json.loads(self.request.body).items():
            if hasattr(self.spawner, key):
                setattr(self.spawner, key, value)
        self.set_status(201)
        self.finish(json.dumps({"message": "BatchSpawner data configured"}))


async def main(hub_ip, workdir, partition, options, server_args):
    user = types.SimpleNamespace(name="root", escaped_name="root", url="/user/root/")
    token = secrets.token_hex(16)
    hub = Hub(ip=hub_ip, port=0, base_url="/hub/", public_host="")
    spawner = SlurmSpawner(
        user=user,
        hub=hub,
        db=types.SimpleNamespace(commit=lambda: None),
        api_token=token,
        oauth_client_id="jupyterhub-user-root",
        # The jobs run as the Hub's own user (no sudo to another one), with the lab's
        # Python: its wrapper run as a module, the server found on PATH as batchspawner
        # finds it.
        exec_prefix="",
        req_homedir=workdir,
        req_partition=partition,
        req_runtime="10",
        req_options=options,
        req_gres="gpu:1",
        batchspawner_singleuser_cmd="python -m batchspawner.singleuser",
        cmd=["jupyter-server"],
        args=["--ip=0.0.0.0", f"--IdentityProvider.token={token}", *server_args],
        startup_poll_interval=0.25,
        environment={
            # The server is plain jupyter-server (JupyterHub's own single-user server
            # needs the Hub's OAuth, which is no business of the cluster's): without a
            # service URL, batchspawner's wrapper gives it its port on the command line,
            # as for JupyterHub before 2.0.
            "JUPYTERHUB_SERVICE_URL": "",
            "JUPYTER_CONFIG_DIR": f"{workdir}/.jupyter",
            "JUPYTER_DATA_DIR": f"{workdir}/.local/share/jupyter",
            "JUPYTER_RUNTIME_DIR": "/tmp/jupyter-runtime",
        },
    )
    # What a site's Hub keeps for its spawner (JupyterHub 5 keeps nothing by default):
    # PATH, where the cluster's commands and the job's Python are, and SLURM_CONF.
    spawner.env_keep = [*spawner.env_keep, "PATH", "SLURM_CONF", "XDG_STATE_HOME"]
    app = web.Application(
        [(r"/hub/api/batchspawner", BatchSpawnerApi, {"spawner": spawner})]
    )
    server = httpserver.HTTPServer(app)
    [sock] = netutil.bind_sockets(0, hub_ip)
    server.add_sockets([sock])
    hub.port = sock.getsockname()[1]

    # JupyterHub's own start timeout wraps start(); so does this.
    submitted = time.monotonic()
    task = asyncio.ensure_future(spawner.start())
    # Every job status start() reads from squeue, in order (it polls every 0.25 s).
    seen = []

    async def watch():
        while True:
            if spawner.job_status and spawner.job_status not in seen[-1:]:
                seen.append(spawner.job_status)
            await asyncio.sleep(0.02)

    watcher = asyncio.ensure_future(watch())
    while not spawner.job_id and not task.done():
        await asyncio.sleep(0.05)
    say(event="submitted", job_id=spawner.job_id)
    ip, port = await asyncio.wait_for(task, 120)
    watcher.cancel()
    say(event="started", ip=ip, port=port, status=spawner.job_status, seen=seen)

    url = f"http://{ip}:{port}/api/status"
    while True:
        try:
            req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(req, timeout=2) as r:
                body = json.load(r)
            break
        except OSError:
            if time.monotonic() - submitted > 60:
                raise
            await asyncio.sleep(0.1)
    say(
        event="answered",
        url=url,
        seconds=round(time.monotonic() - submitted, 2),
        started=body.get("started") is not None,
    )

    result = await spawner.poll()
    say(event="poll", result=result, status=spawner.job_status)
    await spawner.stop()
    result = await spawner.poll()
    say(event="stopped", result=result, status=spawner.job_status, job_id=spawner.job_id)
    server.stop()


if __name__ == "__main__":
    hub_ip, workdir, partition, options, *server_args = sys.argv[1:]
    os.makedirs(workdir, exist_ok=True)
    asyncio.run(main(hub_ip, workdir, partition, options, server_args))
