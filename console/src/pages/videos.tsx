// Videos: the upload area (drop or pick files; each with its progress, speed, time left, pause and
// resume), and the library, a page at a time through the API's cursor, whose unfinished videos are
// followed with VideoService/Watch, so a status changes on screen as it changes, never by polling.
import { useEffect, useRef, useState } from "preact/hooks";
import { VideoStatus, type Video } from "../../../src/gen/media/v1/video_pb.js";
import { api, problemOf } from "../api.js";
import type { PageProps } from "../workspace.js";
import { Upload, type Progress } from "../upload.js";

const PAGE = 50;
/** Watch streams at once (each holds one of the browser's six connections to the host). */
const WATCHES = 3;
const STATUS: Record<VideoStatus, string> = {
  [VideoStatus.UNSPECIFIED]: "unknown",
  [VideoStatus.UPLOADING]: "uploading",
  [VideoStatus.PROCESSING]: "processing",
  [VideoStatus.READY]: "ready",
  [VideoStatus.ERROR]: "error",
  [VideoStatus.ARCHIVED]: "archived",
  [VideoStatus.DELETED]: "deleted",
};
const settled = (v: Video) => v.status !== VideoStatus.UPLOADING && v.status !== VideoStatus.PROCESSING;

const bytes = (n: number) => (n >= 1e9 ? `${(n / 1e9).toFixed(2)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : `${Math.round(n / 1e3)} kB`);
const clock = (s: number) => `${Math.floor(s / 60)}:${String(Math.round(s % 60)).padStart(2, "0")}`;

interface Row {
  readonly upload: Upload;
  progress: Progress;
  /** When the last byte went, and when the video became playable: the seconds between are shown. */
  uploadedAt?: number;
  playableAfter?: number;
}

export function VideosPage({ workspace }: PageProps) {
  const [videos, setVideos] = useState<Video[]>([]);
  const [next, setNext] = useState("");
  const [problem, setProblem] = useState("");
  const [rows, setRows] = useState<Row[]>([]);
  const [dragging, setDragging] = useState(false);
  const [captions, setCaptions] = useState(false);
  const [filters, setFilters] = useState({ titleQuery: "", status: VideoStatus.UNSPECIFIED, tag: "" });
  const picker = useRef<HTMLInputElement>(null);
  const watching = useRef(new Map<string, AbortController>());

  /** Puts a video's latest state in the list (newest first for new ones). */
  const upsert = (v: Video) =>
    setVideos((list) => {
      const i = list.findIndex((x) => x.id === v.id);
      if (i < 0) return [v, ...list];
      const copy = list.slice();
      copy[i] = v;
      return copy;
    });

  /**
   * Follows a video until it settles: its snapshot, then each update, as the server sends them.
   * A browser holds six connections to a host and each stream keeps one, so at most WATCHES run
   * at once; the others wait their turn, the videos uploaded here first.
   */
  const waiting = useRef<string[]>([]);
  const follow = (id: string, first = false) => {
    if (watching.current.has(id) || waiting.current.includes(id)) return;
    if (watching.current.size >= WATCHES) {
      if (first) waiting.current.unshift(id);
      else waiting.current.push(id);
      return;
    }
    const stop = new AbortController();
    watching.current.set(id, stop);
    void (async () => {
      try {
        for await (const message of api.videos.watch({ id }, { signal: stop.signal })) {
          if (!message.video) continue;
          upsert(message.video);
          if (message.video.status === VideoStatus.READY) {
            setRows((rs) =>
              rs.map((r) =>
                r.progress.videoId === id && r.uploadedAt && r.playableAfter === undefined ? { ...r, playableAfter: (Date.now() - r.uploadedAt) / 1000 } : r,
              ),
            );
          }
        }
      } catch {
        /* ended or left the page */
      } finally {
        watching.current.delete(id);
        const next = waiting.current.shift();
        if (next && !stop.signal.aborted) follow(next);
      }
    })();
  };

  const loadPage = async (token: string, f = filters) => {
    try {
      const page = await api.videos.list({ appId: workspace.appId, pageSize: PAGE, pageToken: token, titleQuery: f.titleQuery, status: f.status, tag: f.tag });
      setVideos((list) => (token ? [...list, ...page.videos] : page.videos));
      setNext(page.nextPageToken);
      for (const v of page.videos) if (!settled(v)) follow(v.id);
    } catch (e) {
      setProblem(problemOf(e).message);
    }
  };

  useEffect(() => {
    const live = watching.current;
    return () => live.forEach((c) => c.abort());
  }, []);
  // A new search or filter starts from the first page; typing waits for a pause, the first load does not.
  const mounted = useRef(false);
  useEffect(() => {
    const t = setTimeout(
      () => {
        setProblem("");
        void loadPage("", filters);
      },
      mounted.current ? 250 : 0,
    );
    mounted.current = true;
    return () => clearTimeout(t);
  }, [filters]);

  const add = (files: FileList | File[]) => {
    for (const file of Array.from(files)) {
      const upload: Upload = new Upload(
        file,
        workspace.appId,
        (progress) => {
          setRows((rs) =>
            rs.map((r) => (r.upload === upload ? { ...r, progress, ...(progress.state === "done" && !r.uploadedAt ? { uploadedAt: Date.now() } : {}) } : r)),
          );
          if (progress.videoId) follow(progress.videoId, true);
        },
        captions,
      );
      setRows((rs) => [...rs, { upload, progress: { sent: 0, total: file.size, speed: 0, state: "uploading", videoId: "" } }]);
      void upload.start();
    }
  };

  return (
    <>
      <h1>Videos</h1>
      <section
        class={`dropzone${dragging ? " dragging" : ""}`}
        aria-label="Upload videos"
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          if (e.dataTransfer?.files.length) add(e.dataTransfer.files);
        }}
      >
        <p>Drop video files here to upload them, or</p>
        <button type="button" onClick={() => picker.current?.click()}>
          Choose files
        </button>
        <p>
          <label>
            <input type="checkbox" checked={captions} onChange={(e) => setCaptions(e.currentTarget.checked)} /> Generate captions from speech
          </label>
        </p>
        <input ref={picker} type="file" accept="video/*" multiple hidden onChange={(e) => e.currentTarget.files && add(e.currentTarget.files)} />
      </section>
      {rows.length > 0 && (
        <ul class="uploads" aria-label="Uploads">
          {rows.map((r) => {
            const p = r.progress;
            const left = p.speed > 0 ? (p.total - p.sent) / p.speed : undefined;
            const video = videos.find((v) => v.id === p.videoId);
            return (
              <li key={r.upload.file.name + r.upload.file.lastModified}>
                <span class="name">{r.upload.file.name}</span>
                <progress max={p.total} value={p.sent} aria-label={`Upload of ${r.upload.file.name}`} />
                <span class="numbers">
                  {Math.floor((p.sent * 100) / Math.max(1, p.total))}% · {bytes(p.speed)}/s
                  {left !== undefined && p.state === "uploading" ? ` · ${clock(left)} left` : ""}
                </span>
                <span class="state" data-state={video ? STATUS[video.status] : p.state}>
                  {p.state === "failed" ? `failed: ${p.error}` : video && p.state === "done" ? STATUS[video.status] : p.state}
                </span>
                {r.playableAfter !== undefined && <span class="playable">playable {r.playableAfter.toFixed(1)} s after the upload</span>}
                {p.state === "uploading" && (
                  <button type="button" onClick={() => r.upload.pause()}>
                    Pause
                  </button>
                )}
                {(p.state === "paused" || p.state === "failed") && (
                  <button type="button" onClick={() => void r.upload.start()}>
                    Resume
                  </button>
                )}
              </li>
            );
          })}
        </ul>
      )}
      <form class="toolbar" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search titles
          <input type="search" value={filters.titleQuery} onInput={(e) => setFilters({ ...filters, titleQuery: e.currentTarget.value })} />
        </label>
        <label>
          Status
          <select value={filters.status} onChange={(e) => setFilters({ ...filters, status: Number(e.currentTarget.value) as VideoStatus })}>
            <option value={VideoStatus.UNSPECIFIED}>any</option>
            {[VideoStatus.UPLOADING, VideoStatus.PROCESSING, VideoStatus.READY, VideoStatus.ERROR, VideoStatus.ARCHIVED].map((st) => (
              <option value={st}>{STATUS[st]}</option>
            ))}
          </select>
        </label>
        <label>
          Tag
          <input value={filters.tag} onInput={(e) => setFilters({ ...filters, tag: e.currentTarget.value.trim() })} />
        </label>
      </form>
      {problem && <p role="alert">{problem}</p>}
      {videos.length === 0 && !problem ? (
        <p class="empty">
          {filters.titleQuery || filters.tag || filters.status
            ? "No video matches these filters."
            : "No videos yet: drop a file above to upload your first one."}
        </p>
      ) : (
        <table class="library">
          <caption class="visually-hidden">Your videos, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Poster</th>
              <th scope="col">Title</th>
              <th scope="col">Duration</th>
              <th scope="col">Status</th>
              <th scope="col">Size</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {videos.map((v) => (
              <tr key={v.id} data-video={v.id}>
                <td>{v.posterUrl ? <img src={v.posterUrl} alt="" width={96} height={54} loading="lazy" /> : <span class="no-poster" />}</td>
                <td>
                  <a href={`#/videos/${v.id}`}>{v.title || v.id}</a>
                </td>
                <td>{v.durationSeconds ? clock(v.durationSeconds) : "—"}</td>
                <td>
                  <span class="status" data-status={STATUS[v.status]}>
                    {STATUS[v.status]}
                  </span>
                </td>
                <td>{v.inputSizeBytes !== undefined ? bytes(Number(v.inputSizeBytes)) : "—"}</td>
                <td>{v.createdAt ? new Date(Number(v.createdAt.seconds) * 1000).toLocaleString() : ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next && (
        <button type="button" onClick={() => void loadPage(next)}>
          Load more
        </button>
      )}
    </>
  );
}
