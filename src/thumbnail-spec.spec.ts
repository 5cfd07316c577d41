// checkThumbnailSpec without ffmpeg: each mode's fields and the limits, named by field.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ThumbnailFormat, ThumbnailMode, ThumbnailSpecSchema } from "./gen/media/v1/job_pb.js";
import { Check } from "./validation.js";
import { checkThumbnailSpec } from "./thumbnail-spec.js";

type Init = Parameters<typeof create<typeof ThumbnailSpecSchema>>[1];
const spec = (init: Init) => create(ThumbnailSpecSchema, init);

describe("checkThumbnailSpec", () => {
  const fields = (init: Init) => {
    const check = new Check();
    checkThumbnailSpec(check, "thumbnails[0]", spec(init));
    return check.violations.map((v) => v.field);
  };

  it("accepts each mode with its fields", () => {
    expect(fields({ mode: ThumbnailMode.SINGLE, width: 320 })).toEqual([]);
    expect(fields({ mode: ThumbnailMode.INTERVAL, intervalSeconds: 5, count: 100 })).toEqual([]);
    expect(fields({ mode: ThumbnailMode.SPRITE, count: 50, height: 90 })).toEqual([]);
    expect(fields({ mode: ThumbnailMode.ANIMATED, format: ThumbnailFormat.MP4, fps: 30, durationSeconds: 30 })).toEqual([]);
  });

  it("names each field out of its limits", () => {
    expect(fields({})).toEqual(["thumbnails[0].mode"]);
    expect(fields({ mode: ThumbnailMode.SINGLE, format: ThumbnailFormat.MP4, width: 15, height: 2161, timeSeconds: -1 })).toEqual([
      "thumbnails[0].format",
      "thumbnails[0].width",
      "thumbnails[0].height",
      "thumbnails[0].time_seconds",
    ]);
    expect(fields({ mode: ThumbnailMode.INTERVAL, intervalSeconds: 0.5, count: 101 })).toEqual(["thumbnails[0].interval_seconds", "thumbnails[0].count"]);
    expect(fields({ mode: ThumbnailMode.ANIMATED, format: ThumbnailFormat.JPG, fps: 31, durationSeconds: 0.4 })).toEqual([
      "thumbnails[0].format",
      "thumbnails[0].fps",
      "thumbnails[0].duration_seconds",
    ]);
    expect(fields({ mode: 9 as ThumbnailMode, format: 9 as ThumbnailFormat })).toEqual(["thumbnails[0].mode", "thumbnails[0].format"]);
  });
});
