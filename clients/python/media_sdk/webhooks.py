"""Verifying a signed webhook delivery: ``Media-Signature: t=<unix>,v1=<hex>[,v1=<hex>]``, each v1
the HMAC-SHA256 of ``<t>.<raw body>`` keyed by an endpoint secret (two entries during the 24 h after
a rotation). Pass every secret you hold and the raw body exactly as received."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from collections.abc import Sequence
from typing import Any

_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
_UNIX = re.compile(r"^\d{1,12}$")


class WebhookVerificationError(Exception):
    """Why a delivery was refused (answer 400): ``reason`` is "malformed" (the header cannot be
    read), "timestamp" (outside the tolerance) or "mismatch" (no v1 entry matches a secret)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _parse(header: str | None) -> tuple[int, list[str]]:
    if not header:
        raise WebhookVerificationError("malformed", "no Media-Signature header")
    t: str | None = None
    signatures: list[str] = []
    for part in header.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "t":
            if t is not None:
                raise WebhookVerificationError("malformed", "Media-Signature has two timestamps")
            t = value
        elif key == "v1":
            signatures.append(value)
    if t is None or not _UNIX.match(t):
        raise WebhookVerificationError("malformed", "Media-Signature has no unix timestamp t=")
    if not signatures:
        raise WebhookVerificationError("malformed", "Media-Signature has no v1 entry")
    return int(t), signatures


def verify_webhook(raw_body: bytes | str, header: str | None, secrets: str | Sequence[str], *, tolerance_seconds: float = 300, now: float | None = None) -> dict[str, Any]:
    """Checks a delivery and returns its event (``id``, ``type``, ``data``, ...); raises
    WebhookVerificationError otherwise. Compares in constant time, against every secret given."""
    keys = [secrets] if isinstance(secrets, str) else list(secrets)
    if not keys or any(not k for k in keys):
        raise ValueError("verify_webhook needs at least one non-empty secret")
    t, signatures = _parse(header)
    age = (time.time() if now is None else now) - t
    if not abs(age) <= tolerance_seconds:
        raise WebhookVerificationError("timestamp", f"the signature's time is {age:.0f} s from now (tolerance {tolerance_seconds} s)")
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else raw_body
    match = False
    # Every secret against every entry, so the time taken does not tell which matched.
    for key in keys:
        expected = hmac.new(key.encode("utf-8"), f"{t}.".encode() + body, hashlib.sha256).digest()
        for candidate in signatures:
            if _HEX64.match(candidate) and hmac.compare_digest(expected, bytes.fromhex(candidate)):
                match = True
    if not match:
        raise WebhookVerificationError("mismatch", "no v1 signature matches the secrets given")
    return json.loads(body)
