// Builders the video actor's specs share: a video record as the gateway creates it (uploading, one
// single-part upload) and the job request it carries.
import type { JobRequest } from "../job/messages.js";
import type { VideoRecord } from "./messages.js";

export const request = { appId: "app_1", bodyHash: "video:vid_1" } as unknown as JobRequest;

/** A video as CreateUpload makes it, with `over` applied. */
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
    upload: { kind: "single", uploadId: "", filename: "a.mp4", sizeBytes: 100, partSizeBytes: 100, expiresAt: 5000 },
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
