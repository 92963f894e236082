"""A loopback stand-in for the Hugging Face Hub: the few endpoints that huggingface_hub and
datasets.load_dataset call to read a dataset repository at a commit.

Serve it on 127.0.0.1 and point HF_ENDPOINT at it. It holds repositories as
{repo id: (commit, {path in the repository: bytes})} and answers:
- GET  /api/datasets/<repo>/revision/<rev>          the repository's info (sha, siblings);
- GET  /api/datasets/<repo>/tree/<rev>[/<dir>]      a folder listing;
- HEAD/GET /datasets/<repo>/resolve/<rev>/<path>    a file (404 EntryNotFound if absent);
anything else is a 404. <rev> must be the repository's commit: this Hub has no branches.
Every request is recorded in `requests`.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import urllib.parse


class HubHandler(http.server.BaseHTTPRequestHandler):
    repos: dict[str, tuple[str, dict[str, bytes]]] = {}
    requests: list[tuple[str, str]] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._answer(head=False)

    def do_HEAD(self):
        self._answer(head=True)

    def _answer(self, head: bool) -> None:
        url = urllib.parse.urlsplit(self.path)
        parts = urllib.parse.unquote(url.path).strip("/").split("/")
        self.requests.append((self.command, self.path))
        if parts[:2] == ["api", "datasets"] and len(parts) >= 6:
            repo, kind, revision, sub = "/".join(parts[2:4]), parts[4], parts[5], "/".join(parts[6:])
            files = self._files(repo, revision)
            if files is None:
                return self._send(404, b'{"error": "not found"}', {"X-Error-Code": "RevisionNotFound"}, head)
            if kind == "revision":
                return self._json({"id": repo, "sha": revision, "private": False,
                                   "siblings": [{"rfilename": path} for path in files]}, head)
            if kind == "tree":
                return self._json(self._listing(files, sub, "recursive=true" in url.query.lower()), head)
        if parts[:1] == ["datasets"] and len(parts) >= 6 and parts[3] == "resolve":
            repo, revision, path = "/".join(parts[1:3]), parts[4], "/".join(parts[5:])
            files = self._files(repo, revision)
            if files is None:
                return self._send(404, b"", {"X-Error-Code": "RevisionNotFound"}, head)
            if path not in files:
                return self._send(404, b"", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": revision}, head)
            data = files[path]
            return self._send(200, data, {"ETag": f'"{hashlib.sha256(data).hexdigest()}"',
                                          "X-Repo-Commit": revision,
                                          "Content-Type": "application/octet-stream"}, head)
        self._send(404, b"", {}, head)

    def _files(self, repo: str, revision: str) -> dict[str, bytes] | None:
        if repo not in self.repos or self.repos[repo][0] != revision:
            return None
        return self.repos[repo][1]

    @staticmethod
    def _listing(files: dict[str, bytes], folder: str, recursive: bool) -> list[dict]:
        entries, folders = [], set()
        for path, data in sorted(files.items()):
            if folder and not path.startswith(folder + "/"):
                continue
            rest = path[len(folder) + 1:] if folder else path
            if "/" in rest and not recursive:
                folders.add((folder + "/" if folder else "") + rest.split("/")[0])
                continue
            entries.append({"type": "file", "path": path, "size": len(data),
                            "oid": hashlib.sha1(data).hexdigest()})
        return entries + [{"type": "directory", "path": name, "oid": "0" * 40, "size": 0}
                          for name in sorted(folders)]

    def _json(self, value, head: bool) -> None:
        self._send(200, json.dumps(value).encode(), {"Content-Type": "application/json"}, head)

    def _send(self, status: int, body: bytes, headers: dict, head: bool) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)


def serve(repos: dict[str, tuple[str, dict[str, bytes]]]):
    """Start a stub Hub holding `repos`; returns (server, handler class, base url)."""
    handler = type("Hub", (HubHandler,), {"repos": repos, "requests": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler, f"http://127.0.0.1:{server.server_address[1]}"
