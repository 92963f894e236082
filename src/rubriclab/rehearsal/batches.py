"""The providers' batch endpoints for the rehearsal server, on the paths their clients call.

OpenAI (litellm's acreate_file / acreate_batch / aretrieve_batch / alist_batches /
afile_content):

    POST /v1/files                  upload a JSON-lines input file (multipart form)
    POST /v1/batches                create a batch of an uploaded file
    GET  /v1/batches                list batches (most recent first), with their metadata
    GET  /v1/batches/{id}           a batch's status
    GET  /v1/files/{id}/content     the output or error file of an ended batch

Gemini, Google AI Studio (litellm's Gemini file and batch calls; the list is Google's
batches.list):

    POST /upload/v1beta/files                       resumable upload: start, then upload+finalize
    POST /v1beta/models/{model}:batchGenerateContent   create a batch of an uploaded file
    GET  /v1beta/batches[/{id}]                     list batches / a batch (an Operation)
    GET  /download/v1beta/files/{id}:download       the responses file of a finished batch

Anthropic (the anthropic SDK's client.messages.batches):

    POST /v1/messages/batches               create a batch of inline requests
    GET  /v1/messages/batches               list batches (most recent first)
    GET  /v1/messages/batches/{id}          a batch's status
    GET  /v1/messages/batches/{id}/results  its results (JSON lines), once ended

Each row is answered by the server's own handling of the provider's ordinary endpoint
(answer faults included; transport faults are the HTTP calls': polls, lists and downloads meet
them, RehearsalServer.poll_fault, uploads and creations do not), in a background
thread started by the first poll after creation, so a large batch takes a while as real ones
do. `hold` keeps every batch in progress (a long batch); `outcome` decides how a batch ends once
released: completed, failed (nothing answered), expired (OpenAI and Anthropic: the first half
answered, the rest reported expired; Gemini: an expired job has no results) or cancelled.
`calls` counts each kind of call (upload, create, retrieve, list, content).
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
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qs, urlsplit

Handle = Callable[..., tuple[int | None, dict, dict]]
Reply = tuple[int, Any] | tuple[int, Any, dict]
ROW_WORKERS = 8


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _not_found(what: str) -> tuple[int, dict]:
    return 404, {"error": {"code": 404, "message": f"no such {what}", "status": "NOT_FOUND"}}


class _Batches:
    """What the three providers' imitations share: ids, counts, hold and outcome, and the
    background answering of a batch's rows."""

    PARTIAL_EXPIRY = True  # an expired batch has answered its first half

    def __init__(self, handle: Handle):
        self._handle = handle
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.calls: Counter = Counter()
        self.hold = False
        self.outcome = "completed"
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def _answer_later(self, batch: dict[str, Any]) -> None:
        """Answer the batch's rows in the background; `_finish` records the result."""
        batch["_answering"] = True
        rows = batch["_rows"]
        outcome = self.outcome

        def work() -> None:
            answered: list[Any] = [None] * len(rows)
            if outcome == "completed" or (outcome == "expired" and self.PARTIAL_EXPIRY):
                count = len(rows) if outcome == "completed" else len(rows) // 2
                with ThreadPoolExecutor(ROW_WORKERS) as pool:
                    for n, reply in enumerate(pool.map(self._answer_row, rows[:count])):
                        answered[n] = reply
            with self._lock:
                self._finish(batch, outcome, answered)

        threading.Thread(target=work, daemon=True).start()

    def _answer_row(self, row: Any) -> tuple[int, dict]:
        path, body = self._row_request(row)
        status, payload, _ = self._handle(path, body, in_batch=True)
        return status or 408, payload

    def _row_request(self, row: Any) -> tuple[str, dict]:
        raise NotImplementedError

    def _finish(self, batch: dict[str, Any], outcome: str, answered: list[Any]) -> None:
        raise NotImplementedError

    def _store_file(self, lines: list[dict]) -> str | None:
        if not lines:
            return None
        file_id = f"file-rehearsal-{next(self._ids)}"
        self.files[file_id] = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return file_id

    def _poll(self, batch: dict[str, Any]) -> None:
        if not batch.get("_answering") and not batch.get("_ended") and not self.hold:
            self._answer_later(batch)


