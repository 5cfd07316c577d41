// HLS: clear or aes_128, a ladder in one ffmpeg or one per rendition; growing (a hosted stream),
// split into chunks, or one chunk of a split ladder in hls-first-rung.ts.
import { AUDIO_TRACK_WEIGHT, audioArgs, renditionWeight } from "../renditions.js";
import { videoArgs } from "../video-args.js";
import { audioMaps } from "./commands.js";
import { firstRungPlan } from "./hls-first-rung.js";
import { type HlsLadder, aes128Of, hlsLadderOf, hlsParts } from "./hls-ladder.js";
import { type HlsLayout, hlsMuxer } from "./hls-segments.js";
import { ladderInput, oneCommand, plainInput } from "./layout.js";
import { AUDIO_GROUP } from "./master.js";
import type { ChunkPlan, HlsPlan } from "./types.js";

export { PROGRESSIVE_NICE } from "./hls-first-rung.js";

export function hlsPlan(l: HlsLayout): HlsPlan | ChunkPlan {
  const h = hlsLadderOf(l);
  if (h.segmenting.growing || h.segmenting.split) return firstRungPlan(h);
  return oneCommand(h) ? wholePlan(h) : perRenditionPlan(h);
}

/** The whole ladder and its audio from one decode, in one command. */
function wholePlan(h: HlsLadder): HlsPlan {
  const { renditions, audio, ctx } = h;
  const streams = [...renditions.map((r, i) => `v:${i},name:${r.name}${audio.length > 0 ? `,agroup:${AUDIO_GROUP}` : ""}`), ...h.audioStreams].join(" ");
  const cmd = [
    ...(renditions.length > 0 ? ladderInput(h, renditions) : plainInput(h)),
    ...renditions.flatMap((_, i) => ["-map", `[v${i}]`]),
    ...audioMaps(audio),
    ...renditions.flatMap((r, i) => videoArgs(r, i, ctx)),
    ...audio.flatMap((p, j) => audioArgs(p, j, ctx.input)),
    ...hlsMuxer(h.segmenting, streams),
  ];
  return { ...hlsParts(h), commands: [cmd], parallel: false, strategy: "split", ...aes128Of(h) };
}

/** One process per video rendition, and one for every audio track together. */
function perRenditionPlan(h: HlsLadder): HlsPlan {
  const { renditions, audio, ctx } = h;
  const commands = renditions.map((r) => [...ladderInput(h, [r]), "-map", "[v0]", ...videoArgs(r, 0, ctx), ...hlsMuxer(h.segmenting, `v:0,name:${r.name}`)]);
  const weights = renditions.map(renditionWeight);
  if (audio.length > 0) {
    commands.push([
      ...plainInput(h),
      ...audioMaps(audio),
      ...audio.flatMap((p, j) => audioArgs(p, j, ctx.input)),
      ...hlsMuxer(h.segmenting, audio.map((p, j) => `a:${j},name:${p.name}`).join(" ")),
    ]);
    weights.push(AUDIO_TRACK_WEIGHT * audio.length);
  }
  return { ...hlsParts(h), commands, parallel: true, strategy: h.strategy, weights, ...aes128Of(h) };
}
