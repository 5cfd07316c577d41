// One video (#/videos/<id>): its player (the service's own player page, with its captions and
// chapters, in an iframe), its renditions and sizes, its playback and embed links with Copy, its
// title, description, tags and visibility edited in place, its poster and hover preview, and its
// encoding followed live with VideoService/Watch (and the job's progress with JobService/Watch)
// while it is not done, never by polling. Archive and Delete ask first.
import { Code, ConnectError } from "@connectrpc/connect";
import { useEffect, useRef, useState } from "preact/hooks";
import type { Job } from "../../../src/gen/media/v1/job_pb.js";
import { VideoCodec } from "../../../src/gen/media/v1/preset_pb.js";
import { VideoStatus, VideoVisibility, type Video } from "../../../src/gen/media/v1/video_pb.js";
import { api, problemOf, type Problem } from "../api.js";
import { CopyButton } from "../ui.js";
import type { PageProps } from "../workspace.js";

const STATUS: Record<VideoStatus, string> = {
  [VideoStatus.UNSPECIFIED]: "unknown",
  [VideoStatus.UPLOADING]: "uploading",
  [VideoStatus.PROCESSING]: "processing",
  [VideoStatus.READY]: "ready",
  [VideoStatus.ERROR]: "error",
  [VideoStatus.ARCHIVED]: "archived",
  [VideoStatus.DELETED]: "deleted",
};
const CODEC: Record<VideoCodec, string> = {
  [VideoCodec.UNSPECIFIED]: "—",
  [VideoCodec.H264]: "H.264",
  [VideoCodec.H265]: "H.265",
  [VideoCodec.VP9]: "VP9",
  [VideoCodec.AV1]: "AV1",
};
const VISIBILITIES: readonly { value: VideoVisibility; label: string }[] = [
  { value: VideoVisibility.PUBLIC, label: "Public: anyone with the link" },
  { value: VideoVisibility.UNLISTED, label: "Unlisted: direct link only" },
  { value: VideoVisibility.PRIVATE, label: "Private: no player page or embed" },
];

/** Still changing: uploading, processing, or playable while the rest of its ladder encodes. */
const encoding = (v: Video) =>
  v.status === VideoStatus.UPLOADING || v.status === VideoStatus.PROCESSING || (v.status === VideoStatus.READY && !v.encodedAt && !v.errorCode);

