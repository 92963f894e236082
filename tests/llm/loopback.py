"""An OpenAI-compatible chat server on 127.0.0.1 whose answer is a function of the request, for
tests of answers that never parse and of secrets a server echoes back."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# (status, message) of an error, or (text, finish_reason) of an answer, for a request body and
# its headers (names lower-cased).
Behaviour = Callable[[dict, dict[str, str]], tuple[int, str, str]]


def answers(text: str, finish_reason: str = "stop") -> Behaviour:
    return lambda body, headers: (200, text, finish_reason)


def echoes_key_in_401(body: dict, headers: dict[str, str]) -> tuple[int, str, str]:
    """What a careless server does: the 401 says which key it refused, in full."""
    key = headers.get("authorization", "").removeprefix("Bearer ")
    return 401, f"Incorrect API key provided: {key}. You can find your key at ...", ""


class LoopbackServer:
    def __init__(self, behaviour: Behaviour):
        self.behaviour = behaviour
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
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
                status, text, finish = server.behaviour(body, headers)
                if status != 200:
                    payload = {"error": {"message": text, "type": "invalid_request_error",
                                         "code": "invalid_api_key"}}
                else:
                    payload = {
                        "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": finish,
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": 7, "completion_tokens": 2,
                                  "total_tokens": 9},
                    }
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
