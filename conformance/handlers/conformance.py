"""Handlers for the conformance suite's test tools (specs in ``conformance/specs``).

Each tool's name, questions and results are fixed by a scenario of the official MCP conformance
suite; see ``conformance/SCENARIOS.md``. The handlers are plain functions like any user's: the host
passes each parameter by name from what is in scope (input fields, answer fields, the ask step's
outcome).
"""

from __future__ import annotations

import io
import json
import logging
import struct
import time
import wave
import zlib
from typing import Any

from host import ToolError

__all__ = [
    "always_fail",
    "audio_content",
    "count_to_100",
    "describe_contact",
    "echo",
    "elicitation_completed",
    "embedded_resource",
    "go_ahead",
    "greet",
    "image_content",
    "log_three_steps",
    "log_to_server",
    "mixed_content",
    "name_and_color",
    "region_of",
    "simple_text",
    "state_ok",
    "user_response",
]


def simple_text() -> str:
    """The text the tools-call-simple-text scenario documents."""
    return "This is a simple text response for testing."


def always_fail() -> str:
    """Fail the way a tool should: an error result the model can read, not a protocol error."""
    raise ToolError("This tool intentionally returns an error for testing")


def log_to_server(ctx: Any) -> str:
    """Write to the server's own log; the client asked for no log level, so it must see nothing."""
    log: logging.Logger = ctx.log
    log.info("test_logging_tool ran")
    return "Logged one line to the server log."


def log_three_steps(ctx: Any) -> str:
    """Log three info lines about 50 ms apart; a client that set a log level hears each one."""
    log: logging.Logger = ctx.log
    log.info("Tool execution started")
    time.sleep(0.05)
    log.info("Tool processing data")
    time.sleep(0.05)
    log.info("Tool execution completed")
    return "Logged three steps."


def region_of(region: str) -> str:
    """The region the call arrived for (its Mcp-Param-Region header was checked before)."""
    return f"The query would run in {region}."


def describe_contact(
    name: str | None = None,
    address: dict[str, Any] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> dict[str, Any]:
    """Echo the contact back, so a client can see which fields arrived."""
    given = {
        "name": name,
        "address": address,
        "contactMethod": contactMethod,
        "phone": phone,
        "email": email,
    }
    return {key: value for key, value in given.items() if value is not None}


def user_response(info: dict[str, Any]) -> str:
    """The tools-call-elicitation result: what the user did and what they entered."""
    return f"User response: action={info['action']}, content={json.dumps(info['content'])}"


def elicitation_completed(answer: dict[str, Any]) -> str:
    """The result the SEP-1034 and SEP-1330 scenarios document."""
    content = json.dumps(answer["content"])
    return f"Elicitation completed: action={answer['action']}, content={content}"


def greet(name: str) -> str:
    """Greet the user by the name they gave."""
    return f"Hello, {name}!"


def state_ok(ok: bool) -> str:
    """Reached only once the host has verified the echoed request state."""
    return f"state-ok (ok={json.dumps(ok)})"


def name_and_color(name: str, color: str | None = None) -> str:
    """Both rounds' answers, the first of which came back inside the request state."""
    return f"{name} likes {color or 'no colour in particular'}."


def echo(text: str) -> str:
    """Say back what the user typed."""
    return text


def go_ahead(ok: bool) -> str:
    """The user answered; say so."""
    return "Done." if ok else "The user said not to go ahead."


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A PNG of one colour, made here so the tests need no image file."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _wav(milliseconds: int, rate: int = 8000) -> bytes:
    """A silent mono 16-bit WAV clip."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes(b"\x00\x00" * (rate * milliseconds // 1000))
    return buffer.getvalue()


RED_PIXEL = _png(1, 1, (255, 0, 0))
RESOURCE = {
    "uri": "test://embedded-resource",
    "mimeType": "text/plain",
    "text": "This is an embedded resource content.",
}


def image_content() -> list[dict[str, Any]]:
    """One image block; the host base64-encodes the bytes."""
    return [{"type": "image", "data": RED_PIXEL, "mimeType": "image/png"}]


def audio_content() -> list[dict[str, Any]]:
    """One audio block: 100 ms of silence."""
    return [{"type": "audio", "data": _wav(100), "mimeType": "audio/wav"}]


def embedded_resource() -> list[dict[str, Any]]:
    """One embedded text resource."""
    return [{"type": "resource", "resource": RESOURCE}]


def mixed_content() -> list[Any]:
    """A text (a plain string is a text block), an image and an embedded resource."""
    return [
        "Here are a text, an image and a resource.",
        {"type": "image", "data": RED_PIXEL, "mimeType": "image/png"},
        {"type": "resource", "resource": RESOURCE},
    ]


def count_to_100(ctx: Any) -> str:
    """Three steps of work, each reported as progress (sent only if the client asked for it)."""
    for done in (0, 50, 100):
        if done:
            time.sleep(0.05)
        ctx.progress(done, total=100, message=f"{done}% done")
    return "Progress completed: 100 of 100."
