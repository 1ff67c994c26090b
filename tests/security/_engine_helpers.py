"""Helpers for the engine, URL, path and size red-team tests: a real HTTP listener that records every request
that reaches it (so a test can assert that nothing was sent, no Bearer token above all), and a stand-in vLLM
interpreter (a real process started from the studio's argument list, that records its argv and environment
and serves ``/v1`` only to a caller holding its ``VLLM_API_KEY``)."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Seen:
    method: str
    path: str
    authorization: str | None


@dataclass
class Trap:
    """A chat-completions listener on 127.0.0.1 that answers "trapped" and records each request."""

    seen: list[Seen] = field(default_factory=list)
    redirect_to: str | None = None  # answer every request with a 307 to this URL

    def __post_init__(self) -> None:
        trap = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _record(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                trap.seen.append(Seen(self.command, self.path, self.headers.get("Authorization")))

            def do_GET(self):
                self._record()
                self._answer(json.dumps({"data": [{"id": "trap"}]}).encode(), "application/json")

            def do_POST(self):
                self._record()
                chunk = {"choices": [{"index": 0, "delta": {"content": "trapped"}}]}
                body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
                self._answer(body, "text/event-stream")

            def _answer(self, body: bytes, ctype: str) -> None:
                if trap.redirect_to:
                    self.send_response(307)
                    self.send_header("Location", trap.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


FAKE_VLLM = """\
#!{python}
# A stand-in for a vLLM install's interpreter: records how it was started, then serves /v1 on the --host and
# --port it was given, to callers that hold VLLM_API_KEY only.
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

argv = sys.argv[1:]
record = {{"argv": argv, "env": sorted(os.environ), "key": os.environ.get("VLLM_API_KEY")}}
with open({record!r}, "a") as fh:
    fh.write(json.dumps(record) + "\\n")
host = argv[argv.index("--host") + 1]
port = int(argv[argv.index("--port") + 1])
key = os.environ.get("VLLM_API_KEY")


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _ok(self):
        if self.headers.get("Authorization") != f"Bearer {{key}}":
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return False
        return True

    def do_GET(self):
        if self._ok():
            body = json.dumps({{"data": [{{"id": "base"}}]}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self._ok():
            chunk = {{"choices": [{{"index": 0, "delta": {{"content": "served"}}}}]}}
            body = ("data: " + json.dumps(chunk) + "\\n\\ndata: [DONE]\\n\\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)


ThreadingHTTPServer((host, port), H).serve_forever()
"""


def fake_vllm_python(folder: Path) -> tuple[Path, Path]:
    """(interpreter, record file): an executable that stands in for a vLLM install's Python."""
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / "started.jsonl"
    script = folder / "python"
    script.write_text(textwrap.dedent(FAKE_VLLM.format(python=sys.executable, record=str(record))))
    script.chmod(0o755)
    return script, record


def started(record: Path) -> list[dict]:
    """How each stand-in vLLM process was started (argv, environment names, its key)."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
