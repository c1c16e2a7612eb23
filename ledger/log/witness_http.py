"""The C2SP tlog-witness HTTP protocol: a stdlib server and a client.

Server: ``POST <prefix>/add-checkpoint`` (see :mod:`ledger.log.witness` for the statuses),
and the monitoring call ``GET <prefix>/<hex SHA-256 of origin>/checkpoint`` (the last
checkpoint it cosigned, with its cosignature; 404 if none). Requests are decided one at a
time under the witness's file lock, and the new state is on disk before the response.

Client: :func:`request_cosignature` first sends the size it believes the witness holds
(default 0); on ``409`` it reads the witness's size from the ``text/x.tlog.size`` body,
builds a proof from that size and retries once.
"""

from __future__ import annotations

import hashlib
import http.client
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final

from ledger.errors import InputError, LedgerError
from ledger.log.witness import (
    MAX_REQUEST_BYTES,
    SIZE_CONTENT_TYPE,
    AddCheckpoint,
    WitnessError,
    WitnessFiles,
    parse_request,
)

ADD_CHECKPOINT: Final = "add-checkpoint"
NOTE_CONTENT_TYPE: Final = "text/plain; charset=utf-8"
CLIENT_TIMEOUT_S: Final = 30.0
MAX_RESPONSE_BYTES: Final = 64 * 1024


class WitnessUnreachable(InputError):
    """A witness URL could not be reached or answered outside the protocol (exit 3)."""


def make_server(
    files: WitnessFiles, host: str = "127.0.0.1", port: int = 0, prefix: str = ""
) -> ThreadingHTTPServer:
    """A bound, not yet serving, HTTP server for the witness at ``files``."""
    files.identity()  # fail now (exit 3) on a missing or mismatched state or key
    lock = threading.Lock()
    base = "/" + prefix.strip("/") if prefix.strip("/") else ""

    class Handler(BaseHTTPRequestHandler):
        server_version = "provledger-witness/1"
        protocol_version = "HTTP/1.1"
        timeout = CLIENT_TIMEOUT_S  # a stalled client cannot hold a thread for ever

        def log_message(self, format: str, *args: object) -> None:
            pass  # no access log on stderr; tests and operators read the responses

        def _send(self, status: int, body: bytes, content_type: str = NOTE_CONTENT_TYPE) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            if self.path != f"{base}/{ADD_CHECKPOINT}":
                self._send(404, b"not found\n")
                return
            length_text = self.headers.get("Content-Length")
            if length_text is None or not length_text.isdigit():
                self._send(411, b"Content-Length required\n")
                return
            length = int(length_text)
            if length > MAX_REQUEST_BYTES:
                self.close_connection = True
                self._send(413, b"request too large\n")
                return
            data = self.rfile.read(length)
            try:
                with lock:
                    result = files.add_checkpoint(parse_request(data))
            except WitnessError as exc:
                if exc.status == 409 and exc.known_size is not None:
                    self._send(409, f"{exc.known_size}\n".encode(), SIZE_CONTENT_TYPE)
                else:
                    self._send(exc.status, (exc.detail + "\n").encode("utf-8"))
                return
            except (LedgerError, OSError) as exc:
                # e.g. the state file became unwritable: nothing was cosigned.
                self._send(500, (" ".join(str(exc).split()) + "\n").encode("utf-8"))
                return
            self._send(200, result.response)

        def do_GET(self) -> None:
            parts = self.path.removeprefix(base).strip("/").split("/")
            if len(parts) != 2 or parts[1] != "checkpoint":
                self._send(404, b"not found\n")
                return
            state = files.read()
            for origin, view in state.logs.items():
                digest = hashlib.sha256(origin.encode("utf-8")).hexdigest()
                if digest == parts[0] and view.note is not None:
                    self._send(200, view.note)
                    return
            self._send(404, b"no checkpoint cosigned for this log\n")

    return ThreadingHTTPServer((host, port), Handler)


def _post(url: str, body: bytes) -> tuple[int, str, bytes]:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": NOTE_CONTENT_TYPE}
    )
    try:
        with urllib.request.urlopen(request, timeout=CLIENT_TIMEOUT_S) as response:
            return (
                response.status,
                response.headers.get("Content-Type", ""),
                response.read(MAX_RESPONSE_BYTES),
            )
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read(MAX_RESPONSE_BYTES)
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise WitnessUnreachable(
            f"witness {url}, got {reason}, expected a tlog-witness HTTP answer"
        ) from None


def add_checkpoint_url(base_url: str) -> str:
    """``<submission prefix>/add-checkpoint`` for a witness URL given with or without it."""
    parsed = urllib.parse.urlsplit(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise InputError(f"witness URL, got {base_url!r}, expected http(s)://host[:port][/prefix]")
    path = parsed.path.rstrip("/")
    if not path.endswith("/" + ADD_CHECKPOINT):
        path += "/" + ADD_CHECKPOINT
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, "", ""))


def request_cosignature(
    base_url: str, build: Callable[[int], AddCheckpoint], first_old_size: int = 0
) -> bytes:
    """POST add-checkpoint to a witness; return the 200 body (signature lines).

    ``build(old_size)`` makes the request for a given old size. A 409 names the witness's
    size; the request is rebuilt for it once. Other statuses raise :class:`WitnessError`.
    """
    url = add_checkpoint_url(base_url)
    old = first_old_size
    for attempt in range(2):
        status, content_type, body = _post(url, build(old).encode())
        if status == 200:
            return body
        text = body.decode("utf-8", "replace").strip()
        if status == 409 and attempt == 0 and content_type.startswith(SIZE_CONTENT_TYPE):
            if not text.isdigit() or len(text) > 20:
                raise WitnessUnreachable(f"witness {url} 409 body, got {text[:40]!r}, a size")
            old = int(text)
            continue
        raise WitnessError(status, f"{url}: {' '.join(text.split())[:300]}")
    raise WitnessError(409, f"{url}: size changed twice while asking")  # pragma: no cover
