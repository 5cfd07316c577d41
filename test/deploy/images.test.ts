// The images deploy/images/build.sh makes: what each holds and how it runs, read from a container
// of each (the compose suites then run them together).
import { beforeAll, describe, expect, it } from "vitest";
import { buildImages, docker, engineMissing } from "./engine.js";

const missing = engineMissing();

/** Runs `script` with bash in a fresh container of `image`, as its own user; answers the output. */
const inImage = (image: string, script: string) => docker("run", "--rm", "--entrypoint", "bash", image, "-c", script);

describe.skipIf(missing !== undefined)("deploy/images", () => {
  beforeAll(() => buildImages(), 900_000);

  it("media:local runs as a non-root user with the data folder a volume, and holds ffmpeg, the packager, the recogniser and its model, and the VMAF scorer", async () => {
    const config = JSON.parse(await docker("image", "inspect", "--format", "{{json .Config}}", "media:local")) as {
      User: string;
      Volumes: Record<string, unknown>;
      Healthcheck?: { Test: string[] };
      StopSignal?: string;
      Entrypoint: string[];
    };
    expect(config.User).toBe("media");
    expect(Object.keys(config.Volumes)).toEqual(["/data"]);
    expect(config.Healthcheck?.Test.join(" ")).toMatch(/healthcheck\.mjs/);
    expect(config.StopSignal).toBe("SIGTERM");
    expect(config.Entrypoint.slice(0, 2)).toEqual(["/usr/bin/tini", "--"]); // signals reach Node, children are reaped
    const out = await inImage(
      "media:local",
      [
        "id -u",
        "node -v",
        "ffmpeg -hide_banner -version | head -n 1",
        "node_modules/shaka-packager/bin/packager-linux-x64 --version 2>&1 | head -n 1",
        "python3 -c 'import faster_whisper, ctranslate2; print(\"recogniser\", ctranslate2.__version__)'",
        "test -s .cache/asr/whisper-base/model.bin && echo model",
        ".cache/vmaf/ffmpeg -hide_banner -filters 2>/dev/null | grep -c libvmaf",
        "touch /data/w && echo data-writable",
      ].join(" && "),
    );
    const [uid, node, ffmpeg, packager, recogniser, model, vmaf, data] = out.trim().split("\n");
    expect(Number(uid)).toBeGreaterThan(0);
    expect(node).toMatch(/^v24\./);
    expect(ffmpeg).toMatch(/^ffmpeg version/);
    expect(packager).toMatch(/packager/i);
    expect(recogniser).toMatch(/^recogniser \d/);
    expect(model).toBe("model");
    expect(Number(vmaf)).toBeGreaterThan(0);
    expect(data).toBe("data-writable");
  }, 120_000);

  it("the peers' images run their servers as users of their own", async () => {
    for (const [image, user] of [
      ["media-kafka:3.9.2", "kafka"],
      ["media-cassandra:5.0.9", "cassandra"],
      ["media-minio:local", "minio"],
    ] as const) {
      expect((await inImage(image, "whoami")).trim()).toBe(user);
    }
    expect(await inImage("media-kafka:3.9.2", "ls /opt/kafka/lib | grep -c '^kafka_2.13-3.9.2.jar$'")).toMatch(/^1/);
    expect(await inImage("media-cassandra:5.0.9", "ls /opt/cassandra/lib | grep -c '^cassandra-all-5.0.9.jar$'")).toMatch(/^1/);
  }, 120_000);
});
