"""Following things to their end: a job through Watch until its terminal status, a video until it
plays, and every page of a list as one iterator."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .client import MediaClient
from .errors import MediaApiError
from .gen.media.v1.common_pb import PaginationRequest
from .gen.media.v1.job_pb import Job, JobStatus, WatchJobRequest
from .gen.media.v1.video_pb import ListVideosRequest, Video, VideoStatus, WatchVideoRequest

_ENDED = {JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELED, JobStatus.PARTIAL}
T = TypeVar("T")


def follow_job(client: MediaClient, job_id: str, on_update: Callable[[Job, str], None] | None = None, reconnects: int = 3) -> Job:
    """Follows a job with Watch until it ends (completed, failed, canceled or partial) and returns it;
    ``on_update`` sees every state with Watch's event type. A stream cut early is opened again."""
    for left in range(reconnects, -1, -1):
        try:
            for m in client.jobs.watch(WatchJobRequest(id=job_id)):
                if m.job is None:
                    continue
                if on_update:
                    on_update(m.job, m.event_type)
                if m.job.status in _ENDED:
                    return m.job
        except MediaApiError as e:
            if left == 0 or e.code.value not in ("unavailable", "unknown", "internal"):
                raise
    raise RuntimeError(f"the Watch stream of {job_id} ended before the job did")


class VideoFailedError(Exception):
    """The video ended in error (or was taken down) instead of playing."""

    def __init__(self, video: Video) -> None:
        super().__init__(f"video {video.id} is {video.status.name.lower()}: {video.error_code or ''} {video.error_message or ''}".strip())
        self.video = video


def wait_until_playable(client: MediaClient, video_id: str) -> Video:
    """Follows a video with Watch until it plays (status ready) and returns it with its playback URL."""
    for m in client.videos.watch(WatchVideoRequest(id=video_id)):
        v = m.video
        if v is None:
            continue
        if v.status == VideoStatus.READY:
            return v
        if v.status in (VideoStatus.ERROR, VideoStatus.ARCHIVED, VideoStatus.DELETED):
            raise VideoFailedError(v)
    raise RuntimeError(f"the Watch stream of {video_id} ended before the video played")


def paginate(list_method: Callable[[Any], Any], request: Any, items: Callable[[Any], list[T]], page_size: int = 100) -> Iterator[T]:
    """Every item of a cursor-paged list: ``paginate(client.jobs.list, ListJobsRequest(), lambda r: r.jobs)``.
    The request's ``pagination`` is set for each page (limit ``page_size``, 1 to 100)."""
    cursor = ""
    while True:
        request.pagination = PaginationRequest(limit=page_size, cursor=cursor)
        page = list_method(request)
        yield from items(page)
        cursor = page.pagination.next_cursor if page.pagination is not None else ""
        if not cursor:
            return


def all_videos(client: MediaClient, page_size: int = 100, **filters: Any) -> Iterator[Video]:
    """Every video (the video list pages with page_size and page_token, as the spec has it)."""
    token = ""
    while True:
        page = client.videos.list(ListVideosRequest(page_size=page_size, page_token=token, **filters))
        yield from page.videos
        token = page.next_page_token
        if not token:
            return
