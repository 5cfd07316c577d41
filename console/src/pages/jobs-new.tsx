// A new job: one input (a hosted video, a URL, or a path in an origin), one destination (managed
// hosting or an origin that takes writes) and one output of one video variant. The server checks
// the request; each field violation it names is shown beside the field, the others above the form.
import { useEffect, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { OutputType, type CreateJobRequestSchema } from "../../../src/gen/media/v1/job_pb.js";
import { OriginPermission, OriginStatus, type Origin } from "../../../src/gen/media/v1/origin_pb.js";
import { QualityTier, VideoCodec } from "../../../src/gen/media/v1/preset_pb.js";
import { VideoStatus, type Video } from "../../../src/gen/media/v1/video_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { api, problemOf, type Problem } from "../api.js";
import type { PageProps } from "../workspace.js";

type Source = "video" | "url" | "origin";
type Destination = "managed" | "origin";

const TYPES: readonly [OutputType, string][] = [
  [OutputType.HLS, "HLS (streaming)"],
  [OutputType.DASH, "DASH (streaming)"],
  [OutputType.ADAPTIVE, "HLS and DASH (streaming)"],
  [OutputType.MP4, "MP4 file"],
  [OutputType.WEBM, "WebM file"],
];
const CODECS: readonly [VideoCodec, string][] = [
  [VideoCodec.H264, "H.264"],
  [VideoCodec.H265, "H.265 (HEVC)"],
  [VideoCodec.VP9, "VP9"],
  [VideoCodec.AV1, "AV1"],
];
const RESOLUTIONS = ["480p", "720p", "1080p", "1440p", "2160p"];
const QUALITIES: readonly [QualityTier, string][] = [
  [QualityTier.ECONOMY, "Economy"],
  [QualityTier.STANDARD, "Standard"],
  [QualityTier.PREMIUM, "Premium"],
];

/** The fields each control answers for, in the server's paths; the first is where the message goes. */
const FIELDS = {
  source: ["input_video_id", "input_url", "input_origin_id", "input_path"],
  video: ["input_video_id"],
  url: ["input_url"],
  inputOrigin: ["input_origin_id"],
  inputPath: ["input_path"],
  destination: ["managed"],
  outputOrigin: ["output_origin_id"],
  type: ["outputs", "outputs[0]", "outputs[0].type"],
  codec: ["outputs[0].video", "outputs[0].video[0]", "outputs[0].video[0].codec"],
  resolution: ["outputs[0].video[0].resolution", "outputs[0].video[0].width", "outputs[0].video[0].height"],
  quality: ["outputs[0].video[0].quality"],
  audio: ["outputs[0].disable_audio", "outputs[0].audio"],
  delayed: ["delayed_start"],
} as const;
type Control = keyof typeof FIELDS;

export function NewJobPage({ workspace }: PageProps) {
  const [source, setSource] = useState<Source>("video");
  const [videoId, setVideoId] = useState("");
  const [url, setUrl] = useState("");
  const [inputOrigin, setInputOrigin] = useState("");
  const [inputPath, setInputPath] = useState("");
  const [destination, setDestination] = useState<Destination>("managed");
  const [outputOrigin, setOutputOrigin] = useState("");
  const [type, setType] = useState(OutputType.HLS);
  const [codec, setCodec] = useState(VideoCodec.H264);
  const [resolution, setResolution] = useState("");
  const [quality, setQuality] = useState(QualityTier.STANDARD);
  const [noAudio, setNoAudio] = useState(false);
  const [delayed, setDelayed] = useState(false);
  const [videos, setVideos] = useState<Video[]>([]);
  const [origins, setOrigins] = useState<Origin[]>([]);
  const [problem, setProblem] = useState<Problem | undefined>();
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    void api.videos
      .list({ appId: workspace.appId, pageSize: 100, status: VideoStatus.READY })
      .then((r) => {
        setVideos(r.videos);
        if (r.videos[0]) setVideoId((v) => v || r.videos[0]!.id);
      })
      .catch((e: unknown) => setProblem(problemOf(e)));
    void api.origins
      .list({ appId: workspace.appId, pagination: { limit: 100 } })
      .then((r) => setOrigins(r.origins.filter((o) => o.status !== OriginStatus.ARCHIVED)))
      .catch((e: unknown) => setProblem(problemOf(e)));
  }, []);

  const readable = origins.filter((o) => o.permissions.includes(OriginPermission.READ));
  const writable = origins.filter((o) => o.permissions.includes(OriginPermission.WRITE));

  /** The first message the server gave for any of the control's fields. */
  const errorOf = (control: Control): string | undefined => {
    for (const f of FIELDS[control]) if (problem?.fields[f]) return problem.fields[f];
    return undefined;
  };
  const placed = new Set<string>(
    Object.entries(FIELDS)
      .filter(([c]) => shown(c as Control))
      .flatMap(([, fs]) => fs),
  );
  function shown(c: Control): boolean {
    if (c === "video") return source === "video";
    if (c === "url") return source === "url";
    if (c === "inputOrigin" || c === "inputPath") return source === "origin";
    if (c === "outputOrigin") return destination === "origin";
    if (c === "source") return false;
    return true;
  }
  /** Violations of fields no visible control answers for: listed above the form. */
  const unplaced = Object.entries(problem?.fields ?? {}).filter(([f]) => !placed.has(f));

  const submit = async (e: Event) => {
    e.preventDefault();
    setProblem(undefined);
    setBusy(true);
    const request: MessageInitShape<typeof CreateJobRequestSchema> = {
      appId: workspace.appId,
      delayedStart: delayed,
      outputs: [
        {
          type,
          video: [{ codec, resolution, quality }],
          disableAudio: noAudio,
        },
      ],
      ...(source === "video"
        ? { inputVideoId: videoId }
        : source === "url"
          ? { inputUrl: url.trim() }
          : { inputOriginId: inputOrigin, inputPath: inputPath.trim() }),
      ...(destination === "managed" ? { managed: true } : { outputOriginId: outputOrigin }),
    };
    try {
      const created = await api.jobs.create(request);
      location.hash = `#/jobs/${created.job!.id}`;
    } catch (err) {
      setProblem(problemOf(err));
      setBusy(false);
    }
  };

  const field = (control: Control, id: string) => {
    const error = errorOf(control);
    return {
      id,
      "aria-invalid": error ? ("true" as const) : undefined,
      "aria-describedby": error ? `${id}-error` : undefined,
    };
  };

  return (
    <>
      <p>
        <a href="#/jobs">← Jobs</a>
      </p>
      <h1>New job</h1>
      {problem && (
        <div role="alert">
          <p>{Object.keys(problem.fields).length ? "The job was not created: see the fields marked below." : problem.message}</p>
          {unplaced.length > 0 && (
            <ul>
              {unplaced.map(([f, m]) => (
                <li key={f}>
                  <code>{f}</code>: {m}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      <form class="stack" onSubmit={submit} noValidate>
        <fieldset>
          <legend>Input</legend>
          <Radio name="source" value="video" checked={source === "video"} onPick={() => setSource("video")}>
            A hosted video
          </Radio>
          <Radio name="source" value="url" checked={source === "url"} onPick={() => setSource("url")}>
            A file at a URL (https://, s3:// or gs://)
          </Radio>
          <Radio name="source" value="origin" checked={source === "origin"} onPick={() => setSource("origin")}>
            A path in an origin
          </Radio>
        </fieldset>
        {source === "video" && (
          <Field label="Video" id="job-video" error={errorOf("video")}>
            <select {...field("video", "job-video")} value={videoId} onChange={(e) => setVideoId(e.currentTarget.value)}>
              {videos.length === 0 && <option value="">No ready videos: upload one on the Videos page</option>}
              {videos.map((v) => (
                <option value={v.id}>{v.title ? `${v.title} (${v.id})` : v.id}</option>
              ))}
            </select>
          </Field>
        )}
        {source === "url" && (
          <Field label="Input URL" id="job-url" error={errorOf("url")}>
            <input
              {...field("url", "job-url")}
              type="text"
              inputMode="url"
              autoComplete="off"
              placeholder="https://example.com/movie.mp4"
              value={url}
              onInput={(e) => setUrl(e.currentTarget.value)}
            />
          </Field>
        )}
        {source === "origin" && (
          <>
            <Field label="Input origin" id="job-input-origin" error={errorOf("inputOrigin")}>
              <select {...field("inputOrigin", "job-input-origin")} value={inputOrigin} onChange={(e) => setInputOrigin(e.currentTarget.value)}>
                <option value="">{readable.length ? "Choose an origin" : "No origin can be read: add one on the Origins page"}</option>
                {readable.map((o) => (
                  <option value={o.id}>{o.name}</option>
                ))}
              </select>
            </Field>
            <Field label="Path in the origin" id="job-input-path" error={errorOf("inputPath")}>
              <input
                {...field("inputPath", "job-input-path")}
                type="text"
                autoComplete="off"
                placeholder="uploads/movie.mp4"
                value={inputPath}
                onInput={(e) => setInputPath(e.currentTarget.value)}
              />
            </Field>
          </>
        )}
        <fieldset aria-describedby={errorOf("destination") ? "job-destination-error" : undefined}>
          <legend>Destination</legend>
          <Radio name="destination" value="managed" checked={destination === "managed"} onPick={() => setDestination("managed")}>
            Managed hosting (makes a hosted video; needs a streaming output)
          </Radio>
          <Radio name="destination" value="origin" checked={destination === "origin"} onPick={() => setDestination("origin")}>
            An origin
          </Radio>
          {errorOf("destination") && (
            <span id="job-destination-error" class="field-error">
              {errorOf("destination")}
            </span>
          )}
        </fieldset>
        {destination === "origin" && (
          <Field label="Output origin" id="job-output-origin" error={errorOf("outputOrigin")}>
            <select {...field("outputOrigin", "job-output-origin")} value={outputOrigin} onChange={(e) => setOutputOrigin(e.currentTarget.value)}>
              <option value="">{writable.length ? "Choose an origin" : "No origin takes writes: add one on the Origins page"}</option>
              {writable.map((o) => (
                <option value={o.id}>{o.name}</option>
              ))}
            </select>
          </Field>
        )}
        <fieldset>
          <legend>Output</legend>
          <Field label="Type" id="job-type" error={errorOf("type")}>
            <select {...field("type", "job-type")} value={String(type)} onChange={(e) => setType(Number(e.currentTarget.value) as OutputType)}>
              {TYPES.map(([t, name]) => (
                <option value={String(t)}>{name}</option>
              ))}
            </select>
          </Field>
          <Field label="Video codec" id="job-codec" error={errorOf("codec")}>
            <select {...field("codec", "job-codec")} value={String(codec)} onChange={(e) => setCodec(Number(e.currentTarget.value) as VideoCodec)}>
              {CODECS.map(([c, name]) => (
                <option value={String(c)}>{name}</option>
              ))}
            </select>
          </Field>
          <Field label="Resolution" id="job-resolution" error={errorOf("resolution")}>
            <select {...field("resolution", "job-resolution")} value={resolution} onChange={(e) => setResolution(e.currentTarget.value)}>
              <option value="">Same as the input</option>
              {RESOLUTIONS.map((r) => (
                <option value={r}>{r}</option>
              ))}
            </select>
          </Field>
          <Field label="Quality" id="job-quality" error={errorOf("quality")}>
            <select {...field("quality", "job-quality")} value={String(quality)} onChange={(e) => setQuality(Number(e.currentTarget.value) as QualityTier)}>
              {QUALITIES.map(([q, name]) => (
                <option value={String(q)}>{name}</option>
              ))}
            </select>
          </Field>
          <Check id="job-no-audio" checked={noAudio} onToggle={setNoAudio} error={errorOf("audio")}>
            Video only (drop the audio)
          </Check>
        </fieldset>
        <Check id="job-delayed" checked={delayed} onToggle={setDelayed} error={errorOf("delayed")}>
          Show me the cost estimate before encoding starts
        </Check>
        <div class="toolbar">
          <button type="submit" disabled={busy}>
            {busy ? "Creating…" : "Create job"}
          </button>
          <a href="#/jobs">Cancel</a>
        </div>
      </form>
    </>
  );
}

function Field({ label, id, error, children }: { label: string; id: string; error: string | undefined; children: ComponentChildren }) {
  return (
    <div>
      <label for={id}>{label}</label>
      {children}
      {error && (
        <span id={`${id}-error`} class="field-error" data-field-error={id}>
          {error}
        </span>
      )}
    </div>
  );
}

function Radio(props: { name: string; value: string; checked: boolean; onPick: () => void; children: ComponentChildren }) {
  return (
    <label>
      <span>
        <input type="radio" name={props.name} value={props.value} checked={props.checked} onChange={props.onPick} /> {props.children}
      </span>
    </label>
  );
}

function Check(props: { id: string; checked: boolean; onToggle: (v: boolean) => void; error: string | undefined; children: ComponentChildren }) {
  return (
    <div>
      <label>
        <span>
          <input
            type="checkbox"
            id={props.id}
            checked={props.checked}
            onChange={(e) => props.onToggle(e.currentTarget.checked)}
            aria-invalid={props.error ? "true" : undefined}
            aria-describedby={props.error ? `${props.id}-error` : undefined}
          />{" "}
          {props.children}
        </span>
      </label>
      {props.error && (
        <span id={`${props.id}-error`} class="field-error" data-field-error={props.id}>
          {props.error}
        </span>
      )}
    </div>
  );
}
