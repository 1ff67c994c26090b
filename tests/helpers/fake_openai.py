"""A scripted OpenAI-compatible chat server at the HTTP edge, for what a healthy server never does (garbage, hangs,
mid-stream errors) and for battles whose answers are known in advance."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    """A scripted chat-completions server. Model names choose the behaviour:

        ``echo`` streams back the roles and contents it was sent; ``fixed`` says "Hello there, friend.";
        ``counter`` says "answer N" (N counts requests); ``slow`` streams 10 words 0.05 s apart; ``hang`` sleeps
        before answering; ``gate`` holds its answer until ``gate`` is set (at most 60 s), then says "Hello there,
        friend."; ``garbage`` answers plain text; ``badjson`` sends a broken data line; ``midfail`` sends an
        error object after one word; ``http500`` fails; ``sunny`` says "I am Sunny, your helper."; ``sampler`` says the
    temperature and seed it was asked for ("t=0.3 seed=12").
        ``POST .../load_lora_adapter`` is recorded in ``loras`` (vLLM's runtime LoRA endpoint).
    """

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.loras: list[dict] = []
        self.counter = 0
        self.hang_s = 3.0
        self.gate = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                self._send(200, "application/json", json.dumps({"data": [{"id": "echo"}]}).encode())

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                body["_auth"] = self.headers.get("Authorization")
                if self.path.endswith("/load_lora_adapter"):
                    fake.loras.append(body)
                    return self._send(200, "text/plain", b"Success: LoRA adapter loaded")
                fake.requests.append(body)
                model = body.get("model", "")
                if model == "http500":
                    return self._send(500, "application/json", b'{"error": "boom at /secret/path"}')
                if model == "garbage":
                    return self._send(200, "text/plain", b"this is not an event stream")
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                if model == "hang":
                    time.sleep(fake.hang_s)
                if model == "gate":
                    fake.gate.wait(60)
                if model == "badjson":
                    return self._write("data: {not json\n\n")
                words = fake._words(model, body)
                for i, w in enumerate(words):
                    chunk = {"choices": [{"index": 0, "delta": {"content": w}}]}
                    self._write(f"data: {json.dumps(chunk)}\n\n")
                    if model == "midfail" and i == 0:
                        return self._write('data: {"error": {"message": "engine crashed"}}\n\n')
                    if model == "slow":
                        time.sleep(0.05)
                self._write("data: [DONE]\n\n")

            def _write(self, text):
                try:
                    self.wfile.write(text.encode())
                    self.wfile.flush()
                except OSError:
                    pass

            def _send(self, code, ctype, data):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _words(self, model: str, body: dict) -> list[str]:
        if model == "echo":
            return [f"{m['role']}={m['content']}; " for m in body.get("messages", [])]
        if model == "counter":
            self.counter += 1
            return ["answer ", str(self.counter)]
        if model == "sunny":
            return ["I am ", "Sunny, ", "your helper."]
        if model == "sampler":
            return [f"t={body.get('temperature')} ", f"seed={body.get('seed')}"]
        if model == "slow":
            return [f"w{i} " for i in range(10)]
        return ["Hello ", "there, ", "friend."]

    def config(self, **extra) -> dict:
        return {"base_url": self.url, **extra}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def register_http(
    db,  # type: ignore[no-untyped-def]
    fake: FakeOpenAI,
    name: str,
    model: str,
    *,
    system_prompt: str = "",
    sampling: dict | None = None,
    aliases: tuple[str, ...] | list[str] = (),
    **config,
) -> int:
    """Register a contestant that answers through ``fake`` with the scripted ``model`` behaviour; its id."""
    from vibestudio.arena.registry import ContestantSpec, register

    with db.session() as s:
        return register(
            s,
            ContestantSpec(
                name,
                engine="openai",
                model_ref=model,
                system_prompt=system_prompt,
                aliases=list(aliases),
                engine_config=fake.config(**config),
                sampling=sampling or {"max_tokens": 16},
            ),
        )