class OpenAIBatches(_Batches):
    def serves(self, path: str) -> bool:
        path = path.split("?", 1)[0]
        return "/v1/files" in path or "/v1/batches" in path

    def post(self, path: str, headers: Any, raw: bytes) -> Reply:
        path = path.split("?", 1)[0]
        if path.endswith("/v1/files"):
            return self._upload(headers.get("Content-Type", ""), raw)
        if path.endswith("/v1/batches"):
            return self._create(json.loads(raw or b"{}"))
        return 404, {"error": {"message": f"no such path {path}"}}

    def get(self, path: str, headers: Any = None) -> Reply:
        path = path.split("?", 1)[0].rstrip("/")
        parts = path.split("/")
        if path.endswith("/v1/batches"):
            with self._lock:
                self.calls["list"] += 1
                listed = sorted(self.batches.values(), key=lambda b: -b["_created_ns"])
                return 200, {"object": "list", "data": [_public(b) for b in listed],
                             "has_more": False}
        if len(parts) >= 2 and parts[-2] == "batches":
            with self._lock:
                self.calls["retrieve"] += 1
                batch = self.batches.get(parts[-1])
                if batch is None:
                    return 404, {"error": {"message": f"no such batch {parts[-1]}"}}
                self._poll(batch)
                return 200, _public(batch)
        if len(parts) >= 3 and parts[-1] == "content" and parts[-3] == "files":
            with self._lock:
                self.calls["content"] += 1
                data = self.files.get(parts[-2])
            if data is None:
                return 404, {"error": {"message": f"no such file {parts[-2]}"}}
            return 200, data
        return 404, {"error": {"message": f"no such path {path}"}}

    def _upload(self, content_type: str, raw: bytes) -> Reply:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        data = purpose = None
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name == "file":
                data = part.get_payload(decode=True)
            elif name == "purpose":
                purpose = part.get_content().strip()
        if not isinstance(data, bytes):  # no file part (get_payload gives None)
            return 400, {"error": {"message": "no file in the upload"}}
        with self._lock:
            self.calls["upload"] += 1
            file_id = f"file-rehearsal-{next(self._ids)}"
            self.files[file_id] = data
        return 200, {"id": file_id, "object": "file", "bytes": len(data), "created_at": 0,
                     "filename": "input.jsonl", "purpose": purpose or "batch",
                     "status": "processed"}

    def _create(self, body: dict) -> Reply:
        file_id = body.get("input_file_id")
        with self._lock:
            if file_id not in self.files:
                return 400, {"error": {"message": f"no such file {file_id}"}}
            self.calls["create"] += 1
            batch_id = f"batch_rehearsal_{next(self._ids)}"
            rows = [json.loads(line) for line in self.files[file_id].splitlines()
                    if line.strip()]
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": body.get("endpoint"),
                "input_file_id": file_id, "completion_window": body.get("completion_window"),
                "status": "in_progress", "output_file_id": None, "error_file_id": None,
                "created_at": int(time.time()), "_created_ns": time.monotonic_ns(),
                "metadata": body.get("metadata") or {}, "errors": None,
                "request_counts": {"total": len(rows), "completed": 0, "failed": 0},
                "_rows": rows,
            }
            return 200, _public(self.batches[batch_id])

    def _row_request(self, row: Any) -> tuple[str, dict]:
        return row["url"], row["body"]

    def _finish(self, batch: dict[str, Any], outcome: str, answered: list[Any]) -> None:
        batch["_ended"] = True
        rows = batch["_rows"]
        if outcome == "failed":
            batch.update(status="failed", errors={"object": "list", "data": [
                {"code": "invalid_request", "message": "rehearsal: the batch failed"}]})
            batch["request_counts"]["failed"] = len(rows)
            return
        outputs: list[dict] = []
        errors: list[dict] = []
        for n, (row, reply) in enumerate(zip(rows, answered)):
            if reply is None:
                errors.append({"id": f"req_{n}", "custom_id": row["custom_id"],
                               "response": None, "error": {
                                   "code": f"batch_{outcome}",
                                   "message": f"This request could not be executed before "
                                              f"the batch was {outcome}."}})
                continue
            status, payload = reply
            result = {"id": f"req_{n}", "custom_id": row["custom_id"],
                      "response": {"status_code": status, "request_id": f"r{n}",
                                   "body": payload}, "error": None}
            (outputs if status == 200 else errors).append(result)
        batch["output_file_id"] = self._store_file(outputs)
        batch["error_file_id"] = self._store_file(errors)
        batch["request_counts"].update(completed=len(outputs), failed=len(errors))
        batch["status"] = outcome


