// The media.v1 SDK for TypeScript: typed clients of every service (binary Connect protocol), typed
// errors, and the helpers most programs need (follow a job, wait for a video to play, pages as an
// async iterator, resumable uploads, webhook verification). Messages and enums are imported from
// the generated modules, e.g. "./gen/media/v1/job_pb.js" (no barrel: one module per proto file).
export { createMediaClient, mediaTransport, type ClientOptions, type MediaClient } from "./client.js";
export { MediaApiError, codeName, type ErrorCode } from "./errors.js";
export { allVideos, followJob, paginate, VideoFailedError, waitUntilPlayable, watchJob } from "./follow.js";
export { uploadFile, type UploadOptions, type UploadState } from "./upload.js";
export { verifyWebhook, WebhookVerificationError, type VerifyOptions, type WebhookEvent, type WebhookFailure } from "./webhooks.js";
