"""Schemathesis hooks and checks for the media API fuzz test (test/fuzz/fuzz.test.ts).

Loaded with SCHEMATHESIS_HOOKS=hooks (PYTHONPATH=test/fuzz). FUZZ_PASS picks what a run varies:

  plain      requests as schemathesis makes them (valid or missing credentials come from -H)
  transport  every request gets the next variation of VARIATIONS: compressed, broken or odd bodies,
             Content-Encoding / Accept-Encoding / Content-Type / Connect-Timeout-Ms / protocol
             version values, HTTP methods other than POST; `transport_expectation` checks the
             answer the Connect protocol requires for the variations that have one.

Checks (besides schemathesis's own response conformance):
  connect_server_error   no 500 ever; 501/503/504 only as unimplemented/unavailable/deadline_exceeded
  connect_error_framing  every non-200 answer (but HEAD) is a Connect JSON error whose code matches
                         the HTTP status, and carries media.v1.ErrorDetails; 429 is accepted
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import re
import threading

import schemathesis

PASS = os.environ.get("FUZZ_PASS", "plain")
HOST = os.environ.get("FUZZ_HOST", "uws")
# uWS 20.30's own parser gives no answer to a header name with a token character other than
# letters, digits and "-" (README, "The front door"; node:http is the documented host for such
# clients): on the uWS host such names are not sent, on node:http they are.
_UWS_NAME = re.compile(r"^[A-Za-z0-9-]+$")


def _uws_safe(case, kwargs) -> None:
    if HOST != "uws":
        return
    for headers in (case.headers, kwargs.get("headers")):
        if headers:
            for name in [n for n in headers if not _UWS_NAME.match(n)]:
                del headers[name]

# Connect's code -> HTTP status (connectrpc.com/docs/protocol#error-codes).
CODE_STATUS = {
    "canceled": 499,
    "unknown": 500,
    "invalid_argument": 400,
    "deadline_exceeded": 504,
    "not_found": 404,
    "already_exists": 409,
    "permission_denied": 403,
    "resource_exhausted": 429,
    "failed_precondition": 400,
    "aborted": 409,
    "out_of_range": 400,
    "unimplemented": 501,
    "internal": 500,
    "unavailable": 503,
    "data_loss": 500,
    "unauthenticated": 401,
}
# Statuses a host adapter answers before Connect sees the call, with the codes it may carry.
HOST_STATUS = {405: None, 413: {"invalid_argument", "resource_exhausted"}, 415: None, 404: {"not_found"}}


def _header(response, name: str) -> str | None:
    for k, v in response.headers.items():
        if k.lower() == name.lower():
            return v[0] if isinstance(v, list) else v
    return None


def _json(response):
    try:
        return json.loads(response.content)
    except Exception:
        return None


# ─────────────────────────────── transport variations ───────────────────────────────

def _dump(case) -> bytes:
    body = case.body
    try:
        return json.dumps(body).encode()
    except Exception:
        return b"{}"


# (name, change(case, kwargs, body_bytes), expectation or None)
# An expectation is (allowed statuses, allowed Connect codes or None, need Allow header).
VARIATIONS = [
    ("gzip body", lambda c, k, b: _set(c, k, gzip.compress(b), {"Content-Encoding": "gzip"}), None),
    ("gzip header, plain body", lambda c, k, b: _set(c, k, b or b"{}", {"Content-Encoding": "gzip"}), ({400}, {"invalid_argument"}, False)),
    ("truncated gzip", lambda c, k, b: _set(c, k, gzip.compress(b)[:12], {"Content-Encoding": "gzip"}), ({400}, {"invalid_argument"}, False)),
    ("br body", lambda c, k, b: _set(c, k, b, {"Content-Encoding": "br"}), ({501}, {"unimplemented"}, False)),
    ("bogus encoding", lambda c, k, b: _set(c, k, b, {"Content-Encoding": "bogus"}), ({501}, {"unimplemented"}, False)),
    ("identity encoding", lambda c, k, b: _set(c, k, b, {"Content-Encoding": "identity"}), None),
    ("accept gzip", lambda c, k, b: _set(c, k, b, {"Accept-Encoding": "gzip"}), None),
    ("accept br", lambda c, k, b: _set(c, k, b, {"Accept-Encoding": "br"}), None),
    ("accept bogus", lambda c, k, b: _set(c, k, b, {"Accept-Encoding": "bogus, *;q=0"}), None),
    ("connect-accept-encoding", lambda c, k, b: _set(c, k, b, {"Connect-Accept-Encoding": "gzip,br"}), None),
    ("timeout 1", lambda c, k, b: _set(c, k, b, {"Connect-Timeout-Ms": "1"}), None),
    ("timeout 0", lambda c, k, b: _set(c, k, b, {"Connect-Timeout-Ms": "0"}), None),
    ("timeout -5", lambda c, k, b: _set(c, k, b, {"Connect-Timeout-Ms": "-5"}), ({400}, {"invalid_argument"}, False)),
    ("timeout abc", lambda c, k, b: _set(c, k, b, {"Connect-Timeout-Ms": "abc"}), ({400}, {"invalid_argument"}, False)),
    ("timeout 11 digits", lambda c, k, b: _set(c, k, b, {"Connect-Timeout-Ms": "12345678901"}), ({400}, {"invalid_argument"}, False)),
    ("timeout 1.5", lambda c, k, b: _set(c, k, b, {"Connect-Timeout-Ms": "1.5"}), ({400}, {"invalid_argument"}, False)),
    ("protocol version 2", lambda c, k, b: _set(c, k, b, {"Connect-Protocol-Version": "2"}), None),
    ("json charset", lambda c, k, b: _set(c, k, b, {"Content-Type": "application/json; charset=utf-8"}), None),
    ("text/plain", lambda c, k, b: _set(c, k, b, {"Content-Type": "text/plain"}), ({415}, None, False)),
    ("no content-type", lambda c, k, b: _set(c, k, b, {"Content-Type": None}), ({415}, None, False)),
    ("proto content-type, json body", lambda c, k, b: _set(c, k, b, {"Content-Type": "application/proto"}), None),
    ("connect+json unenveloped", lambda c, k, b: _set(c, k, b, {"Content-Type": "application/connect+json"}), None),
    ("grpc-web+json unenveloped", lambda c, k, b: _set(c, k, b, {"Content-Type": "application/grpc-web+json"}), None),
    ("truncated json", lambda c, k, b: _set(c, k, (b or b"{}")[:-1], {}), ({400}, {"invalid_argument"}, False)),
    ("json array body", lambda c, k, b: _set(c, k, b"[" + b + b"]", {}), ({400}, {"invalid_argument"}, False)),
    ("json null body", lambda c, k, b: _set(c, k, b"null", {}), None),
    ("invalid utf-8", lambda c, k, b: _set(c, k, b"\xff\xfe" + b, {}), ({400}, {"invalid_argument"}, False)),
    ("deep nesting", lambda c, k, b: _set(c, k, b"[" * 100000 + b"]" * 100000, {}), ({400}, {"invalid_argument"}, False)),
    ("duplicate keys", lambda c, k, b: _set(c, k, b"{\"a\":1,\"a\":2}", {}), ({400}, {"invalid_argument"}, False)),
    ("method GET", lambda c, k, b: _method(k, "GET"), ({405}, None, True)),
    ("method PUT", lambda c, k, b: _method(k, "PUT"), ({405}, None, True)),
    ("method DELETE", lambda c, k, b: _method(k, "DELETE"), ({405}, None, True)),
    ("method PATCH", lambda c, k, b: _method(k, "PATCH"), ({405}, None, True)),
    ("method HEAD", lambda c, k, b: _method(k, "HEAD"), ({405}, None, True)),
    ("method OPTIONS", lambda c, k, b: _method(k, "OPTIONS"), ({200, 204, 405}, None, False)),
]


def _set(case, kwargs, body: bytes, headers: dict) -> None:
    kwargs["data"] = body
    if case.headers is None:
        case.headers = {}
    for name, value in headers.items():
        case.headers[name] = "" if value is None else value  # None: an empty Content-Type


def _method(kwargs, method: str) -> None:
    kwargs["method"] = method


_lock = threading.Lock()
_counter = itertools.count()
_applied: dict[int, tuple] = {}


# Schemathesis reuses ids from earlier answers (APIKeyService/List shows the fuzzer's own key), so
# a run would revoke or archive the credentials it fuzzes with and spend the rest of its budget on
# 401s (and Hypothesis, replaying a case whose answer changed meanwhile, reports a "Runtime Error").
# Ids in FUZZ_PROTECTED (the test's key, app and organization) are swapped for an unknown id of the
# same kind in the calls that would end them; every other captured id stays fair game.
PROTECTED = frozenset(filter(None, os.environ.get("FUZZ_PROTECTED", "").split(",")))
ENDING = re.compile(r"/(Revoke|Archive|Delete|SetStatus|RemoveMember|UpdateRole)$")


def _spare_protected(case) -> None:
    if not PROTECTED or not ENDING.search(case.operation.path) or not isinstance(case.body, dict):
        return
    for name, value in list(case.body.items()):
        if isinstance(value, str) and value in PROTECTED:
            prefix = value.split("_", 1)[0]
            case.body[name] = f"{prefix}_{'0' * max(1, len(value) - len(prefix) - 1)}"


@schemathesis.hook
def before_call(ctx, case, kwargs):
    _uws_safe(case, kwargs)
    _spare_protected(case)
    if PASS != "transport":
        return
    with _lock:
        i = next(_counter)
    name, change, expect = VARIATIONS[i % len(VARIATIONS)]
    change(case, kwargs, _dump(case))
    if case.headers is None:
        case.headers = {}
    case.headers["X-Fuzz-Variation"] = name
    _applied[id(case)] = (name, expect)


# ─────────────────────────────────────── checks ───────────────────────────────────────

@schemathesis.check
def connect_server_error(ctx, response, case):
    status = response.status_code
    if status < 500:
        return None
    body = _json(response)
    code = body.get("code") if isinstance(body, dict) else None
    if status in (501, 503, 504) and code is not None and CODE_STATUS.get(code) == status:
        return None
    raise AssertionError(f"server error {status}, code {code!r}, body {response.content[:300]!r}")


@schemathesis.check
def connect_error_framing(ctx, response, case):
    status = response.status_code
    if status < 300 or response.request.method == "HEAD":
        return None
    body = _json(response)
    where = f"{status} answer"
    if not (_header(response, "content-type") or "").lower().startswith("application/json"):
        if status in HOST_STATUS and HOST_STATUS[status] is None and not response.content:
            return None  # 405/415 from the host without a body: allowed
        raise AssertionError(f"{where} is not application/json: {_header(response, 'content-type')!r}, body {response.content[:200]!r}")
    if not isinstance(body, dict) or not isinstance(body.get("code"), str):
        raise AssertionError(f"{where} has no Connect error body: {response.content[:200]!r}")
    code = body["code"]
    if code not in CODE_STATUS:
        raise AssertionError(f"{where} has an unknown code {code!r}")
    allowed = HOST_STATUS.get(status, set())
    if CODE_STATUS[code] != status and (allowed is not None and code not in allowed):
        raise AssertionError(f"{where} carries code {code!r}, which Connect maps to {CODE_STATUS[code]}")
    details = body.get("details") or []
    if not any(isinstance(d, dict) and d.get("type") == "media.v1.ErrorDetails" for d in details):
        raise AssertionError(f"{where} ({code}) has no media.v1.ErrorDetails: {response.content[:300]!r}")
    return None


@schemathesis.check
def transport_expectation(ctx, response, case):
    applied = _applied.get(id(case))
    if applied is None or applied[1] is None:
        return None
    name, (statuses, codes, allow) = applied
    status = response.status_code
    if status == 429:
        return None  # rate limited: a legitimate answer to anything
    body = _json(response)
    code = body.get("code") if isinstance(body, dict) else None
    problems = []
    if status not in statuses:
        problems.append(f"status {status} (want {sorted(statuses)})")
    if codes is not None and code not in codes:
        problems.append(f"code {code!r} (want {sorted(codes)})")
    if allow and status == 405 and not _header(response, "allow"):
        problems.append("405 without an Allow header")
    if problems:
        raise AssertionError(f"[{name}] " + "; ".join(problems) + f"; body {response.content[:200]!r}")
    return None