const bytes = (n: number) =>
  n >= 1e9 ? `${(n / 1e9).toFixed(2)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : n >= 1e3 ? `${Math.round(n / 1e3)} kB` : `${n} B`;
const clock = (s: number) => `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, "0")}`;
const when = (t: { seconds: bigint } | undefined) => (t ? new Date(Number(t.seconds) * 1000).toLocaleString() : "—");
const euros = new Intl.NumberFormat("en", { style: "currency", currency: "EUR", minimumFractionDigits: 2, maximumFractionDigits: 4 });

interface Draft {
  title: string;
  description: string;
  tags: string;
  visibility: VideoVisibility;
}
const draftOf = (v: Video): Draft => ({
  title: v.title ?? "",
  description: v.description ?? "",
  tags: v.tags.join(", "),
  visibility: v.visibility === VideoVisibility.UNSPECIFIED ? VideoVisibility.UNLISTED : v.visibility,
});

type Loaded = { kind: "loading" } | { kind: "missing" } | { kind: "problem"; message: string } | { kind: "ready" };

export function VideoPage({ rest }: PageProps) {
  const id = decodeURIComponent(rest);
  const [loaded, setLoaded] = useState<Loaded>({ kind: "loading" });
  const [video, setVideo] = useState<Video | undefined>();
  const [job, setJob] = useState<Job | undefined>();
  const [draft, setDraft] = useState<Draft>({ title: "", description: "", tags: "", visibility: VideoVisibility.UNLISTED });
  const [problem, setProblem] = useState<Problem | undefined>();
  const [saved, setSaved] = useState("");
  const [busy, setBusy] = useState(false);
  const stops = useRef<AbortController[]>([]);
  const following = useRef({ video: false, job: "" });

  /** Follows the video until it is done: the snapshot, then each change as the server sends it. */
  const followVideo = () => {
    if (following.current.video) return;
    following.current.video = true;
    const stop = new AbortController();
    stops.current.push(stop);
    void (async () => {
      try {
        for await (const m of api.videos.watch({ id }, { signal: stop.signal })) if (m.video) setVideo(m.video);
      } catch {
        /* ended, or left the page */
      } finally {
        following.current.video = false;
      }
    })();
  };

  /** Follows the producing job for its progress (0 to 100) and, at the end, its captions and chapters. */
  const followJob = (jobId: string) => {
    if (following.current.job === jobId) return;
    following.current.job = jobId;
    const stop = new AbortController();
    stops.current.push(stop);
    void (async () => {
      try {
        for await (const m of api.jobs.watch({ id: jobId }, { signal: stop.signal })) if (m.job) setJob(m.job);
      } catch {
        /* ended, left the page, or the job is not ours to read */
      }
    })();
  };

  useEffect(() => {
    void (async () => {
      try {
        const v = (await api.videos.get({ id })).video;
        if (!v) return setLoaded({ kind: "missing" });
        setVideo(v);
        setDraft(draftOf(v));
        setLoaded({ kind: "ready" });
      } catch (e) {
        const code = ConnectError.from(e).code;
        setLoaded(code === Code.NotFound || code === Code.InvalidArgument ? { kind: "missing" } : { kind: "problem", message: problemOf(e).message });
      }
    })();
    const live = stops.current;
    return () => live.forEach((s) => s.abort());
  }, []);

  // While encoding: watch the video and its job. Once done: the job once more, for its captions and chapters.
  const done = video ? !encoding(video) : false;
  useEffect(() => {
    if (!video) return;
    if (!done) followVideo();
    if (!video.jobId) return;
    if (!done) followJob(video.jobId);
    else
      void api.jobs.get({ id: video.jobId }).then(
        (r) => setJob(r.job),
        () => undefined,
      );
  }, [video?.jobId, done]);

  if (loaded.kind === "loading") return <p class="loading">Loading the video…</p>;
  const back = (
    <p class="toolbar">
      <a href="#/videos">Back to videos</a>
    </p>
  );
  if (loaded.kind === "missing" || !video) {
    return (
      <>
        {back}
        <h1>Video not found</h1>
        <p class="empty" role="status">
          There is no video <code>{id || "(no id)"}</code> in this organization: it may never have existed, or the link is mistyped.
        </p>
      </>
    );
  }
  if (loaded.kind === "problem") {
    return (
      <>
        {back}
        <h1>Video</h1>
        <p role="alert">{loaded.message}</p>
      </>
    );
  }

  const v = video;
  const status = STATUS[v.status];
  const name = v.title || v.id;

  const save = async (e: Event) => {
    e.preventDefault();
    setProblem(undefined);
    setSaved("");
    setBusy(true);
    const tags = draft.tags
      .split(",")
      .map((t) => t.trim())
      .filter((t) => t !== "");
    try {
      const updated = (
        await api.videos.update({
          id: v.id,
          title: draft.title.trim(),
          description: draft.description,
          ...(tags.length ? { tags } : { clearTags: true }),
          visibility: draft.visibility,
        })
      ).video;
      if (updated) {
        setVideo(updated);
        setDraft(draftOf(updated));
      }
      setSaved("Saved.");
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(false);
    }
  };

  const act = async (what: "archive" | "delete") => {
    const question =
      what === "archive"
        ? `Archive "${name}"? Playback is refused from now on; the files are kept.`
        : `Delete "${name}"? Its source and every rendition are removed from storage. This cannot be undone.`;
    if (!confirm(question)) return;
    setProblem(undefined);
    setSaved("");
    try {
      const r = what === "archive" ? await api.videos.archive({ id: v.id }) : await api.videos.delete({ id: v.id });
      if (r.video) setVideo(r.video);
    } catch (err) {
      setProblem(problemOf(err));
    }
  };

  // Field errors by the form's fields: tags[3] is shown beside Tags.
  const fieldError = (field: string): string | undefined => {
    if (!problem) return undefined;
    const hit = Object.entries(problem.fields).find(([f]) => f === field || f.startsWith(`${field}[`) || (field === "tags" && f === "clear_tags"));
    return hit?.[1];
  };
  const unplaced = problem && !["title", "description", "tags", "visibility"].some((f) => fieldError(f));

  const captions = job?.subtitleResults ?? [];
  const chapters = (job?.chapterResults ?? []).flatMap((c) => c.chapters);

  return (
    <>
      {back}
      <h1>{name}</h1>
      <p>
        <span class="status" data-status={status}>
          {status}
        </span>
        {v.status === VideoStatus.READY && encoding(v) && <span class="muted"> · playable; the rest of its renditions are encoding</span>}
      </p>

      {encoding(v) && (
        <section class="card" aria-labelledby="encoding-heading">
          <h2 id="encoding-heading">Encoding</h2>
          <p role="status" aria-live="polite">
            {v.status === VideoStatus.UPLOADING ? "Waiting for the upload to finish." : `Encoding: ${job ? `${job.progress}%` : "starting"}.`}
          </p>
          <progress max={100} value={job?.progress ?? 0} aria-label="Encoding progress" />
        </section>
      )}

      {(v.status === VideoStatus.ERROR || v.errorCode) && (
        <section class="card" aria-labelledby="error-heading">
          <h2 id="error-heading">Error</h2>
          <p role="alert">
            <code>{v.errorCode ?? "error"}</code>
            {v.errorMessage ? `: ${v.errorMessage}` : ""}
          </p>
        </section>
      )}

      <section aria-labelledby="player-heading">
        <h2 id="player-heading">Player</h2>
        {v.embedUrl ? (
          <iframe
            src={v.embedUrl}
            title={`Player: ${name}`}
            width={640}
            height={360}
            style={{ width: "100%", maxWidth: "48rem", height: "auto", aspectRatio: "16 / 9", border: "0", display: "block" }}
            allow="autoplay; fullscreen; picture-in-picture"
            allowFullScreen
          />
        ) : (
          <p class="empty">
            {v.visibility === VideoVisibility.PRIVATE
              ? "Private videos have no player page: make it public or unlisted to embed it."
              : v.status === VideoStatus.READY
                ? "No player page: the app has no player base configured."
                : `No player while the video is ${status}.`}
          </p>
        )}
        {captions.length > 0 && (
          <>
            <h3>Captions</h3>
            <ul>
              {captions.map((c) => (
                <li key={`${c.outputId}-${c.trackIndex}`}>
                  {c.name || c.language || `Track ${c.trackIndex + 1}`}
                  {c.language && c.name ? <span class="muted"> ({c.language})</span> : null}
                </li>
              ))}
            </ul>
          </>
        )}
        {captions.some((c) => c.transcript.length > 0) && (
          <details>
            <summary>Transcript</summary>
            {captions
              .filter((c) => c.transcript.length > 0)
              .map((c) => (
                <p key={`t-${c.outputId}-${c.trackIndex}`} data-transcript>
                  {c.transcript.map((t) => (
                    <span key={t.startSeconds}>
                      <span class="muted">{clock(t.startSeconds)}</span> {t.text}{" "}
                    </span>
                  ))}
                </p>
              ))}
          </details>
        )}
        {chapters.length > 0 && (
          <>
            <h3>Chapters</h3>
            <ol>
              {chapters.map((c) => (
                <li key={c.startSeconds}>
                  <span class="muted">{clock(c.startSeconds)}</span> {c.title}
                </li>
              ))}
            </ol>
          </>
        )}
      </section>

      <section class="card" aria-labelledby="links-heading">
        <h2 id="links-heading">Links</h2>
        {v.playbackUrl || v.embedUrl || v.embedCode ? (
          <dl class="facts">
            {v.playbackUrl && <Copyable label="Playback URL" text={v.playbackUrl} />}
            {v.embedUrl && <Copyable label="Embed URL" text={v.embedUrl} />}
            {v.embedCode && <Copyable label="Embed code" text={v.embedCode} />}
          </dl>
        ) : (
          <p class="empty">
            No playback links: they exist only while the video is ready{v.status === VideoStatus.READY ? " and a CDN signing key is set" : ""}.
          </p>
        )}
      </section>

      <section class="card" aria-labelledby="details-heading">
        <h2 id="details-heading">Details</h2>
        <form class="stack" onSubmit={save} noValidate>
          <label>
            Title
            <input
              name="title"
              value={draft.title}
              onInput={(e) => setDraft({ ...draft, title: e.currentTarget.value })}
              aria-invalid={fieldError("title") ? "true" : undefined}
              aria-describedby={fieldError("title") ? "title-error" : undefined}
            />
            {fieldError("title") && (
              <span id="title-error" class="field-error">
                {fieldError("title")}
              </span>
            )}
          </label>
          <label>
            Description
            <textarea
              name="description"
              rows={3}
              value={draft.description}
              onInput={(e) => setDraft({ ...draft, description: e.currentTarget.value })}
              aria-invalid={fieldError("description") ? "true" : undefined}
              aria-describedby={fieldError("description") ? "description-error" : undefined}
            />
            {fieldError("description") && (
              <span id="description-error" class="field-error">
                {fieldError("description")}
              </span>
            )}
          </label>
          <label>
            Tags <span class="muted">(comma separated, up to 20)</span>
            <input
              name="tags"
              value={draft.tags}
              onInput={(e) => setDraft({ ...draft, tags: e.currentTarget.value })}
              aria-invalid={fieldError("tags") ? "true" : undefined}
              aria-describedby={fieldError("tags") ? "tags-error" : undefined}
            />
            {fieldError("tags") && (
              <span id="tags-error" class="field-error">
                {fieldError("tags")}
              </span>
            )}
          </label>
          <label>
            Visibility
            <select
              name="visibility"
              value={draft.visibility}
              onChange={(e) => setDraft({ ...draft, visibility: Number(e.currentTarget.value) as VideoVisibility })}
              aria-invalid={fieldError("visibility") ? "true" : undefined}
              aria-describedby={fieldError("visibility") ? "visibility-error" : undefined}
            >
              {VISIBILITIES.map((o) => (
                <option value={o.value}>{o.label}</option>
              ))}
            </select>
            {fieldError("visibility") && (
              <span id="visibility-error" class="field-error">
                {fieldError("visibility")}
              </span>
            )}
          </label>
          <p class="toolbar">
            <button type="submit" disabled={busy}>
              Save
            </button>
            <span role="status">{saved}</span>
          </p>
        </form>
        {problem && unplaced && <p role="alert">{problem.message}</p>}
      </section>

      <section class="card" aria-labelledby="facts-heading">
        <h2 id="facts-heading">Facts</h2>
        <dl class="facts">
          <dt>ID</dt>
          <dd>
            <code>{v.id}</code>
          </dd>
          <dt>Status</dt>
          <dd data-status={status}>{status}</dd>
          <dt>Duration</dt>
          <dd>{v.durationSeconds ? clock(v.durationSeconds) : "—"}</dd>
          <dt>Source</dt>
          <dd>
            {v.inputSizeBytes !== undefined ? bytes(Number(v.inputSizeBytes)) : "—"}
            {v.inputContentType ? ` · ${v.inputContentType}` : ""}
            {v.sourceDeletedAt ? ` · deleted ${when(v.sourceDeletedAt)}` : ""}
          </dd>
          <dt>Stored renditions</dt>
          <dd>{v.outputSizeBytes ? bytes(Number(v.outputSizeBytes)) : "—"}</dd>
          {v.encodingCost !== undefined && (
            <>
              <dt>Encoding cost</dt>
              <dd>{euros.format(v.encodingCost)}</dd>
            </>
          )}
          {v.jobId && (
            <>
              <dt>Job</dt>
              <dd>
                <a href={`#/jobs/${v.jobId}`}>{v.jobId}</a>
              </dd>
            </>
          )}
          <dt>Created</dt>
          <dd>{when(v.createdAt)}</dd>
          <dt>Ready</dt>
          <dd>{when(v.readyAt)}</dd>
          <dt>Encoded</dt>
          <dd>{when(v.encodedAt)}</dd>
        </dl>
      </section>

      <section class="card" aria-labelledby="renditions-heading">
        <h2 id="renditions-heading">Renditions</h2>
        {v.renditions.length === 0 ? (
          <p class="empty">No renditions yet.</p>
        ) : (
          <table>
            <caption class="visually-hidden">Renditions of this video, with their sizes</caption>
            <thead>
              <tr>
                <th scope="col">Resolution</th>
                <th scope="col">Codec</th>
                <th scope="col">Frame</th>
                <th scope="col">Bitrate</th>
                <th scope="col">Size</th>
              </tr>
            </thead>
            <tbody>
              {v.renditions.map((r) => (
                <tr key={r.id}>
                  <td>{r.resolution}</td>
                  <td>{CODEC[r.codec] ?? "—"}</td>
                  <td>
                    {r.width}×{r.height}
                  </td>
                  <td>{r.bitrateKbps ? `${r.bitrateKbps} kb/s` : "—"}</td>
                  <td>{bytes(Number(r.sizeBytes))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      {(v.posterUrl || v.hoverPreviewUrl || v.hoverPreviewMp4Url) && (
        <section class="card" aria-labelledby="images-heading">
          <h2 id="images-heading">Images</h2>
          <div class="toolbar">
            {v.posterUrl && (
              <figure>
                <img src={v.posterUrl} alt={`Poster of ${name}`} width={320} />
                <figcaption>Poster</figcaption>
              </figure>
            )}
            {v.hoverPreviewUrl ? (
              <figure>
                <img src={v.hoverPreviewUrl} alt={`Hover preview of ${name}`} width={320} />
                <figcaption>Hover preview</figcaption>
              </figure>
            ) : (
              v.hoverPreviewMp4Url && (
                <figure>
                  <video src={v.hoverPreviewMp4Url} muted loop playsInline controls width={320} aria-label={`Hover preview of ${name}`} />
                  <figcaption>Hover preview (MP4)</figcaption>
                </figure>
              )
            )}
          </div>
        </section>
      )}

      <section class="card" aria-labelledby="actions-heading">
        <h2 id="actions-heading">Archive or delete</h2>
        <p class="muted">Archiving refuses playback and keeps the files; deleting removes the source and every rendition, and keeps a record.</p>
        <p class="toolbar">
          {(v.status === VideoStatus.READY || v.status === VideoStatus.ERROR) && (
            <button type="button" class="secondary" onClick={() => void act("archive")}>
              Archive
            </button>
          )}
          {v.status !== VideoStatus.DELETED && (
            <button type="button" class="danger" onClick={() => void act("delete")}>
              Delete
            </button>
          )}
        </p>
      </section>
    </>
  );
}

/** A link to copy: its label, the text, and a Copy button that says when it is done. */
function Copyable({ label, text }: { label: string; text: string }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>
        <code>{text}</code> <CopyButton text={text} what={label.toLowerCase()} secondary />
      </dd>
    </>
  );
}