_GEMINI_STATES = {"completed": "BATCH_STATE_SUCCEEDED", "failed": "BATCH_STATE_FAILED",
                  "expired": "BATCH_STATE_EXPIRED", "cancelled": "BATCH_STATE_CANCELLED"}


class GeminiBatches(_Batches):
    PARTIAL_EXPIRY = False
    def serves(self, path: str) -> bool:
        path = path.split("?", 1)[0]
        return (path.startswith(("/upload/v1beta/files", "/download/v1beta/files",
                                 "/v1beta/batches"))
                or path.endswith(":batchGenerateContent"))

    def post(self, path: str, headers: Any, raw: bytes) -> Reply:
        split = urlsplit(path)
        if split.path == "/upload/v1beta/files":
            command = (headers.get("X-Goog-Upload-Command") or "").lower()
            if command == "start":
                with self._lock:
                    upload_id = f"upload-{next(self._ids)}"
                    self.files[upload_id] = b""
                host = headers.get("Host")
                return 200, {}, {"X-Goog-Upload-URL": f"http://{host}/upload/v1beta/files?"
                                                      f"upload_id={upload_id}"}
            upload_id = (parse_qs(split.query).get("upload_id") or [""])[0]
            if "finalize" not in command or upload_id not in self.files:
                return 400, {"error": {"code": 400, "message": "bad resumable upload"}}
            with self._lock:
                self.calls["upload"] += 1
                file_id = f"rehearsal-{next(self._ids)}"
                self.files[file_id] = raw
                del self.files[upload_id]
            now = _rfc3339(time.time())
            return 200, {"file": {"name": f"files/{file_id}",
                                  "uri": f"http://{headers.get('Host')}/v1beta/files/{file_id}",
                                  "displayName": "rubriclab batch input",
                                  "mimeType": "application/jsonl", "sizeBytes": str(len(raw)),
                                  "createTime": now, "updateTime": now, "state": "ACTIVE",
                                  "source": "UPLOADED"}}
        if split.path.endswith(":batchGenerateContent"):
            model = split.path.rsplit("/", 1)[-1].split(":", 1)[0]
            return self._create(model, json.loads(raw or b"{}"))
        return 404, {"error": {"code": 404, "message": f"no such path {path}"}}

    def get(self, path: str, headers: Any = None) -> Reply:
        split = urlsplit(path)
        route = split.path.rstrip("/")
        if route == "/v1beta/batches":
            with self._lock:
                self.calls["list"] += 1
                listed = sorted(self.batches.values(), key=lambda b: -b["_created_ns"])
                return 200, {"operations": [self._operation(b) for b in listed]}
        if route.startswith("/v1beta/batches/"):
            with self._lock:
                self.calls["retrieve"] += 1
                batch = self.batches.get(route.rsplit("/", 1)[-1])
                if batch is None:
                    return _not_found(f"batch {route}")
                self._poll(batch)
                return 200, self._operation(batch)
        if route.startswith("/download/v1beta/files/") and route.endswith(":download"):
            file_id = route.rsplit("/", 1)[-1].removesuffix(":download")
            with self._lock:
                self.calls["content"] += 1
                data = self.files.get(file_id)
            return (200, data) if data is not None else _not_found(f"file {file_id}")
        return 404, {"error": {"code": 404, "message": f"no such path {path}"}}

    def _create(self, model: str, body: dict) -> Reply:
        spec = body.get("batch") or {}
        source = spec.get("input_config") or spec.get("inputConfig") or {}
        file_name = source.get("file_name") or source.get("fileName") or ""
        file_id = file_name.removeprefix("files/")
        with self._lock:
            if file_id not in self.files:
                return 400, {"error": {"code": 400, "message": f"no such file {file_name}",
                                       "status": "INVALID_ARGUMENT"}}
            self.calls["create"] += 1
            batch_id = f"rehearsal-{next(self._ids)}"
            rows = [json.loads(line) for line in self.files[file_id].splitlines()
                    if line.strip()]
            bad = [row for row in rows if set(row) != {"key", "request"}]
            if bad:
                return 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                       "message": "each line of a batch input file is "
                                                  "{key, request}, got "
                                                  f"{sorted(bad[0])}"}}
            now = time.time()
            self.batches[batch_id] = {
                "id": batch_id, "model": f"models/{model}",
                "displayName": spec.get("display_name") or spec.get("displayName") or "",
                "fileName": file_name, "state": "BATCH_STATE_PENDING", "created": now,
                "_created_ns": time.monotonic_ns(), "_rows": rows, "ok": 0, "failed": 0,
                "output": None, "ended": None, "error": None}
            return 200, self._operation(self.batches[batch_id])

    def _operation(self, batch: dict[str, Any]) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main."
                     "GenerateContentBatch",
            "model": batch["model"], "displayName": batch["displayName"],
            "inputConfig": {"fileName": batch["fileName"]},
            "createTime": _rfc3339(batch["created"]), "updateTime": _rfc3339(time.time()),
            "batchStats": {"requestCount": str(len(batch["_rows"])),
                           "successfulRequestCount": str(batch["ok"]),
                           "failedRequestCount": str(batch["failed"]),
                           "pendingRequestCount": str(0 if batch["ended"] else
                                                      len(batch["_rows"]))},
            "state": batch["state"], "name": f"batches/{batch['id']}"}
        operation: dict[str, Any] = {"name": f"batches/{batch['id']}", "metadata": metadata,
                                     "done": bool(batch["ended"])}
        if batch["output"]:
            metadata["output"] = {"responsesFile": f"files/{batch['output']}"}
            operation["response"] = {"@type": metadata["@type"].replace(
                "GenerateContentBatch", "GenerateContentBatchOutput"),
                "responsesFile": f"files/{batch['output']}"}
        if batch["ended"]:
            metadata["endTime"] = _rfc3339(batch["ended"])
        if batch["error"]:
            operation["error"] = batch["error"]
        return operation

    def _poll(self, batch: dict[str, Any]) -> None:
        if batch["state"] == "BATCH_STATE_PENDING" and not self.hold:
            batch["state"] = "BATCH_STATE_RUNNING"
        super()._poll(batch)

    def _row_request(self, row: Any) -> tuple[str, dict]:
        # The row's model is the batch's: rows carry none of their own.
        return row["_path"], row["request"]

    def _answer_later(self, batch: dict[str, Any]) -> None:
        for row in batch["_rows"]:
            row["_path"] = f"/v1beta/{batch['model']}:generateContent"
        super()._answer_later(batch)

    def _finish(self, batch: dict[str, Any], outcome: str, answered: list[Any]) -> None:
        batch["_ended"] = True
        batch["ended"] = time.time()
        batch["state"] = _GEMINI_STATES[outcome]
        if outcome == "failed":
            batch["error"] = {"code": 13, "message": "rehearsal: the batch failed"}
        if outcome != "completed":  # a job that did not succeed has no results to read
            batch["failed"] = len(batch["_rows"])
            return
        lines = []
        for row, (status, payload) in zip(batch["_rows"], answered):
            if status == 200:
                lines.append({"key": row["key"], "response": payload})
                batch["ok"] += 1
            else:
                error = payload.get("error") or {}
                lines.append({"key": row["key"], "error": {
                    "code": error.get("code", status), "message": error.get("message", "")}})
                batch["failed"] += 1
        batch["output"] = self._store_file(lines)


