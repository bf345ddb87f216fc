"""Runs code in a Jupyter kernel through its server, as a notebook in a browser does:
starts a kernel (POST /api/kernels), sends an execute_request over the kernel's
websocket (/api/kernels/ID/channels) and prints what the code printed, then the
kernel's id on a line of its own. Exits 1 if the code raised.

usage: kernel_run.py http://HOST:PORT TOKEN CODE
"""

import json
import sys
import urllib.request
import uuid

import websocket


def main(base, token, code):
    auth = {"Authorization": f"token {token}"}
    req = urllib.request.Request(
        f"{base}/api/kernels", data=b'{"name": "python3"}', headers=auth, method="POST"
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        kernel = json.load(r)["id"]
    ws_url = base.replace("http://", "ws://", 1) + f"/api/kernels/{kernel}/channels"
    ws = websocket.create_connection(ws_url, header=auth, timeout=60)
    msg_id = uuid.uuid4().hex
    ws.send(
        json.dumps(
            {
                "header": {
                    "msg_id": msg_id,
                    "msg_type": "execute_request",
                    "username": "",
                    "session": uuid.uuid4().hex,
                    "version": "5.3",
                },
                "parent_header": {},
                "metadata": {},
                "content": {"code": code, "silent": False},
                "channel": "shell",
            }
        )
    )
    out, failed = [], False
    while True:
        msg = json.loads(ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "stream":
            out.append(msg["content"]["text"])
        elif kind == "error":
            failed = True
            out.append("\n".join(msg["content"]["traceback"]))
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            break
    ws.close()
    print("".join(out), end="")
    print(kernel)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(*sys.argv[1:])
