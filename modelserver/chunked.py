"""A request body in ``Transfer-Encoding: chunked`` (RFC 9112, section 7.1), read within the same bounds as
a body whose Content-Length frames it: at most ``limit`` bytes (413 past it), arriving within the read
timeout plus a second per ``min_bytes_per_s`` received (408 when it stalls or trickles), and framed exactly
(400 for a chunk size that is not hexadecimal, a chunk without its CRLF, or a trailer section that is not
a few short header fields). Chunk extensions and trailer fields are read and ignored.
"""

from __future__ import annotations

import io
import time

from modelserver.chat import BadRequest

# A chunk-size line is a size and, rarely, a few extensions; a trailer section a few header fields.
MAX_SIZE_LINE = 1024
MAX_TRAILER_BYTES = 8 * 1024
_HEX = frozenset(b"0123456789abcdefABCDEF")
_CRLF = b"\r\n"


class Unframed(BadRequest):
    """A request whose body cannot be read as framed; ``discard`` is how many bytes of it may still be
    arriving (None: unknown), read and dropped after the refusal."""

    def __init__(self, message: str, *, status: int, discard: int | None = None) -> None:
        super().__init__(message, status)
        self.discard = discard


class _Reader:
    """Reads from ``rfile`` while the body keeps to its pace: ``timeout_s``, plus a second per
    ``min_bytes_per_s`` received so far, from the first read."""

    def __init__(self, rfile: io.BufferedIOBase, timeout_s: float, min_bytes_per_s: int) -> None:
        self._rfile = rfile
        self._timeout_s = timeout_s
        self._rate = min_bytes_per_s
        self._started = time.monotonic()
        self.received = 0

    def _check(self, got: bytes) -> bytes:
        self.received += len(got)
        allowed = self._timeout_s + self.received / self._rate
        if time.monotonic() - self._started > allowed:
            raise self._stalled()
        return got

    def _stalled(self) -> Unframed:
        return Unframed(
            f"the chunked body stopped arriving after {self.received:,} bytes: send it with no pause of "
            f"{self._timeout_s:g} s, and at least {self._rate:,} bytes a second after the first "
            f"{self._timeout_s:g} s",
            status=408,
            discard=0,
        )

    def line(self, most: int, what: str) -> bytes:
        """One line ending in CRLF, without it; 400 for a longer line, a bare LF, or the body's end."""
        try:
            got = self._check(self._rfile.readline(most + 2))
        except TimeoutError:
            raise self._stalled() from None
        if got.endswith(_CRLF):
            return got[:-2]
        if got.endswith(b"\n"):
            raise Unframed(f"{what} ends in a bare LF: end it with CRLF", status=400)
        if len(got) > most:
            raise Unframed(f"{what} is over {most:,} bytes", status=400)
        raise Unframed(f"the chunked body ended within {what}", status=400, discard=0)

    def exactly(self, length: int) -> bytes:
        parts: list[bytes] = []
        left = length
        while left:
            try:
                part = self._check(self._rfile.read1(min(left, 2**16)))
            except TimeoutError:
                raise self._stalled() from None
            if not part:
                raise Unframed(
                    f"the chunked body ended in a chunk, {left:,} of its bytes still to come",
                    status=400,
                    discard=0,
                )
            parts.append(part)
            left -= len(part)
        return b"".join(parts)


def read_chunked(rfile: io.BufferedIOBase, *, limit: int, timeout_s: float, min_bytes_per_s: int) -> bytes:
    """The body whose chunks ``rfile`` holds, at most ``limit`` bytes; :class:`Unframed` says what is
    wrong with one that cannot be read."""
    reader = _Reader(rfile, timeout_s, min_bytes_per_s)
    body = bytearray()
    while True:
        size = _chunk_size(reader.line(MAX_SIZE_LINE, "a chunk-size line"))
        if size == 0:
            break
        if len(body) + size > limit:
            raise Unframed(f"the body is over {limit:,} bytes: send at most that", status=413)
        body += reader.exactly(size)
        if reader.exactly(2) != _CRLF:
            raise Unframed(
                f"the chunk of {size:,} bytes ending at byte {len(body):,} of the body is not followed by "
                "CRLF: each chunk is exactly as long as its size says",
                status=400,
            )
    _trailers(reader)
    return bytes(body)


def _chunk_size(line: bytes) -> int:
    """The size a chunk-size line gives (extensions after ';' ignored); 400 for one that is not hex."""
    text = line.split(b";", 1)[0].rstrip(b" \t")
    if not text or not set(text) <= _HEX:
        shown = line[:40].decode("ascii", errors="replace")
        raise Unframed(
            f"the chunk size {shown!r} is not a hexadecimal number of bytes (a chunk starts with its size "
            "in hex, then CRLF)",
            status=400,
        )
    # More hex digits than any size under 2**64 has is past every limit; int() need not read them.
    return int(text, 16) if len(text.lstrip(b"0")) <= 16 else 2**64


def _trailers(reader: _Reader) -> None:
    """Read the trailer section up to its empty line: header fields, at most MAX_TRAILER_BYTES in all."""
    left = MAX_TRAILER_BYTES
    while True:
        line = reader.line(left, f"the trailer section (at most {MAX_TRAILER_BYTES:,} bytes)")
        if not line:
            return
        left -= len(line) + 2
        name, colon, _ = line.partition(b":")
        if not colon or not name or name != name.strip() or not name.isascii():
            raise Unframed(
                "a trailer line is not a header field (name: value): end the chunked body with 0, CRLF "
                "and an empty line",
                status=400,
            )
