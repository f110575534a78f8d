"""A gpunet client over intake's HTTP API, standard library only.

Submit jobs with inputs (uploaded by the tus protocol, resumable), follow the team feed
(Server-Sent Events, resumed with Last-Event-ID), wait for a job to end (its JobEnded), download
outputs (sha256 checked), read charges. Every answer is a dict shaped as `gpunet_client.types`
says.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import queue
import socket
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional

from . import types as t


#: Bytes read from a file per PATCH write (the server stores whole chunks of ~1 MiB as they fill).
UPLOAD_BLOCK = 1024 * 1024


class GpunetError(Exception):
    """An answer that is not a success: the HTTP status, intake's error code and message, and field issues with their fixes."""

    def __init__(self, status: int, code: str, message: str, issues: Optional[List[Dict[str, Any]]] = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.issues = issues or []


class IntegrityError(GpunetError):
    """Downloaded bytes do not match the sha256 and size the job recorded; nothing was kept."""


class WaitTimeout(GpunetError):
    """The job did not end within the time given; `last` is its last view."""

    def __init__(self, job_id: str, timeout: float, last: Optional[t.GetJobReply]) -> None:
        super().__init__(0, "timeout", f"job {job_id} did not end within {timeout} s (last state: {last['state'] if last else 'unknown'})")
        self.last = last


@dataclass
class UploadedBlob:
    """What one upload did: the blob's address and size, and how many bytes moved."""

    sha256: str
    size: int
    skipped: bool
    bytes_sent: int
    resumed_from: int


@dataclass
class Downloaded:
    path: str
    dest: str
    sha256: str
    size: int


@dataclass
class GpunetClient:
    """A client of one gpunet network: `base_url` of intake (e.g. http://127.0.0.1:8080) and a team API key."""

    base_url: str
    api_key: str
    timeout: float = 30.0
    user_agent: str = "gpunet-python"
    _base: urllib.parse.SplitResult = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._base = urllib.parse.urlsplit(self.base_url.rstrip("/"))
        if self._base.scheme not in ("http", "https") or not self._base.netloc:
            raise ValueError(f"base_url must be an http(s) URL such as http://127.0.0.1:8080, got {self.base_url!r}")

    # ── jobs ──────────────────────────────────────────────────────────────────────────────

    def submit(self, spec: Dict[str, Any], idempotency_key: Optional[str] = None) -> t.SubmitJobReply:
        """Submits a job spec (the JobSpec shape; inputs by `sha256`/`size`, see `input_file`). Safe to retry with one idempotency key."""
        key = idempotency_key or base64.urlsafe_b64encode(os.urandom(18)).decode()
        return self._json("POST", "/v1/jobs", {"spec": spec, "idempotencyKey": key}, headers={"Idempotency-Key": key})

    def get_job(self, job_id: str) -> t.GetJobReply:
        """One job: state, spec, attempts, outputs and timeline."""
        return self._json("GET", f"/v1/jobs/{_q(job_id)}")

    def cancel(self, job_id: str, reason: Optional[str] = None) -> t.CancelJobReply:
        return self._json("POST", f"/v1/jobs/{_q(job_id)}/cancel", {"reason": reason} if reason else {})

    def charges(self, job_id: Optional[str] = None) -> t.GetChargesReply:
        """Usage lines and totals of the team (or of one job), integer micro-units."""
        return self._json("GET", "/v1/charges" + (f"?jobId={_q(job_id)}" if job_id else ""))

    def outputs(self, job_id: str) -> Dict[str, Any]:
        """The job's stored output files: `{ stored, files: [{ path, sha256, size }], totalBytes, truncated, rejected: [{ path, reason, message }] }` (files not kept, with why)."""
        return self._json("GET", f"/v1/jobs/{_q(job_id)}/outputs")

    # ── inputs (tus uploads) ──────────────────────────────────────────────────────────────

    def upload_file(self, path: str, on_progress: Optional[Callable[[int, int], None]] = None) -> UploadedBlob:
        """
        Uploads a file into the team's content-addressed store over HTTP (tus 1.0): hashes it,
        asks intake how much of it is stored (`HEAD`), and sends the rest (`PATCH`). A dropped
        connection is resumed from what intake stored; a blob the team holds is not sent again.
        """
        sha256, size = _hash_file(path)
        url = f"/v1/uploads/{sha256}.{size}"
        offset = self._upload_offset(url)
        if offset == size and size > 0:
            return UploadedBlob(sha256, size, True, 0, 0)
        if offset is None:
            meta = "sha256 " + base64.b64encode(sha256.encode()).decode()
            self._request("POST", "/v1/uploads", headers={"Tus-Resumable": "1.0.0", "Upload-Length": str(size), "Upload-Metadata": meta})
            offset = self._upload_offset(url) or 0
        resumed_from = offset
        attempts = 0
        while offset < size:
            try:
                offset = self._patch(url, path, offset, size, on_progress)
                attempts = 0
            except (OSError, http.client.HTTPException) as err:
                # The connection dropped: ask intake what it stored and go on from there.
                attempts += 1
                if attempts > 5:
                    raise GpunetError(0, "unreachable", f"upload of {path} failed {attempts} times: {err}") from err
                time.sleep(min(0.25 * 2**attempts, 5))
                offset = self._upload_offset(url) or 0
        return UploadedBlob(sha256, size, False, size - resumed_from, resumed_from)

    def input_file(self, name: str, path: str, dest: Optional[str] = None) -> Dict[str, Any]:
        """Uploads `path` and returns the job spec's input entry for it (placed at `$GPUNET_INPUT_DIR/<dest>`)."""
        blob = self.upload_file(path)
        return {"name": name, "kind": "file", "sha256": blob.sha256, "size": blob.size, "path": dest or os.path.basename(path)}

    def _upload_offset(self, url: str) -> Optional[int]:
        try:
            resp = self._request("HEAD", url, headers={"Tus-Resumable": "1.0.0"})
        except GpunetError as err:
            if err.status == 404:
                return None
            raise
        return int(resp.headers.get("Upload-Offset", "0"))

    def _patch(self, url: str, path: str, offset: int, size: int, on_progress: Optional[Callable[[int, int], None]]) -> int:
        conn = self._connection(timeout=None)
        try:
            conn.putrequest("PATCH", self._path(url))
            for k, v in self._headers({"Tus-Resumable": "1.0.0", "Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream", "Content-Length": str(size - offset)}).items():
                conn.putheader(k, v)
            conn.endheaders()
            sent = offset
            with open(path, "rb") as f:
                f.seek(offset)
                while True:
                    block = f.read(UPLOAD_BLOCK)
                    if not block:
                        break
                    conn.send(block)
                    sent += len(block)
                    if on_progress:
                        on_progress(sent, size)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status >= 300:
                raise _error(resp.status, body)
            return int(resp.getheader("Upload-Offset", str(offset)))
        finally:
            conn.close()

    # ── the team feed (SSE) and waiting ──────────────────────────────────────────────────

    def feed(
        self,
        job_id: Optional[str] = None,
        after: str = "0",
        idle_timeout: Optional[float] = None,
        reconnect_delay: float = 0.25,
        _connections: Optional[List[http.client.HTTPConnection]] = None,
        _stop: Optional[threading.Event] = None,
    ) -> Iterator[t.FeedEntry]:
        """
        The team's feed (or one job's): its own jobs' events in store order from `after`, then
        live. A dropped connection is resumed after the last entry yielded (Last-Event-ID): none is
        lost, none repeated. One job's feed ends after its JobEnded; with `idle_timeout`, the feed
        also ends once nothing new came for that many seconds.
        """
        last = after
        delay = reconnect_delay
        while not (_stop and _stop.is_set()):
            try:
                for entry in self._sse(job_id, last, read_timeout=idle_timeout, connections=_connections):
                    if int(entry["position"]) <= int(last):
                        continue
                    last = entry["position"]
                    delay = reconnect_delay
                    yield entry
                    if job_id is not None and entry["type"] == "JobEnded":
                        return
            except (socket.timeout, TimeoutError):
                if idle_timeout is not None:
                    return
            except GpunetError as err:
                if err.status and err.status < 500:
                    raise
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(delay)
            delay = min(delay * 2, 5.0)

    def wait(self, job_id: str, timeout: Optional[float] = None, on_entry: Optional[Callable[[t.FeedEntry], None]] = None) -> t.GetJobReply:
        """Follows the job on the feed until its JobEnded, then returns its final view. No polling."""
        deadline = None if timeout is None else time.monotonic() + timeout
        view = self.get_job(job_id)
        # The feed is read on a thread so the deadline holds even while the stream only brings
        # keepalives; closing its connection ends the thread.
        entries: "queue.Queue[Any]" = queue.Queue()
        connections: List[http.client.HTTPConnection] = []
        done = threading.Event()

        def read() -> None:
            try:
                for entry in self.feed(job_id=job_id, _connections=connections, _stop=done):
                    entries.put(entry)
            except BaseException as err:  # handed to the waiting thread
                entries.put(err)
            finally:
                entries.put(None)

        threading.Thread(target=read, name=f"gpunet-wait-{job_id}", daemon=True).start()
        try:
            while True:
                try:
                    item = entries.get(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    raise WaitTimeout(job_id, timeout or 0, view) from None
                if item is None:
                    raise GpunetError(0, "feed_ended", f"the feed of job {job_id} ended without its JobEnded")
                if isinstance(item, BaseException):
                    raise item
                if on_entry:
                    on_entry(item)
                # Read after the entry: intake answers as of the store's head, so after JobEnded the
                # view holds the final state and outputs.
                view = self.get_job(job_id)
                if item["type"] == "JobEnded":
                    return view
        finally:
            done.set()
            for conn in connections:
                conn.close()

    def _sse(self, job_id: Optional[str], after: str, read_timeout: Optional[float] = None, connections: Optional[List[http.client.HTTPConnection]] = None) -> Iterator[t.FeedEntry]:
        query = f"?jobId={_q(job_id)}" if job_id else ""
        conn = self._connection(timeout=read_timeout)
        if connections is not None:
            connections.append(conn)
        try:
            conn.request("GET", self._path("/v1/feed" + query), headers=self._headers({"Accept": "text/event-stream", "Last-Event-ID": after}))
            resp = conn.getresponse()
            if resp.status != 200:
                raise _error(resp.status, resp.read())
            data: List[str] = []
            while True:
                raw = resp.readline()
                if not raw:
                    return
                line = raw.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if data:
                        yield json.loads("\n".join(data))
                    data = []
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip(" ") if line.startswith("data: ") else line[5:])
                # id:, event:, retry: and comments (`: keepalive`) need nothing: the entry carries its position and type.
        finally:
            conn.close()

    # ── outputs ───────────────────────────────────────────────────────────────────────────

    def download_outputs(self, job_id: str, dest_dir: str) -> List[Downloaded]:
        """Downloads every stored output of the job under `dest_dir`, each checked against its sha256 and size."""
        done = []
        for f in self.outputs(job_id)["files"]:
            done.append(self.download_output(job_id, f["path"], os.path.join(dest_dir, *f["path"].split("/")), f["sha256"], f["size"]))
        return done

    def download_output(self, job_id: str, path: str, dest: str, sha256: str, size: int) -> Downloaded:
        """One output file; `dest` only ever holds the complete, verified file."""
        url = f"/v1/jobs/{_q(job_id)}/outputs/" + "/".join(_q(p) for p in path.split("/"))
        conn = self._connection(timeout=self.timeout)
        os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(dest)), suffix=".part")
        try:
            conn.request("GET", self._path(url), headers=self._headers({"Accept": "*/*"}))
            resp = conn.getresponse()
            if resp.status != 200:
                raise _error(resp.status, resp.read())
            h = hashlib.sha256()
            n = 0
            with os.fdopen(fd, "wb") as out:
                while True:
                    block = resp.read(UPLOAD_BLOCK)
                    if not block:
                        break
                    h.update(block)
                    n += len(block)
                    out.write(block)
            if h.hexdigest() != sha256 or n != size:
                raise IntegrityError(0, "integrity", f"{path}: got {n} bytes hashing to {h.hexdigest()}, the job recorded {size} bytes as {sha256}; nothing was kept")
            os.replace(temp, dest)
            return Downloaded(path, dest, sha256, size)
        finally:
            conn.close()
            if os.path.exists(temp):
                os.unlink(temp)

    # ── HTTP ──────────────────────────────────────────────────────────────────────────────

    def _path(self, path: str) -> str:
        return self._base.path + path

    def _headers(self, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}", "User-Agent": self.user_agent, **(extra or {})}

    def _connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._base.scheme == "https" else http.client.HTTPConnection
        return cls(self._base.netloc, timeout=timeout)

    def _request(self, method: str, path: str, body: Any = None, headers: Optional[Dict[str, str]] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        h = self._headers({"Accept": "application/json", **({"Content-Type": "application/json"} if data is not None else {}), **(headers or {})})
        req = urllib.request.Request(self.base_url.rstrip("/") + path, data=data, method=method, headers=h)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as err:
            raise _error(err.code, err.read()) from None
        except urllib.error.URLError as err:
            raise GpunetError(0, "unreachable", f"cannot reach {self.base_url}: {err.reason} (is the network up? `gpunet up`)") from err

    def _json(self, method: str, path: str, body: Any = None, headers: Optional[Dict[str, str]] = None) -> Any:
        with self._request(method, path, body, headers) as resp:
            return json.loads(resp.read())


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _hash_file(path: str) -> tuple:
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(UPLOAD_BLOCK)
            if not block:
                break
            h.update(block)
            n += len(block)
    return h.hexdigest(), n


def _error(status: int, body: bytes) -> GpunetError:
    try:
        err = json.loads(body)["error"]
        return GpunetError(status, err.get("code", "error"), err.get("message", ""), err.get("issues"))
    except (ValueError, KeyError, TypeError):
        return GpunetError(status, "error", body.decode("utf-8", "replace")[:500])
