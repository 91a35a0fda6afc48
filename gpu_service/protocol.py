"""The control channel: length-prefixed JSON messages over a Unix stream socket.

Only small messages travel here (slot numbers, shapes, keys, ids); frames and outputs stay in shared memory.

client -> daemon                                    daemon -> client
  (on connect)                                        {"op": "hello", "proto", "shm", "slot_bytes", ...}
  {"op": "ping", "id"}                                {"id", "ok": true, "status": "ready", ...}
  {"op": "lease", "id", "key": [job, item]}           {"id", "ok": true, "slot"}   (when a slot is free)
  {"op": "infer", "id", "slot", "model", "key",       {"id", "ok": true, "outputs": {name: array}, "kept"}
   "frames": array, "context": {name: array}}         {"id", "ok": false, "error": class name, "message"}
  {"op": "release", "slot"}                           (no reply)
where array = {"offset", "shape", "dtype"} inside the slot. An error reply to `infer` means the daemon has
taken the slot back. After a success the client reads its outputs from the slot; then, if the reply says `kept`,
the slot stays leased to the connection for its next request (no lease round trip, no release message),
otherwise the client releases it. The daemon keeps a slot only while the pool has no waiters and spare slots, so
kept slots never starve other workers of the pool, and it decides when the outputs are written, so a request
costs one round trip once the connection holds a slot.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

PROTO = 2
MAX_MESSAGE = 1 << 20
_HEADER = struct.Struct("!I")

FRAME_DTYPE = "uint8"
CONTEXT_DTYPES = ("uint8", "float32")
OUTPUT_DTYPE = "float32"


class ProtocolError(Exception):
    """The peer sent bytes that are not a valid message."""


class FramingError(ProtocolError):
    """The byte stream itself is broken (bad length); the connection cannot continue."""


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    if len(body) > MAX_MESSAGE:
        raise ProtocolError(f"message of {len(body)} bytes exceeds {MAX_MESSAGE}")
    return _HEADER.pack(len(body)) + body


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(encode(message))


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            if got == 0:
                return None
            raise ConnectionError("peer closed the connection mid-message")
        got += k
    return bytes(buf)


def recv_raw(sock: socket.socket) -> bytes | None:
    """One message body, or None on a clean end of stream."""
    header = _recv_exact(sock, _HEADER.size)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    if length > MAX_MESSAGE:
        raise FramingError(f"message length {length} exceeds {MAX_MESSAGE}")
    body = _recv_exact(sock, length) if length else b""
    if body is None:
        raise ConnectionError("peer closed the connection mid-message")
    return body


def decode(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ProtocolError("a message must be a JSON object")
    return value


def recv(sock: socket.socket) -> dict[str, Any] | None:
    body = recv_raw(sock)
    return None if body is None else decode(body)


# --- request messages, validated by the daemon --------------------------------------------------------------

_Strict = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
_Dim = Annotated[int, Field(ge=0, le=1 << 31)]


class ArraySpec(BaseModel):
    model_config = _Strict
    offset: Annotated[int, Field(ge=0)]
    shape: tuple[_Dim, ...] = Field(min_length=1, max_length=8)
    dtype: Literal["uint8", "float32"]

    @property
    def nbytes(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n * (1 if self.dtype == "uint8" else 4)


class Ping(BaseModel):
    model_config = _Strict
    op: Literal["ping"]
    id: int


class Lease(BaseModel):
    model_config = _Strict
    op: Literal["lease"]
    id: int
    key: tuple[float, float]


class Infer(BaseModel):
    model_config = _Strict
    op: Literal["infer"]
    id: int
    slot: int
    model: str = Field(max_length=128)
    key: tuple[float, float]
    frames: ArraySpec
    context: dict[str, ArraySpec] = Field(default_factory=dict, max_length=16)


class Release(BaseModel):
    model_config = _Strict
    op: Literal["release"]
    slot: int


Request = Annotated[Ping | Lease | Infer | Release, Field(discriminator="op")]
REQUEST = TypeAdapter(Request)


def parse_request(body: bytes) -> Ping | Lease | Infer | Release:
    try:
        return REQUEST.validate_json(body)
    except ValueError as exc:
        raise ProtocolError(str(exc).replace("\n", "; ")) from exc


def request_id_of(body: bytes) -> int | None:
    """The id of a message that failed validation, if readable, so the error reply reaches its caller."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    rid = value.get("id") if isinstance(value, dict) else None
    return rid if isinstance(rid, int) and not isinstance(rid, bool) else None


def error_reply(request_id: int | None, error: str, message: str) -> dict[str, Any]:
    return {"id": request_id, "ok": False, "error": error, "message": message}
