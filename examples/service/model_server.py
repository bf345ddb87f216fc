#!/usr/bin/env python3
"""A small stand-in for an OpenAI-style inference server (vLLM's shape), for Sluice's
service jobs: `GET /v1/models` lists one model, `POST /v1/completions` answers,
`GET /health` is 200 while healthy.

Standard library only. Usage: model_server.py --port 8000 [--model NAME]
  [--sick-file PATH]   /health answers 503 while PATH exists (a health failure to
                       provoke from outside)
  [--pid-file PATH]    writes its pid there (to kill it from outside)
Each start appends a line `started PID PORT TIME` to stdout.
"""

import argparse
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    ap.add_argument("--model", default="stand-in-7b")
    ap.add_argument("--sick-file")
    ap.add_argument("--pid-file")
    args = ap.parse_args()
    started = time.time()
    host = os.uname().nodename

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            path = self.path.split("?")[0].rstrip("/")
            if path == "/health":
                if args.sick_file and os.path.exists(args.sick_file):
                    self._send(503, {"status": "sick"})
                else:
                    self._send(200, {"status": "ok"})
            elif path == "/v1/models":
                self._send(200, {
                    "object": "list",
                    "data": [{
                        "id": args.model,
                        "object": "model",
                        "created": int(started),
                        "owned_by": "sluice",
                        # Where this answer came from: tests tell restarts and moves.
                        "pid": os.getpid(),
                        "host": host,
                    }],
                })
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            try:
                req = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, {"error": "bad json"})
                return
            prompt = req.get("prompt", "")
            self._send(200, {
                "object": "text_completion",
                "model": args.model,
                "choices": [{"index": 0, "text": prompt[::-1], "finish_reason": "stop"}],
            })

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("0.0.0.0", args.port), Handler)
    if args.pid_file:
        with open(args.pid_file + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.replace(args.pid_file + ".tmp", args.pid_file)
    print(f"started {os.getpid()} {args.port} {time.time():.3f}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
