"""The client: connectrpc clients of every media.v1 service with the binary codec (the service's
JSON uses the spec's lowercase enum names, which protobuf JSON cannot read), credentials on every
call, retries of what is safe to retry (a mutating call under one Idempotency-Key for all its
attempts) and MediaApiError with the field violations."""

from __future__ import annotations

import random
import re
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext

from .errors import MediaApiError
from .gen.media.v1.api_key_connect import APIKeyServiceClientSync
from .gen.media.v1.app_connect import AppServiceClientSync
from .gen.media.v1.health_connect import HealthServiceClientSync
from .gen.media.v1.job_connect import JobServiceClientSync
from .gen.media.v1.organization_connect import OrganizationServiceClientSync
from .gen.media.v1.origin_connect import OriginServiceClientSync
from .gen.media.v1.preset_connect import PresetServiceClientSync
from .gen.media.v1.user_connect import UserServiceClientSync
from .gen.media.v1.video_connect import VideoServiceClientSync
from .gen.media.v1.webhook_connect import WebhookServiceClientSync

_BASE_URL = re.compile(r"^https?://[^/]+/?$")
# Reads and streams are safe to repeat without a key; every other method changes something.
_READ = re.compile(r"^(Get\w*|List\w*|Retrieve\w*|Check\w*|Watch)$")
_RETRYABLE = {Code.UNAVAILABLE, Code.RESOURCE_EXHAUSTED, Code.ABORTED}


class _Calls:
    """Credentials on every call; retries and typed errors on unary calls."""

    def __init__(self, api_key: str | None, organization_id: str | None, max_attempts: int, backoff: float) -> None:
        self._api_key = api_key
        self._organization_id = organization_id
        self._max_attempts = max_attempts
        self._backoff = backoff

    def _auth(self, ctx: RequestContext) -> None:
        if self._api_key:
            ctx.request_headers["authorization"] = f"Bearer {self._api_key}"
        if self._organization_id:
            ctx.request_headers["x-organization-id"] = self._organization_id

    def intercept_unary_sync(self, call_next: Callable[[Any, RequestContext], Any], request: Any, ctx: RequestContext, /) -> Any:
        self._auth(ctx)
        procedure = f"/{ctx.method.service_name}/{ctx.method.name}"
        if not _READ.match(ctx.method.name) and "idempotency-key" not in ctx.request_headers:
            # One key for every attempt: the service replays the first answer instead of acting twice.
            ctx.request_headers["idempotency-key"] = str(uuid.uuid4())
        attempt = 1
        while True:
            try:
                return call_next(request, ctx)
            except MediaApiError:
                raise
            except ConnectError as e:
                if e.code not in _RETRYABLE or attempt >= self._max_attempts:
                    raise MediaApiError(e, procedure) from e
            time.sleep(self._backoff * 2 ** (attempt - 1) * (0.5 + random.random()))
            attempt += 1

    def intercept_server_stream_sync(self, call_next: Callable[[Any, RequestContext], Iterator[Any]], request: Any, ctx: RequestContext, /) -> Iterator[Any]:
        self._auth(ctx)
        procedure = f"/{ctx.method.service_name}/{ctx.method.name}"
        try:
            yield from call_next(request, ctx)
        except MediaApiError:
            raise
        except ConnectError as e:
            raise MediaApiError(e, procedure) from e


class MediaClient:
    """One client per service, over the binary Connect protocol. Use it as a context manager (or call close()).

    ``MediaClient("https://media.example.com", api_key="ak_…", organization_id="org_…")``
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, organization_id: str | None = None, max_attempts: int = 4, backoff_seconds: float = 0.2) -> None:
        if not _BASE_URL.match(base_url):
            raise ValueError(f"base_url must be http(s)://host[:port] with no path, not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        calls = _Calls(api_key, organization_id, max(1, max_attempts), backoff_seconds)
        # The codec left unset is connectrpc's default: binary protobuf, the one that works here.
        kw: dict[str, Any] = {"interceptors": (calls,)}
        self.api_keys = APIKeyServiceClientSync(self.base_url, **kw)
        self.apps = AppServiceClientSync(self.base_url, **kw)
        self.health = HealthServiceClientSync(self.base_url, **kw)
        self.jobs = JobServiceClientSync(self.base_url, **kw)
        self.organizations = OrganizationServiceClientSync(self.base_url, **kw)
        self.origins = OriginServiceClientSync(self.base_url, **kw)
        self.presets = PresetServiceClientSync(self.base_url, **kw)
        self.users = UserServiceClientSync(self.base_url, **kw)
        self.videos = VideoServiceClientSync(self.base_url, **kw)
        self.webhooks = WebhookServiceClientSync(self.base_url, **kw)
        self._all = [self.api_keys, self.apps, self.health, self.jobs, self.organizations, self.origins, self.presets, self.users, self.videos, self.webhooks]

    def close(self) -> None:
        for c in self._all:
            c.close()

    def __enter__(self) -> MediaClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
