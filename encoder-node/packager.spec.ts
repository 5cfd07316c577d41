// The packager's command line and flag file, and the rewrite of its HLS key lines, without running it.
import { describe, expect, it } from "vitest";
import type { ContentKey } from "../src/drm/types.js";
import { finishMediaPlaylist, packagerArgs, packagerFlags } from "./packager.js";
import type { PackagingPlan } from "./plan.js";

const sd: ContentKey = { trackClass: "sd", kid: "00112233445566778899aabbccddeeff", key: "0123456789abcdef0123456789abcdef" };
const audio: ContentKey = { trackClass: "audio", kid: "ffeeddccbbaa99887766554433221100", key: "fedcba9876543210fedcba9876543210" };

const adaptive: PackagingPlan = {
  scheme: "cbcs",
  systems: ["clearkey", "widevine", "playready", "fairplay"],
  segmentSeconds: 4,
  singleFile: false,
  dir: "/work/out_1",
  clearDir: "/work/out_1/_clear",
  secretsDir: "/work/out_1.keys",
  streams: [
    {
      input: "/work/out_1/_clear/480p.mp4",
      kind: "video",
      trackClass: "sd",
      name: "480p",
      language: "",
      init: "init-0.m4s",
      segmentTemplate: "chunk-0-$Number%05d$.m4s",
      playlist: "media_0.m3u8",
    },
    {
      input: "/work/out_1/_clear/audio_0.mp4",
      kind: "audio",
      trackClass: "audio",
      name: "audio_0",
      language: "pt-BR",
      init: "init-1.m4s",
      segmentTemplate: "chunk-1-$Number%05d$.m4s",
      playlist: "media_1.m3u8",
    },
  ],
  mpd: "manifest.mpd",
  hls: { master: "index.m3u8", playlistType: "VOD" },
};

describe("packagerArgs and packagerFlags", () => {
  it("describes each stream relative to the output folder, labelled by track class, with no lead in the clear", () => {
    const args = packagerArgs(adaptive, "/work/out_1.keys/packager.flags");
    expect(args).toEqual([
      "in=_clear/480p.mp4,stream=video,init_segment=init-0.m4s,segment_template=chunk-0-$Number%05d$.m4s,playlist_name=media_0.m3u8,drm_label=sd",
      "in=_clear/audio_0.mp4,stream=audio,init_segment=init-1.m4s,segment_template=chunk-1-$Number%05d$.m4s,playlist_name=media_1.m3u8,drm_label=audio,language=pt-BR",
      "--flagfile",
      "/work/out_1.keys/packager.flags",
      "--protection_scheme",
      "cbcs",
      "--protection_systems",
      "CommonSystem,Widevine,PlayReady,FairPlay",
      "--clear_lead",
      "0",
      "--segment_duration",
      "4",
      "--mpd_output",
      "manifest.mpd",
      "--generate_static_live_mpd",
      "--hls_master_playlist_output",
      "index.m3u8",
      "--hls_playlist_type",
      "VOD",
      "--quiet",
    ]);
  });

  it("keeps keys and key IDs off the command line: they are in the flag file only", () => {
    const args = packagerArgs(adaptive, "/work/out_1.keys/packager.flags").join(" ");
    for (const k of [sd, audio]) {
      expect(args).not.toContain(k.key);
      expect(args).not.toContain(k.kid);
    }
    expect(args).not.toContain("--keys");
    expect(
      packagerFlags(
        new Map([
          ["sd", sd],
          ["audio", audio],
        ]),
      ),
    ).toBe(`--enable_raw_key_encryption\n--keys=label=sd:key_id=${sd.kid}:key=${sd.key},label=audio:key_id=${audio.kid}:key=${audio.key}\n`);
  });

  it("writes a single file per stream without a segment template, and only the outputs asked", () => {
    const single: PackagingPlan = {
      ...adaptive,
      scheme: "cenc",
      systems: ["clearkey"],
      singleFile: true,
      streams: [{ input: "/work/out_1/_clear/480p.mp4", kind: "video", trackClass: "sd", name: "480p", language: "", init: "stream-0.m4s" }],
      hls: undefined,
    };
    const args = packagerArgs(single, "/f");
    expect(args[0]).toBe("in=_clear/480p.mp4,stream=video,output=stream-0.m4s,drm_label=sd");
    expect(args).not.toContain("--hls_master_playlist_output");
    expect(args).toContain("--mpd_output");
  });
});

describe("finishMediaPlaylist", () => {
  // What Shaka Packager 3.4.2 writes with --protection_systems CommonSystem,Widevine,FairPlay.
  const written = [
    "#EXTM3U",
    "#EXT-X-VERSION:6",
    "#EXT-X-TARGETDURATION:3",
    "#EXT-X-PLAYLIST-TYPE:VOD",
    '#EXT-X-MAP:URI="init.mp4"',
    '#EXT-X-KEY:METHOD=SAMPLE-AES,URI="data:text/plain;base64,ABEiM0RVZneImaq7zN3u/w==",IV=0x7fd535f65971f1e10c116d10de3a228e,KEYFORMAT="identity"',
    '#EXT-X-KEY:METHOD=SAMPLE-AES,URI="data:text/plain;base64,AAAASnBzc2g=",KEYID=0x00112233445566778899aabbccddeeff,IV=0x7fd535f65971f1e10c116d10de3a228e,KEYFORMATVERSIONS="1",KEYFORMAT="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"',
    '#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://ABEiM0RVZneImaq7zN3u/w==",KEYFORMATVERSIONS="1",KEYFORMAT="com.apple.streamingkeydelivery"',
    "#EXTINF:2.000,",
    "seg_00001.m4s",
    "#EXT-X-ENDLIST",
    "",
  ];

  it("points the identity key at the key's relative address and adds an org.w3.clearkey line with the key ID; other systems untouched", () => {
    const out = finishMediaPlaylist(written.join("\n"), sd).split("\n");
    expect(out).toEqual([
      ...written.slice(0, 5),
      `#EXT-X-KEY:METHOD=SAMPLE-AES,URI="drm/${sd.kid}.key",KEYFORMAT="identity"`,
      '#EXT-X-KEY:METHOD=SAMPLE-AES,URI="data:text/plain;base64,ABEiM0RVZneImaq7zN3u/w==",KEYFORMAT="org.w3.clearkey",KEYFORMATVERSIONS="1"',
      ...written.slice(6),
    ]);
    expect(out.join("\n")).not.toContain(sd.key);
  });

  it("keeps cenc's method and closes an EVENT playlist the packager left open", () => {
    const event = written
      .map((l) => l.replace("VOD", "EVENT").replaceAll("METHOD=SAMPLE-AES,", "METHOD=SAMPLE-AES-CTR,"))
      .filter((l) => l !== "#EXT-X-ENDLIST");
    const out = finishMediaPlaylist(event.join("\n"), sd);
    expect(out.endsWith("seg_00001.m4s\n#EXT-X-ENDLIST\n")).toBe(true);
    expect(out).toContain(`#EXT-X-KEY:METHOD=SAMPLE-AES-CTR,URI="drm/${sd.kid}.key",KEYFORMAT="identity"`);
    expect(finishMediaPlaylist(written.join("\n"), sd).match(/#EXT-X-ENDLIST/g)).toHaveLength(1);
  });
});
