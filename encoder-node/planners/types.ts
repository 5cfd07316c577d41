// The plan of one output, as the planners decide it: a value, deeply readonly once made; what the
// executors run and the manifests are written from.
import type { DrmSystemName, TrackClass } from "../../src/drm/types.js";
import type { CicpColour, VideoRange } from "../hdr.js";
import type { ProbeResult } from "../probe.js";
import type { ContentAwareRate, RenditionPlan } from "../renditions.js";

export interface PlanInput {
  readonly file: string;
  readonly probe: ProbeResult;
}

export type LadderStrategy = "split" | "per-rendition";

/** The multivariant playlist the manifests write (manifests/hls-master.ts) once the media playlists and segments exist, with the facts they report (manifests/hls-facts.ts). */
export interface HlsMasterPlan {
  /** Relative to dir. */
  readonly file: string;
  readonly variants: readonly {
    readonly playlist: string;
    readonly width: number;
    readonly height: number;
    readonly frameRate: number;
    readonly audioGroup?: string;
    /** hls.iframe_playlists: the variant's I-frame playlist (iframes.ts), written with the master. */
    readonly iframes?: { readonly playlist: string };
    /** VIDEO-RANGE of a variant with a colour plan (hdr.mode, or an HDR input); absent means SDR. */
    readonly videoRange?: VideoRange;
  }[];
  readonly audio: readonly {
    readonly playlist: string;
    readonly groupId: string;
    readonly name: string;
    readonly language: string;
    readonly isDefault: boolean;
    readonly channels: number;
  }[];
}

/** What every plan has: the commands the executors run and what progress is measured against. */
interface PlanCore {
  readonly outputId: string;
  /** Local folder holding every file this output produces (manifests, segments, files). */
  readonly dir: string;
  /** Path of the main file or manifest, relative to dir. */
  readonly main: string;
  /** ffmpeg invocations (argument vectors without the "ffmpeg" binary), run in order or in parallel per `parallel`. */
  readonly commands: readonly (readonly string[])[];
  readonly parallel: boolean;
  /** Duration the encode covers (after clip), for progress. */
  readonly durationMs: number;
  /** How the renditions share work: one decode split N ways, or one process each. */
  readonly strategy?: LadderStrategy;
  /** Share of the total work of each command, for progress; equal when absent. */
  readonly weights?: readonly number[];
  readonly renditions?: readonly RenditionPlan[];
  /** Niceness of each command (progressive plans run the later rungs below the first). */
  readonly nice?: readonly number[];
}

/** The MPD whose minBufferTime the manifests set after the commands (the dash muxer has no option for it). */
export interface DashManifestPlan {
  readonly file: string;
  readonly minBufferTimeSeconds: number;
  readonly colour?: CicpColour;
}

/** What the planners know of an output before its kind's planner lays it out. */
export type PlanBase = Pick<PlanCore, "outputId" | "dir" | "durationMs">;

/** The parts only some kinds of plan have. */
interface KindParts {
  /** Written by the manifests after the commands: ffmpeg's own master lacks measured bandwidths and AV1 codec strings. */
  readonly hlsMaster: HlsMasterPlan;
  readonly dashManifest: DashManifestPlan;
  /** cbcs and cenc: the commands write clear intermediates, and runPlan packages them with these settings. */
  readonly packaging: PackagingPlan;
  /** aes_128: the HLS muxer encrypts with the key info file runPlan writes before the commands (outside dir). */
  readonly aes128: { readonly keyInfoFile: string };
  /**
   * Progressive HLS (a hosted video's stream): the first command writes the lowest rung and the
   * audio, the second (niced, beside it) the other rungs; every media playlist is an EVENT
   * playlist that grows segment by segment, so the encoder node can publish them while they run.
   */
  readonly progressive: ProgressivePlan;
  /**
   * A chunked ladder: the commands write the lowest rung and the audio; these rungs come from
   * chunk plans (PlanOptions.chunk) run anywhere, and the encoder node joins their playlists and
   * writes the master (runPlan does not).
   */
  readonly chunked: { readonly rest: readonly RenditionPlan[]; readonly segmentSeconds: number };
}
/** Parts a kind does not have: absent from its type, so a caller holding any plan may still ask. */
type Absent<K extends keyof KindParts> = { readonly [P in K]?: never };

/**
 * A progressive file (MP4, WebM, MKV, MOV): the commands alone, nothing written after them. Its
 * kind may be left out: plans built by hand around runPlan (test/media/ffmpeg.test.ts) are such.
 */
export interface FilePlan extends PlanCore, Absent<keyof KindParts> {
  readonly kind?: "file";
}

/** Clear or aes_128 HLS: whole, growing (a hosted stream), or a split ladder's own part. */
export interface HlsPlan extends PlanCore, Absent<"dashManifest" | "packaging">, Partial<Pick<KindParts, "aes128" | "progressive" | "chunked">> {
  readonly kind: "hls";
  readonly hlsMaster: HlsMasterPlan;
}

