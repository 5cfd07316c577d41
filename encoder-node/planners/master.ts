// The HLS multivariant playlist's plan: variants and audio renditions, named for players.
import type { AudioPlan, Rendition } from "../renditions.js";
import type { HlsMasterPlan } from "./types.js";

/** The I-frame playlist beside a media playlist: `v0/index.m3u8` → `v0/index_iframes.m3u8`. */
export const iframePlaylistOf = (playlist: string) => playlist.replace(/\.m3u8$/, "") + "_iframes.m3u8";

export const AUDIO_GROUP = "audio";

/** Player label of a track without a name: the language's English name (pt-BR → Brazilian Portuguese); "" for none. */
export function languageName(tag: string): string {
  // Not a tag ("" included): Intl throws, and the label is the tag as given.
  try {
    return new Intl.DisplayNames(["en"], { type: "language" }).of(tag) ?? tag;
  } catch {
    return tag;
  }
}

export function hlsMasterOf(
  file: string,
  renditions: readonly Rendition[],
  audio: readonly AudioPlan[],
  playlistOf: (name: string, index: number, kind: "v" | "a") => string,
  iframes: boolean,
): HlsMasterPlan {
  return {
    file,
    variants: renditions.map((r, i) => ({
      playlist: playlistOf(r.name, i, "v"),
      width: r.width,
      height: r.height,
      frameRate: r.frameRate,
      ...(audio.length > 0 ? { audioGroup: AUDIO_GROUP } : {}),
      ...(iframes ? { iframes: { playlist: iframePlaylistOf(playlistOf(r.name, i, "v")) } } : {}),
      ...(r.colour ? { videoRange: r.colour.range } : {}),
    })),
    audio: audio.map((p, j) => ({
      playlist: playlistOf(p.name, j, "a"),
      groupId: AUDIO_GROUP,
      name: p.track.name || languageName(p.track.language) || (audio.length > 1 ? `Audio ${j + 1}` : "Audio"),
      language: p.track.language,
      isDefault: j === 0,
      channels: p.channels,
    })),
  };
}
