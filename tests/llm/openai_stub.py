"""A small OpenAI-compatible chat server on 127.0.0.1 that plays a script of behaviours."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


# (status, message) of an error, or (status 200, text, finish_reason) of an answer, for a
# request's body and headers (names lower-cased).
Behaviour = Callable[[dict, dict[str, str]], tuple[int, str, str]]


class ScriptedOpenAIServer:
    """Each POST to /v1/chat/completions takes the next behaviour from the script:
    "400", "401", "429", "500" (error statuses), "429:N" (a 429 with Retry-After: N), "timeout"
    (answers after `slow_s`), "drop" (closes the connection without a response), "empty" (a 200
    with empty content), or any other string, which is returned as the assistant's answer. An
    exhausted script plays `then` (default "500"), after `delay_s`. Each answer's usage is 2
    completion tokens and `prompt_tokens` prompt tokens, or with None, one per four characters
    of the messages (about what a tokenizer counts). With `behaviour`, every request is answered
    by that function of the request instead of a script."""

    def __init__(self, script: list[str], slow_s: float = 3.0, then: str = "500",
                 delay_s: float = 0.0, prompt_tokens: int | None = 11,
                 on_request=None, behaviour: Behaviour | None = None):
        # Called with each request's number (1, 2, ...) before it is answered.
        self.on_request = on_request
        self.script = deque(script)
        self.slow_s = slow_s
        self.then = then
        self.delay_s = delay_s
        self.prompt_tokens = prompt_tokens
        self.behaviour = behaviour
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.times: list[float] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(headers)
                    server.times.append(time.monotonic())
                    action = server.script.popleft() if server.script else None
                    number = len(server.requests)
                if server.on_request is not None:
                    server.on_request(number)
                if server.behaviour is not None:
                    status, text, finish = server.behaviour(body, headers)
                    if status != 200:
                        self.reply(status, {"error": {"message": text,
                                                      "type": "invalid_request_error",
                                                      "code": "invalid_api_key"}})
                    else:
                        self.answer(body, text, finish)
                    return
                if action is None:
                    action = server.then
                    time.sleep(server.delay_s)
                if action == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if action == "timeout":
                    time.sleep(server.slow_s)
                    action = "late answer"
                if action in ("400", "401", "429", "500"):
                    self.reply(int(action), {"error": {"message": f"scripted {action}",
                                                       "type": "server_error"}})
                    return
                if action.startswith("429:"):
                    self.reply(429, {"error": {"message": "scripted 429, slow down",
                                               "type": "rate_limit_error"}},
                               {"Retry-After": action.split(":", 1)[1]})
                    return
                self.answer(body, "" if action == "empty" else action, "stop")

            def answer(self, body, content, finish_reason):
                prompt = server.prompt_tokens
                if prompt is None:
                    prompt = sum(len(str(m.get("content", ""))) for m in body["messages"]) // 4
                self.reply(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": finish_reason,
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": 2,
                              "total_tokens": prompt + 2},
                })

            def reply(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout under test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ScriptedOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
