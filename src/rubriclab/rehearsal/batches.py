"""OpenAI's file and batch endpoints for the rehearsal server, as litellm calls them:

    POST /v1/files                  upload a JSON-lines input file (multipart form)
    POST /v1/batches                create a batch of an uploaded file
    GET  /v1/batches                list batches (most recent first), with their metadata
    GET  /v1/batches/{id}           a batch's status; answers it when it ends
    GET  /v1/files/{id}/content     the output or error file of an ended batch

Each line of a batch is answered by the server's own /chat/completions handling (faults
included). `hold` keeps every batch in progress (a long batch); `outcome` decides how a batch
ends once released: completed, failed (nothing answered), expired (the first half answered,
the rest as "batch_expired" errors) or cancelled.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

Handle = Callable[[str, dict], tuple[int | None, dict, dict]]


class OpenAIBatches:
    def __init__(self, handle: Handle):
        self._handle = handle
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.calls: Counter = Counter()  # upload, create, retrieve, list, content
        self.hold = False
        self.outcome = "completed"
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def serves(self, path: str) -> bool:
        path = path.split("?", 1)[0]
        return "/v1/files" in path or "/v1/batches" in path

    # --- requests ------------------------------------------------------------------------

    def post(self, path: str, headers: Any, raw: bytes) -> tuple[int, Any]:
        path = path.split("?", 1)[0]
        if path.endswith("/v1/files"):
            return self._upload(headers.get("Content-Type", ""), raw)
        if path.endswith("/v1/batches"):
            return self._create(json.loads(raw or b"{}"))
        return 404, {"error": {"message": f"no such path {path}"}}

    def get(self, path: str) -> tuple[int, Any]:
        path = path.split("?", 1)[0].rstrip("/")
        parts = path.split("/")
        if path.endswith("/v1/batches"):
            with self._lock:
                self.calls["list"] += 1
                listed = sorted(self.batches.values(), key=lambda b: -b["created_at_ns"])
            return 200, {"object": "list", "data": [self._public(b) for b in listed],
                         "has_more": False}
        if len(parts) >= 2 and parts[-2] == "batches":
            return self._retrieve(parts[-1])
        if len(parts) >= 3 and parts[-1] == "content" and parts[-3] == "files":
            with self._lock:
                self.calls["content"] += 1
                data = self.files.get(parts[-2])
            if data is None:
                return 404, {"error": {"message": f"no such file {parts[-2]}"}}
            return 200, data
        return 404, {"error": {"message": f"no such path {path}"}}

    def _upload(self, content_type: str, raw: bytes) -> tuple[int, Any]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        data = purpose = None
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name == "file":
                data = part.get_payload(decode=True)
            elif name == "purpose":
                purpose = part.get_content().strip()
        if data is None:
            return 400, {"error": {"message": "no file in the upload"}}
        with self._lock:
            self.calls["upload"] += 1
            file_id = f"file-rehearsal-{next(self._ids)}"
            self.files[file_id] = data
        return 200, {"id": file_id, "object": "file", "bytes": len(data), "created_at": 0,
                     "filename": "input.jsonl", "purpose": purpose or "batch",
                     "status": "processed"}

    def _create(self, body: dict) -> tuple[int, Any]:
        file_id = body.get("input_file_id")
        with self._lock:
            if file_id not in self.files:
                return 400, {"error": {"message": f"no such file {file_id}"}}
            self.calls["create"] += 1
            batch_id = f"batch_rehearsal_{next(self._ids)}"
            lines = [json.loads(line) for line in self.files[file_id].splitlines()
                     if line.strip()]
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": body.get("endpoint"),
                "input_file_id": file_id, "completion_window": body.get("completion_window"),
                "status": "in_progress", "output_file_id": None, "error_file_id": None,
                "created_at": int(time.time()), "created_at_ns": time.monotonic_ns(),
                "metadata": body.get("metadata") or {}, "errors": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "_lines": lines,
            }
            return 200, self._public(self.batches[batch_id])

    def _retrieve(self, batch_id: str) -> tuple[int, Any]:
        with self._lock:
            self.calls["retrieve"] += 1
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, {"error": {"message": f"no such batch {batch_id}"}}
            if batch["status"] == "in_progress" and not self.hold:
                self._end(batch)
            return 200, self._public(batch)

    # --- ending a batch ------------------------------------------------------------------

    def _end(self, batch: dict[str, Any]) -> None:
        lines = batch["_lines"]
        if self.outcome == "failed":
            batch.update(status="failed", errors={"object": "list", "data": [
                {"code": "invalid_request", "message": "rehearsal: the batch failed"}]})
            batch["request_counts"]["failed"] = len(lines)
            return
        answered = {"completed": len(lines), "expired": len(lines) // 2,
                    "cancelled": 0}[self.outcome]
        outputs, errors = [], []
        for n, line in enumerate(lines):
            if n >= answered:
                errors.append({"id": f"req_{n}", "custom_id": line["custom_id"],
                               "response": None, "error": {
                                   "code": f"batch_{self.outcome}",
                                   "message": f"This request could not be executed before "
                                              f"the batch was {self.outcome}."}})
                continue
            status, payload, _ = self._handle(line["url"], line["body"])
            result = {"id": f"req_{n}", "custom_id": line["custom_id"],
                      "response": {"status_code": status or 408, "request_id": f"r{n}",
                                   "body": payload}, "error": None}
            (outputs if status == 200 else errors).append(result)
        batch["output_file_id"] = self._store_file(outputs)
        batch["error_file_id"] = self._store_file(errors)
        batch["request_counts"].update(completed=len(outputs), failed=len(errors))
        batch["status"] = self.outcome

    def _store_file(self, results: list[dict]) -> str | None:
        if not results:
            return None
        file_id = f"file-rehearsal-{next(self._ids)}"
        self.files[file_id] = "".join(json.dumps(r) + "\n" for r in results).encode()
        return file_id

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")
                and k != "created_at_ns"}
