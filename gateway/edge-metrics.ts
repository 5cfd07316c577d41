// Requests, bytes and refusals of the hosting routes, taken around each route's handler (so both
// host adapters count alike): the kind of object from the route and the file's name, a refusal's
// reason from the error that refused it. The counters' children are resolved at start
// (src/metrics-flow.ts), so a segment costs a map lookup and three additions.
import { recordEdgeAnswer, type EdgeKind, type EdgeRefusal } from "../src/metrics-flow.js";
import { EdgeError, type EdgeRequest, type EdgeResponse, type EdgeRoute } from "./edge.js";

/** A refusal that names its reason for the metrics; clients see the status and message as of any EdgeError. */
export class EdgeRefused extends EdgeError {
  constructor(
    status: number,
    readonly reason: EdgeRefusal,
    message: string,
  ) {
    super(status, message);
  }
}

const BY_STATUS: Readonly<Record<number, EdgeRefusal>> = {
  400: "bad_request",
  404: "not_found",
  409: "not_uploading",
  413: "too_large",
  416: "range_not_satisfiable",
};

function reasonOf(e: unknown): EdgeRefusal {
  if (e instanceof EdgeRefused) return e.reason;
  return (e instanceof EdgeError && BY_STATUS[e.status]) || "other";
}

/** The kind of a file of a playable directory, by its name; `master` is the video's main playlist when known. */
export function playbackKind(file: string, master: string | undefined): EdgeKind {
  const dot = file.lastIndexOf(".");
  const ext = dot < 0 ? "" : file.slice(dot + 1);
  switch (ext) {
    case "m3u8":
      if (file.endsWith("_iframes.m3u8")) return "iframe_playlist";
      return file === master ? "master_playlist" : "media_playlist";
    case "mpd":
      return "dash_manifest";
    case "ts":
    case "m4a":
    case "aac":
      return "segment";
    case "m4s":
      return /(^|\/)init[^/]*\.m4s$/.test(file) ? "init" : "segment";
    case "mp4":
      // fMP4 HLS writes init.mp4 beside its segments; any other MP4 is a progressive download.
      return /(^|\/)init\.mp4$/.test(file) ? "init" : "download";
    case "key":
      return "key";
    case "vtt":
      return "subtitle";
    case "jpg":
    case "png":
    case "webp":
      return "image";
    case "webm":
    case "mkv":
    case "mov":
      return "download";
    default:
      return "file";
  }
}

/** Body bytes of an answer: its Content-Length, else a whole body's length (HEAD sends none). */
function bodyBytes(req: EdgeRequest, out: EdgeResponse): number {
  if (req.method === "HEAD") return 0;
  const declared = out.header.get("content-length");
  if (declared !== null) return Number(declared) || 0;
  return out.body instanceof Uint8Array ? out.body.byteLength : 0;
}

/** The route with its answers counted under the kind `kindOf` tells (read after the handler ran, so it may use what the handler learnt). */
export function measured(route: EdgeRoute, kindOf: EdgeKind | ((req: EdgeRequest) => EdgeKind)): EdgeRoute {
  const kind = typeof kindOf === "string" ? () => kindOf : kindOf;
  const handler = route.handler;
  return {
    ...route,
    handler: async (req) => {
      let out: EdgeResponse;
      try {
        out = await handler(req);
      } catch (e) {
        recordEdgeAnswer(kind(req), e instanceof EdgeError ? e.status : 500, 0, reasonOf(e));
        throw e;
      }
      recordEdgeAnswer(kind(req), out.status, bodyBytes(req, out));
      return out;
    },
  };
}
