import { describe, expect, it } from "vitest";
import { withoutPaths } from "./node.js";

describe("failure messages", () => {
  it("name the node's files by their base name, so no server path reaches the caller", () => {
    expect(withoutPaths("not a readable media file: /tmp/hosting-x/data/work/embedded/job_1/input: Invalid data found when processing input")).toBe(
      "not a readable media file: input: Invalid data found when processing input",
    );
    expect(withoutPaths("Error opening output '/srv/media/work/n1/job_2/att/out_0/video.mp4' (No space left)")).toBe(
      "Error opening output 'video.mp4' (No space left)",
    );
    expect(withoutPaths("/data/work/ is gone")).toBe("(a folder) is gone");
  });

  it("keep URLs and plain words whole", () => {
    const url = "GET https://cdn.example.com/a/b/c.mp4 answered 404";
    expect(withoutPaths(url)).toBe(url);
    expect(withoutPaths("s3://bucket/key/in.mp4: access denied")).toBe("s3://bucket/key/in.mp4: access denied");
    expect(withoutPaths("audio/video streams: 1/2")).toBe("audio/video streams: 1/2");
  });
});
