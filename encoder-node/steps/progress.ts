// An output's progress, in one table of shares: the transcription it waits on, the content-aware
// analysis, the encode (this node's part, then a split ladder's chunks by count).
import type { JobRecord } from "../../actors/job/messages.js";
import type { Reports } from "../reports.js";

/** Shares of an output's progress, each where it applies. */
export const PROGRESS_SHARES = {
  /** Speech recognition runs beside the encode: when this output waits on one, it is this share. */
  transcription: 0.3,
  /** Content-aware analysis (planned at about a fifth of the encode): this share of the encode's. */
  analysis: 0.2,
  /** A ladder chunked whole: this node's own part is its audio, a small share of the split ladder. */
  audioOfChunkedLadder: 0.05,
} as const;

/** This node's own share of a split ladder's encode: one rung of 1 + the chunked ones, or the audio alone. */
export const ownShareOf = (chunked: { readonly rest: readonly unknown[] } | undefined, keepsARung: boolean) =>
  !chunked ? 1 : keepsARung ? 1 / (1 + chunked.rest.length) : PROGRESS_SHARES.audioOfChunkedLadder;

/** Tells the job an output's progress: on each whole percent, and at least every second. */
export class OutputProgress {
  private analysed = 0;
  private heard = 0;
  private encoded = 0;
  private last = -1;
  private lastAt = 0;
  private transcription = 0;
  private readonly analysis: number;

  constructor(
    private readonly reports: Reports,
    private readonly job: JobRecord,
    private readonly attempt: string,
    private readonly outputId: string,
    contentAware: boolean,
  ) {
    this.analysis = contentAware ? PROGRESS_SHARES.analysis : 0;
  }

  /** The output waits on a transcription: it takes its share from here on. */
  waitsOnTranscription(yes: boolean): void {
    this.transcription = yes ? PROGRESS_SHARES.transcription : 0;
  }

  /** The analysis's own progress, told as it is (before the encode's reports start). */
  analysing(fraction: number): void {
    this.analysed = fraction;
    this.send(Math.floor(fraction * this.analysis * 100), Date.now());
  }

  hearing(fraction: number): void {
    this.heard = fraction;
    this.report();
  }

  encoding(fraction: number): void {
    this.encoded = fraction;
    this.report();
  }

  private report(): void {
    const t = this.transcription;
    const fraction = t * this.heard + (1 - t) * (this.analysis * this.analysed + (1 - this.analysis) * this.encoded);
    const percent = Math.floor(fraction * 100);
    const now = Date.now();
    if (percent > this.last || now - this.lastAt >= 1000) {
      this.last = Math.max(this.last, percent);
      this.lastAt = now;
      this.send(percent, now);
    }
  }

  private send(progress: number, at: number): void {
    this.reports.tell(this.job, { type: "output_progress", attempt: this.attempt, at, outputId: this.outputId, progress });
  }
}
