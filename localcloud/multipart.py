"""The one file of a multipart/form-data upload (OpenAI's ``POST /files``), with its ``purpose`` field."""

from __future__ import annotations

from email.parser import BytesParser
from email.policy import HTTP


def form_file(content_type: str | None, data: bytes) -> tuple[str, str, bytes]:
    """The file name, ``purpose`` field and file bytes of a multipart/form-data upload."""
    head = f"Content-Type: {content_type or 'text/plain'}\r\n\r\n".encode()
    form = BytesParser(policy=HTTP).parsebytes(head + data)
    filename, purpose, content = "", "", b""
    for part in form.iter_parts() if form.is_multipart() else []:
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if name == "purpose" and isinstance(payload, bytes):
            purpose = payload.decode("utf-8", errors="replace")
        elif name == "file" and isinstance(payload, bytes):
            filename, content = part.get_filename() or "", payload
    return filename, purpose, content
