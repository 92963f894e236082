"""An OpenAI-compatible chat server on 127.0.0.1 written on raw sockets, for replies that
http.server cannot send: a whole response trickled a byte at a time, and 200s whose body is no
completion (empty, an HTML page, JSON cut short)."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field

# The request's own reading and each write wait at most this long (a bound, not a pace).
SOCKET_TIMEOUT_S = 30.0


def completion_body(text: str, prompt_tokens: int = 11, completion_tokens: int = 2) -> bytes:
    """A valid chat.completion answering `text`."""
    return json.dumps({
        "id": "chatcmpl-trickle", "object": "chat.completion", "created": 0, "model": "stub",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }).encode()


@dataclass(frozen=True)
class Reply:
    """One response: `status` with `body`; with `byte_interval_s`, the whole response (status
    line and headers too) is sent one byte at a time, that long apart."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    byte_interval_s: float = 0.0

    def wire(self) -> bytes:
        reason = {200: "OK", 500: "Internal Server Error"}.get(self.status, "Status")
        head = (f"HTTP/1.1 {self.status} {reason}\r\nContent-Type: {self.content_type}\r\n"
                f"Content-Length: {len(self.body)}\r\nConnection: close\r\n\r\n")
        return head.encode() + self.body


@dataclass
class Exchange:
    """One request as the server saw it: its body, when it arrived, and, for a reply the client
    stopped reading, when the client closed the connection (monotonic seconds)."""

    body: dict
    arrived: float
    bytes_sent: int = 0
    hung_up: float | None = None
    done: threading.Event = field(default_factory=threading.Event)


class RawReplyServer:
    """Each POST takes the next reply of `script`; an exhausted script plays `then`. Every
    connection gets one reply and is closed."""

    def __init__(self, script: list[Reply], then: Reply | None = None):
        self.script = deque(script)
        self.then = then if then is not None else Reply(completion_body("Yes"))
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def __enter__(self) -> RawReplyServer:
        self._acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._listener.close()
        self._acceptor.join(timeout=SOCKET_TIMEOUT_S)
        for thread in self._threads:
            thread.join(timeout=SOCKET_TIMEOUT_S)

    def _accept(self) -> None:
        self._listener.settimeout(0.1)  # to see `_stop`
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(SOCKET_TIMEOUT_S)
            body = _read_request(conn)
            if body is None:
                return
            with self._lock:
                exchange = Exchange(json.loads(body), time.monotonic())
                self.exchanges.append(exchange)
                reply = self.script.popleft() if self.script else self.then
            try:
                if reply.byte_interval_s:
                    self._trickle(conn, reply, exchange)
                else:
                    conn.sendall(reply.wire())
                    exchange.bytes_sent = len(reply.wire())
            except OSError:  # the client went away
                exchange.hung_up = time.monotonic()
            finally:
                exchange.done.set()

    def _trickle(self, conn: socket.socket, reply: Reply, exchange: Exchange) -> None:
        for byte in reply.wire():
            if self._stop.is_set():
                return
            conn.sendall(bytes([byte]))
            exchange.bytes_sent += 1
            # Between bytes, watch for the client closing its end (EOF, or a reset).
            readable, _, _ = select.select([conn], [], [], reply.byte_interval_s)
            if readable and not conn.recv(1024):
                exchange.hung_up = time.monotonic()
                return


def _read_request(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        body += chunk
    return body