class AnthropicBatches(_Batches):
    def serves(self, path: str) -> bool:
        return "/v1/messages/batches" in path.split("?", 1)[0]

    def post(self, path: str, headers: Any, raw: bytes) -> Reply:
        if urlsplit(path).path.rstrip("/") != "/v1/messages/batches":
            return 404, {"type": "error", "error": {"type": "not_found_error",
                                                    "message": f"no such path {path}"}}
        requests = (json.loads(raw or b"{}")).get("requests") or []
        if not requests or any(set(r) != {"custom_id", "params"} for r in requests):
            return 400, {"type": "error", "error": {
                "type": "invalid_request_error",
                "message": "requests: a list of {custom_id, params} is required"}}
        with self._lock:
            self.calls["create"] += 1
            batch_id = f"msgbatch_rehearsal_{next(self._ids)}"
            self.batches[batch_id] = {"id": batch_id, "created": time.time(),
                                      "_created_ns": time.monotonic_ns(), "_rows": requests,
                                      "status": "in_progress", "ended": None, "results": None,
                                      "counts": {"processing": len(requests), "succeeded": 0,
                                                 "errored": 0, "canceled": 0, "expired": 0},
                                      "host": headers.get("Host")}
            return 200, self._public(self.batches[batch_id])

    def get(self, path: str, headers: Any = None) -> Reply:
        route = urlsplit(path).path.rstrip("/")
        parts = route.split("/")
        if route == "/v1/messages/batches":
            with self._lock:
                self.calls["list"] += 1
                listed = [self._public(b) for b in sorted(self.batches.values(),
                                                          key=lambda b: -b["_created_ns"])]
            return 200, {"data": listed, "has_more": False,
                         "first_id": listed[0]["id"] if listed else None,
                         "last_id": listed[-1]["id"] if listed else None}
        results = parts[-1] == "results"
        batch_id = parts[-2] if results else parts[-1]
        with self._lock:
            self.calls["content" if results else "retrieve"] += 1
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, {"type": "error", "error": {"type": "not_found_error",
                                                        "message": f"no batch {batch_id}"}}
            if results:
                if batch["results"] is None:
                    return 400, {"type": "error", "error": {
                        "type": "invalid_request_error",
                        "message": "the batch is still processing"}}
                return 200, batch["results"]
            self._poll(batch)
            return 200, self._public(batch)

    def _public(self, batch: dict[str, Any]) -> dict[str, Any]:
        ended = batch["ended"]
        return {"id": batch["id"], "type": "message_batch",
                "processing_status": batch["status"], "request_counts": dict(batch["counts"]),
                "ended_at": _rfc3339(ended) if ended else None,
                "created_at": _rfc3339(batch["created"]),
                "expires_at": _rfc3339(batch["created"] + timedelta(days=1).total_seconds()),
                "cancel_initiated_at": None, "archived_at": None,
                "results_url": (f"http://{batch['host']}/v1/messages/batches/{batch['id']}/"
                                "results") if ended else None}

    def _row_request(self, row: Any) -> tuple[str, dict]:
        return "/v1/messages", row["params"]

    def _finish(self, batch: dict[str, Any], outcome: str, answered: list[Any]) -> None:
        batch["_ended"] = True
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        lines = []
        for row, reply in zip(batch["_rows"], answered):
            result: dict[str, Any]
            if outcome == "failed":
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": "rehearsal: the batch failed"}}}
            elif reply is None:
                result = {"type": "canceled" if outcome == "cancelled" else "expired"}
            elif reply[0] == 200:
                result = {"type": "succeeded", "message": reply[1]}
            else:
                result = {"type": "errored", "error": reply[1]}
            counts[{"canceled": "canceled", "expired": "expired", "errored": "errored",
                    "succeeded": "succeeded"}[result["type"]]] += 1
            lines.append({"custom_id": row["custom_id"], "result": result})
        batch["counts"] = counts
        batch["results"] = "".join(json.dumps(line) + "\n" for line in lines).encode()
        batch["ended"] = time.time()
        batch["status"] = "ended"


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}
