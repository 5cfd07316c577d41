// Content types of the files the encoder writes and the edge serves, by extension.
import path from "node:path";

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".mp4": "video/mp4",
  ".m4s": "video/iso.segment",
  ".m4a": "audio/mp4",
  ".webm": "video/webm",
  ".mkv": "video/x-matroska",
  ".mov": "video/quicktime",
  ".ts": "video/mp2t",
  ".m3u8": "application/vnd.apple.mpegurl",
  ".mpd": "application/dash+xml",
  ".vtt": "text/vtt",
  ".json": "application/json",
  ".jpg": "image/jpeg",
  ".png": "image/png",
  ".webp": "image/webp",
};

/** The content type of a file name or key; application/octet-stream when unknown. */
export function contentTypeOf(file: string): string {
  return CONTENT_TYPES[path.extname(file)] ?? "application/octet-stream";
}
