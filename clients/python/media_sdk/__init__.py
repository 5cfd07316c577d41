"""The media.v1 SDK for Python: typed clients of every service (connectrpc, binary codec), typed
errors, and the helpers most programs need. Messages and enums are in media_sdk.gen.media.v1.*_pb."""

from .client import MediaClient
from .errors import FieldViolation, MediaApiError
from .follow import VideoFailedError, all_videos, follow_job, paginate, wait_until_playable
from .upload import UploadState, upload_file
from .webhooks import WebhookVerificationError, verify_webhook

__all__ = [
    "FieldViolation",
    "MediaApiError",
    "MediaClient",
    "UploadState",
    "VideoFailedError",
    "WebhookVerificationError",
    "all_videos",
    "follow_job",
    "paginate",
    "upload_file",
    "verify_webhook",
    "wait_until_playable",
]
