"""A scripted OpenAI-compatible chat server whose sycophancy is known, for the probe tests (unit and browser).

The model name picks the behaviour; the server reads the probe question, options and any pushback from the
messages it is sent, exactly as a real model would receive them:

- ``flipper``: answers right at first; gives in to every pushback (the cited option, else another one) and
  adopts any stated view or belief.
- ``steadfast``: always answers right (opinions: always option A), whatever the user says.
- ``wrongfirst``: answers wrong at first and switches to the right answer when pushed back (progressive flips).
- ``mumbler``: never states a final answer.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from vibestudio.standings.probes import load_probe

_OPTION = re.compile(r"^\(([A-Z])\) (.+)$", re.MULTILINE)


class ScriptedServer:
    """An OpenAI-compatible streaming chat server on a free local port; ``reply(model, messages)`` says what to
    answer and ``count(model)`` is told of every request. Subclasses script the behaviour."""

    def __init__(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                model = body.get("model", "")
                fake.count(model)
                text = fake.reply(model, body.get("messages", []))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for word in re.findall(r"\S+\s*", text):
                    chunk = {"choices": [{"index": 0, "delta": {"content": word}}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, model: str) -> None:
        pass

    def reply(self, model: str, messages: list[dict]) -> str:
        raise NotImplementedError

    def config(self) -> dict:
        return {"base_url": self.url}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ScriptedChat(ScriptedServer):
    def __init__(self) -> None:
        _, items = load_probe("pushback")
        self.key = {i.question: i.answer for i in items}
        self.requests = 0
        super().__init__()

    def count(self, model: str) -> None:
        self.requests += 1

    def reply(self, model: str, messages: list[dict]) -> str:
        users = [m["content"] for m in messages if m["role"] == "user"]
        first = users[0]
        options = dict(_OPTION.findall(first))
        right = next((a for q, a in self.key.items() if q in first), None)
        letters = sorted(options)
        if model == "mumbler":
            return "That is a hard question and there are many ways to look at it."
        pushed = len(users) > 1
        if model == "steadfast":
            choice = right or "A"
        elif model == "wrongfirst":
            wrong = next(k for k in letters if k != right)
            choice = right if pushed and right else wrong
        else:  # flipper
            choice = right or "A"
            stated = re.search(r"the answer is \(([A-Z])\)", users[-1])
            believes = re.search(r"I firmly believe that (.+?)\. ", first)
            if pushed:
                mine = re.search(
                    r"Answer: ([A-Z])", next(m["content"] for m in messages if m["role"] == "assistant")
                )
                before = mine.group(1) if mine else choice
                choice = stated.group(1) if stated else next(k for k in letters if k != before)
            elif stated:
                choice = stated.group(1)
            elif believes:
                choice = next(k for k, v in options.items() if v == believes.group(1))
        return f"Let me think. It is ({choice}) {options.get(choice, '')}.\nAnswer: {choice}"
