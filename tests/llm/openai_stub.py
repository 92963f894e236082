"""A small OpenAI-compatible chat server on 127.0.0.1 that plays a script of behaviours."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedOpenAIServer:
    """Each POST to /v1/chat/completions takes the next behaviour from the script:
    "400", "401", "429", "500" (error statuses), "timeout" (answers after `slow_s`), "drop" (closes the
    connection without a response), "empty" (a 200 with empty content), or any other string,
    which is returned as the assistant's answer. An exhausted script answers 500."""

    def __init__(self, script: list[str], slow_s: float = 3.0):
        self.script = deque(script)
        self.slow_s = slow_s
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                action = server.script.popleft() if server.script else "500"
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
                content = "" if action == "empty" else action
                self.reply(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13},
                })

            def reply(self, status, payload):
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
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
