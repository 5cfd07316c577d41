"""Resumable upload of a file to hosting: CreateMultipartUpload, one PUT per part, CompleteUpload.
The state to resume is handed to ``on_state`` before the first part goes out; a later call given
that state asks which parts the service holds (ListUploadParts) and sends only the rest."""

from __future__ import annotations

import mimetypes
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from .client import MediaClient
from .gen.media.v1.video_pb import CompletedUploadPart, CompleteUploadRequest, CreateMultipartUploadRequest, ListUploadPartsRequest, UploadPart, Video

_MIN_PART = 5 * 1024 * 1024


@dataclass(frozen=True)
class UploadState:
    """What resumes an upload: keep it (e.g. as JSON via dataclasses.asdict) until upload_file returns."""

    video_id: str
    upload_id: str
    size: int
    part_size_bytes: int


def upload_file(
    client: MediaClient,
    path: str,
    *,
    title: str = "",
    description: str = "",
    content_type: str | None = None,
    part_size_bytes: int = 16 * 1024 * 1024,
    resume: UploadState | None = None,
    on_state: Callable[[UploadState], None] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Video:
    """Uploads ``path`` (resuming ``resume`` when given) and returns the video, now processing."""
    size = os.path.getsize(path)
    if not os.path.isfile(path) or size == 0:
        raise ValueError(f"{path} is not a non-empty file")
    if resume is not None:
        if resume.size != size:
            raise ValueError(f"{path} is {size} bytes; the upload to resume was of {resume.size}: start a new one")
        state = resume
        todo = list(client.videos.list_upload_parts(ListUploadPartsRequest(id=state.video_id, upload_id=state.upload_id)).missing)
    else:
        created = client.videos.create_multipart_upload(
            CreateMultipartUploadRequest(
                filename=os.path.basename(path),
                content_type=content_type or mimetypes.guess_type(path)[0] or "video/mp4",
                size_bytes=size,
                part_size_bytes=max(_MIN_PART, part_size_bytes),
                title=title,
                description=description,
            )
        )
        assert created.video is not None
        state = UploadState(created.video.id, created.upload_id, size, created.part_size_bytes)
        todo = list(created.parts)
        if on_state:
            on_state(state)
    parts_total = -(-state.size // state.part_size_bytes)
    stored = state.size - sum(_length(state, p.part_number) for p in todo)
    with open(path, "rb") as f:
        for part in todo:
            if not 1 <= part.part_number <= parts_total:
                raise RuntimeError(f"the service asked for part {part.part_number} of {parts_total}")
            f.seek((part.part_number - 1) * state.part_size_bytes)
            body = f.read(_length(state, part.part_number))
            _put_part(part, body)
            stored += len(body)
            if on_progress:
                on_progress(stored, state.size)
    listed = client.videos.list_upload_parts(ListUploadPartsRequest(id=state.video_id, upload_id=state.upload_id))
    if listed.missing:
        raise RuntimeError(f"parts {[p.part_number for p in listed.missing]} of {state.video_id} are not stored: resume the upload")
    parts = [CompletedUploadPart(part_number=p.part_number, etag=p.etag) for p in listed.stored]
    done = client.videos.complete_upload(CompleteUploadRequest(id=state.video_id, upload_id=state.upload_id, parts=parts))
    assert done.video is not None
    return done.video


def _length(state: UploadState, part_number: int) -> int:
    return min(state.part_size_bytes, state.size - (part_number - 1) * state.part_size_bytes)


def _put_part(part: UploadPart, body: bytes) -> None:
    """One part's PUT, tried 3 times: a part is stored whole or not at all, so sending it again is safe."""
    failure = ""
    for attempt in range(1, 4):
        request = urllib.request.Request(part.upload_url, data=body, method="PUT", headers={"content-type": "application/octet-stream"})
        try:
            with urllib.request.urlopen(request, timeout=300) as res:
                res.read()
                return
        except urllib.error.HTTPError as e:
            failure = f"HTTP {e.code} {e.read()[:500]!r}"
            if e.code < 500 and e.code != 429:
                raise RuntimeError(f"part {part.part_number} was refused: {failure}") from e
        except OSError as e:
            failure = str(e)
        time.sleep(0.5 * attempt)
    raise RuntimeError(f"part {part.part_number} failed 3 times ({failure}): resume the upload")
