# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""A site's alert webhook, stood in for the lab (test only): every POST body Alertmanager sends is one
JSON line in the log file, with the time it arrived. Usage: webhook_standin.py <port> <log file>."""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


def main() -> int:
    port, log = int(sys.argv[1]), sys.argv[2]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                payload = json.loads(body)
            except ValueError:
                payload = {"unparsed": body.decode(errors="replace")}
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"received": time.time(), "path": self.path, "payload": payload}) + "\n")
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    HTTPServer(("127.0.0.1", port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