/** One chunk of a split ladder: its rungs over the span; the encode that split it joins the playlists. */
export interface ChunkPlan extends PlanCore, Absent<keyof KindParts> {
  readonly kind: "chunk";
}

/** DASH by ffmpeg's dash muxer, and adaptive (CMAF), which adds HLS playlists over the same segments. */
export interface DashPlan extends PlanCore, Absent<"packaging" | "aes128" | "progressive" | "chunked">, Partial<Pick<KindParts, "hlsMaster">> {
  readonly kind: "dash";
  readonly dashManifest: DashManifestPlan;
}

/** cbcs and cenc: clear intermediates the packager encrypts into HLS, DASH or both. */
export interface PackagedPlan extends PlanCore, Absent<"aes128" | "progressive" | "chunked">, Partial<Pick<KindParts, "hlsMaster" | "dashManifest">> {
  readonly kind: "packaged";
  readonly packaging: PackagingPlan;
}

/** The plan of one output, keyed by its kind; a table over PlanKind (manifests/plan-manifests.ts) handles each. */
export type OutputPlan = FilePlan | HlsPlan | ChunkPlan | DashPlan | PackagedPlan;
export type PlanKind = NonNullable<OutputPlan["kind"]>;
/** The plan of one kind. */
export type PlanOf<K extends PlanKind> = Extract<OutputPlan, { readonly kind?: K }>;

/** Media playlists of a progressive plan, relative to its dir. */
export interface ProgressivePlan {
  /** The first rung's playlist and the audio playlists: playable once each has a segment. */
  readonly first: readonly string[];
  /** The other rungs' playlists, listed in the master once every one of them is complete. */
  readonly rest: readonly string[];
}

/** One clear intermediate and where the packager writes it encrypted. Output paths are relative to the plan's dir. */
export interface PackagedStream {
  /** The clear MP4 ffmpeg writes (absolute). */
  readonly input: string;
  readonly kind: "video" | "audio";
  /** Which key encrypts it: the packager's drm_label. */
  readonly trackClass: TrackClass;
  /** The rendition's name, or the audio track's (audio_0, ...). */
  readonly name: string;
  /** Audio: the track's BCP 47 tag, "" when none. */
  readonly language: string;
  /** The init segment, or with singleFile the whole stream. */
  readonly init: string;
  /** Media segments, a $Number$ template; absent with singleFile. */
  readonly segmentTemplate?: string;
  /** HLS media playlist (hls and adaptive). */
  readonly playlist?: string;
}

/** A Shaka Packager run: common encryption of the clear intermediates into CMAF segments and manifests. */
export interface PackagingPlan {
  readonly scheme: "cbcs" | "cenc";
  readonly systems: readonly DrmSystemName[];
  readonly segmentSeconds: number;
  readonly singleFile: boolean;
  /** The output folder (the plan's dir). */
  readonly dir: string;
  /** Folder of the clear intermediates inside dir, removed after packaging so it is never uploaded. */
  readonly clearDir: string;
  /** Folder beside dir for the flag file that carries the keys: outside dir, so never uploaded; removed after the run. */
  readonly secretsDir: string;
  readonly streams: readonly PackagedStream[];
  /** MPD, relative to dir (dash and adaptive). */
  readonly mpd?: string;
  /** HLS (hls and adaptive): the packager writes media playlists only beside a master; runPlan writes the master again from hlsMaster. */
  readonly hls?: { readonly master: string; readonly playlistType: "VOD" | "EVENT" };
}

export interface PlanOptions {
  readonly outputId: string;
  readonly workDir: string;
  readonly clip?: { readonly startSeconds: number; readonly endSeconds: number };
  readonly strategy?: LadderStrategy;
  /** Plan a clear or aes_128 HLS output progressively (see OutputPlan.progressive): what a hosted video's stream gets. */
  readonly progressive?: boolean;
  /**
   * Split a clear HLS ladder across encoder nodes (see OutputPlan.chunked): the plan's one command
   * encodes the lowest rung and the audio over the whole output, the other rungs are chunks.
   */
  readonly chunked?: boolean;
  /** Plan one chunk of a chunked output: its chunked rungs over the span, segments numbered from the span's first. */
  readonly chunk?: ChunkSpan;
  /**
   * A split ladder (chunked, or one chunk of it) whose lowest rung is encoded whole by the node
   * running the encode: a hosted video's stream, whose lowest rung is what plays first. Otherwise,
   * when the ladder has audio, every rung is cut into chunks and the encode's own command is the
   * audio alone: the source is decoded once, and the chunks share all of the work.
   */
  readonly wholeLowestRung?: boolean;
  /** content_aware: the analysis's rate for each video variant, by index (content-aware.ts). */
  readonly contentAware?: readonly ContentAwareRate[];
}

/** A chunk of a chunked output: seconds on the output's timeline (after the clip), a whole number of segments; the last is open. */
export interface ChunkSpan {
  readonly start: number;
  readonly end?: number;
}
