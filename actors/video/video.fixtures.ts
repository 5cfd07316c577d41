// Builders the video actor's specs share: the create command CreateUpload sends (one single-part
// upload), the record it decides, and the job request it carries.
import { UPLOAD_URL_SECONDS } from "../../src/hosting.js";
import type { JobRequest } from "../job/messages.js";
import type { VideoCommandOf, VideoRecord, VideoRequest } from "./messages.js";

export const request = { appId: "app_1", bodyHash: "video:vid_1" } as unknown as JobRequest;

/** The video createVideo() decides, with `over` applied. */
export function videoRecord(over: Partial<VideoRecord> = {}): VideoRecord {
  return {
    id: "vid_1",
    appId: "app_1",
    organizationId: "org_1",
    version: 1,
    source: "upload",
    status: "uploading",
    visibility: "unlisted",
    tags: [],
    inputContentType: "video/mp4",
    jobId: "job_1",
    hoverPreviews: false,
    upload: { kind: "single", uploadId: "", filename: "a.mp4", sizeBytes: 100, partSizeBytes: 100, expiresAt: 1000 + UPLOAD_URL_SECONDS * 1000 },
    jobRequest: request,
    durationSeconds: 0,
    renditions: [],
    outputSizeBytes: 0,
    createdAt: 1000,
    updatedAt: 1000,
    sourcePinned: false,
    ...over,
  };
}

/** What CreateUpload asks of vid_1 at 1000, with `over` applied: it decides videoRecord(). */
export function videoRequest(over: Partial<VideoRequest> = {}): VideoRequest {
  return {
    appId: "app_1",
    organizationId: "org_1",
    source: "upload",
    visibility: "unlisted",
    tags: [],
    inputContentType: "video/mp4",
    jobId: "job_1",
    hoverPreviews: false,
    upload: { kind: "single", uploadId: "", filename: "a.mp4", sizeBytes: 100, partSizeBytes: 100 },
    jobRequest: request,
    ...over,
  };
}

export const createVideo = (over: Partial<VideoRequest> = {}, at = 1000, id = "vid_1"): VideoCommandOf<"create"> => ({
  type: "create",
  id,
  at,
  request: videoRequest(over),
});
