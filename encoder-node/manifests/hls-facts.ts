// What an HLS output's manifests are written from besides its plan: the facts its executors, the
// chunks' join and its subtitle tracks reported. A plan is never written to after planning; its
// facts gather here, one record per master plan, until the last manifest is written from both.
import type { IFrameRates } from "./iframes.js";
import type { HlsMasterPlan } from "../plan.js";

/** A subtitle rendition the master lists beside the audio. */
export interface HlsSubtitleEntry {
  readonly playlist: string;
  readonly groupId: string;
  readonly name: string;
  readonly language: string;
  readonly isDefault: boolean;
  readonly forced: boolean;
  readonly captions: boolean;
}

/** An EXT-X-SESSION-DATA entry (chapters: Apple's com.apple.hls.chapters JSON). */
export interface HlsSessionData {
  readonly id: string;
  readonly uri: string;
  readonly language: string;
}

export interface HlsFacts {
  /** Codec strings known without probing the segments (aes_128's decrypted probe, a chunk's report), by media playlist. */
  readonly codecs: Map<string, string>;
  /** The first media timestamp (seconds), once read: the subtitles' timestamp map needs it. */
  firstTimestampSeconds?: number;
  /** Sizes of segments stored but not in the local folder (a chunked ladder's), by path relative to the plan's dir. */
  storedBytes: Readonly<Record<string, number>>;
  /** Subtitle renditions, once the output's tracks are written. */
  subtitles?: readonly HlsSubtitleEntry[];
  sessionData?: readonly HlsSessionData[];
  /** Rates of each I-frame playlist, by its path, measured once. */
  readonly iframeRates: Map<string, IFrameRates>;
}

const facts = new WeakMap<HlsMasterPlan, HlsFacts>();

/** The facts gathered for this master plan (a new, empty record the first time). */
export function hlsFactsOf(master: HlsMasterPlan): HlsFacts {
  let f = facts.get(master);
  if (!f) {
    f = { codecs: new Map(), storedBytes: {}, iframeRates: new Map() };
    facts.set(master, f);
  }
  return f;
}
