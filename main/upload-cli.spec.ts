// The CLI following a video to the end, against an HTTP server that answers as the API does: in a
// cluster the video's job exists a moment after the upload completes, and until then JobService/Get
// answers not_found, which is no failure.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CliError, followUntilDone } from "./upload-cli.js";

let server: Server | undefined;
afterEach(() => {
  server?.close();
  vi.restoreAllMocks();
});

/** An API whose answers to each method come from `answers`, in turn (the last one repeats). */
async function api(answers: Record<string, [number, unknown][]>): Promise<{ url: string; key: string; org: string }> {
  server = createServer((req, res) => {
    const method = req.url!.replace("/media.v1.", "");
    const list = answers[method] ?? [[404, { code: "unimplemented", message: method }]];
    const [status, body] = list.length > 1 ? list.shift()! : list[0]!;
    req.resume();
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, key: "k", org: "o" };
}

const processing = { video: { id: "vid_1", status: "processing", job_id: "job_1" } };
const missing: [number, unknown] = [404, { code: "not_found", message: "job job_1 not found" }];

describe("media upload, following the video", () => {
  it("shows the video's status while its job does not exist yet, then the job's stage, then ready", async () => {
    const printed: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((s) => (printed.push(String(s)), true));
    const a = await api({
      "VideoService/Get": [
        [200, processing],
        [200, processing],
        [200, processing],
        [200, { video: { id: "vid_1", status: "ready", job_id: "job_1" } }],
      ],
      "JobService/Get": [missing, [200, { job: { status: "probing", progress: 0 } }], [200, { job: { status: "processing", progress: 40 } }]],
    });
    const video = await followUntilDone(a, "vid_1", 5);
    expect(video.status).toBe("ready");
    expect(printed.join("")).toBe("processing\nprobing 0%\nprocessing 40%\nready\n");
  });

  it("any other error of JobService/Get still ends it, with the API's code", async () => {
    vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const a = await api({ "VideoService/Get": [[200, processing]], "JobService/Get": [[403, { code: "permission_denied", message: "no" }]] });
    const failed = await followUntilDone(a, "vid_1", 5).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(CliError);
    expect(failed).toMatchObject({ code: "permission_denied", message: "JobService/Get: permission_denied: no" });
  });
});
