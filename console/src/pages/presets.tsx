// Presets: the app's own encoding presets a page at a time through the API's cursor, the read-only
// system catalog, and one preset's form (#/presets/new, #/presets/<id>): name, slug, container,
// delivery, one video rendition (codec, resolution, CRF or bitrate), audio; duplicate and archive.
// The server's field violations are shown beside the fields they name.
import { useEffect, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import {
  AudioCodec,
  BitrateMode,
  Container,
  DeliveryFormat,
  QualityTier,
  VideoCodec,
  type Preset,
  type VideoSettings,
} from "../../../src/gen/media/v1/preset_pb.js";
import { api, problemOf, type Problem } from "../api.js";
import { Field } from "../ui.js";
import type { PageProps } from "../workspace.js";

const PAGE = 20;
const CONTAINERS: [Container, string][] = [
  [Container.MP4, "MP4"],
  [Container.WEBM, "WebM"],
  [Container.MKV, "Matroska (MKV)"],
  [Container.TS, "MPEG-TS"],
  [Container.MOV, "QuickTime (MOV)"],
];
const DELIVERY: [DeliveryFormat, string][] = [
  [DeliveryFormat.PROGRESSIVE, "Progressive file"],
  [DeliveryFormat.HLS, "HLS"],
  [DeliveryFormat.DASH, "DASH"],
  [DeliveryFormat.CMAF, "CMAF (HLS and DASH)"],
];
const VIDEO_CODECS: [VideoCodec, string][] = [
  [VideoCodec.H264, "H.264"],
  [VideoCodec.H265, "H.265 (HEVC)"],
  [VideoCodec.VP9, "VP9"],
  [VideoCodec.AV1, "AV1"],
];
const AUDIO_CODECS: [AudioCodec, string][] = [
  [AudioCodec.AAC, "AAC"],
  [AudioCodec.OPUS, "Opus"],
  [AudioCodec.MP3, "MP3"],
];
const MODES: [BitrateMode, string][] = [
  [BitrateMode.CRF, "Constant quality (CRF)"],
  [BitrateMode.CBR, "Constant bitrate"],
  [BitrateMode.VBR, "Variable bitrate"],
];
const TIERS: [QualityTier, string][] = [
  [QualityTier.ECONOMY, "Economy"],
  [QualityTier.STANDARD, "Standard"],
  [QualityTier.PREMIUM, "Premium"],
];
const RESOLUTIONS = ["480p", "720p", "1080p", "1440p", "2160p", "4320p"];

const label = <T,>(list: [T, string][], v: T) => list.find(([k]) => k === v)?.[1] ?? "—";
const videoSummary = (v: VideoSettings | undefined) => {
  if (!v || v.codec === VideoCodec.UNSPECIFIED) return "no video";
  const size = v.resolution || (v.width && v.height ? `${v.width}×${v.height}` : "source size");
  const rate = v.bitrateKbps ? `${v.bitrateKbps} kb/s` : v.crf ? `CRF ${v.crf}` : "";
  return [label(VIDEO_CODECS, v.codec), size, rate].filter(Boolean).join(" · ");
};
const audioSummary = (p: Preset) =>
  p.audio && p.audio.codec !== AudioCodec.UNSPECIFIED
    ? `${label(AUDIO_CODECS, p.audio.codec)} ${p.audio.bitrateKbps || ""} kb/s`.replace("  ", " ")
    : "no audio";
const cost = (p: Preset) => (p.estimatedCostPerMinute === undefined ? "—" : `€${p.estimatedCostPerMinute.toFixed(3)}/min`);

export function PresetsPage({ workspace, rest }: PageProps) {
  if (rest === "") return <PresetList appId={workspace.appId} />;
  return <PresetDetail appId={workspace.appId} id={rest === "new" ? "" : decodeURIComponent(rest)} />;
}

function PresetList({ appId }: { appId: string }) {
  const [own, setOwn] = useState<Preset[]>([]);
  const [system, setSystem] = useState<Preset[]>([]);
  const [next, setNext] = useState("");
  const [total, setTotal] = useState<number | undefined>();
  const [loaded, setLoaded] = useState(false);
  const [problem, setProblem] = useState("");

  const page = async (cursor: string) => {
    const r = await api.presets.list({ appId, includeSystem: false, pagination: { limit: PAGE, cursor } });
    setOwn((list) => (cursor ? [...list, ...r.presets] : r.presets));
    setNext(r.pagination?.nextCursor ?? "");
    setTotal(r.pagination?.totalCount === undefined ? undefined : Number(r.pagination.totalCount));
  };
  useEffect(() => {
    void (async () => {
      try {
        await page("");
        setSystem((await api.presets.list({ appId, includeSystem: true, pagination: { limit: 100 } })).presets.filter((p) => p.systemPreset));
      } catch (e) {
        setProblem(problemOf(e).message);
      }
      setLoaded(true);
    })();
  }, []);

  const archive = async (p: Preset) => {
    if (!confirm(`Archive the preset "${p.name}"? New jobs can no longer use it; jobs already made with it are not affected.`)) return;
    try {
      await api.presets.archive({ id: p.id });
      setOwn((list) => list.filter((x) => x.id !== p.id));
      setTotal((t) => (t === undefined ? t : t - 1));
    } catch (e) {
      setProblem(problemOf(e).message);
    }
  };

  return (
    <>
      <h1>Presets</h1>
      <p class="muted">A preset is a reusable encoding configuration: jobs name one instead of spelling out every setting.</p>
      <div class="toolbar">
        <a class="button" href="#/presets/new">
          New preset
        </a>
      </div>
      {problem && <p role="alert">{problem}</p>}
      <h2>Your presets</h2>
      {loaded && own.length === 0 ? (
        <p class="empty">No presets of your own yet: choose New preset, or open a system preset below and duplicate it to start from its settings.</p>
      ) : (
        <PresetTable presets={own} caption="Presets of this app" onArchive={(p) => void archive(p)} />
      )}
      {next && (
        <div class="toolbar">
          <button type="button" class="secondary" onClick={() => void page(next).catch((e: unknown) => setProblem(problemOf(e).message))}>
            Show more presets
          </button>
          {total !== undefined && (
            <span class="muted">
              {own.length} of {total} shown
            </span>
          )}
        </div>
      )}
      <h2>System presets</h2>
      <p class="muted">Read-only presets every app can use. Duplicate one to change it.</p>
      <PresetTable presets={system} caption="System presets" />
    </>
  );
}

function PresetTable({ presets, caption, onArchive }: { presets: Preset[]; caption: string; onArchive?: (p: Preset) => void }) {
  return (
    <table>
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Slug</th>
          <th scope="col">Container</th>
          <th scope="col">Video</th>
          <th scope="col">Audio</th>
          <th scope="col">Cost</th>
          <th scope="col">
            <span class="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {presets.map((p) => (
          <tr key={p.id}>
            <td>
              <a href={`#/presets/${p.id}`}>{p.name}</a>
            </td>
            <td>
              <code>{p.slug}</code>
            </td>
            <td>{label(CONTAINERS, p.container)}</td>
            <td>{videoSummary(p.video)}</td>
            <td>{audioSummary(p)}</td>
            <td>{cost(p)}</td>
            <td>
              {onArchive && !p.systemPreset && (
                <button type="button" class="danger" aria-label={`Archive ${p.name}`} onClick={() => onArchive(p)}>
                  Archive
                </button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

interface Draft {
  name: string;
  slug: string;
  description: string;
  container: Container;
  deliveryFormat: DeliveryFormat;
  videoCodec: VideoCodec;
  /** "" follows the source; "custom" keeps the preset's own width and height. */
  resolution: string;
  bitrateMode: BitrateMode;
  crf: string;
  bitrateKbps: string;
  audioCodec: AudioCodec;
  audioKbps: string;
  qualityTier: QualityTier;
}

const BLANK: Draft = {
  name: "",
  slug: "",
  description: "",
  container: Container.MP4,
  deliveryFormat: DeliveryFormat.PROGRESSIVE,
  videoCodec: VideoCodec.H264,
  resolution: "720p",
  bitrateMode: BitrateMode.CRF,
  crf: "23",
  bitrateKbps: "3000",
  audioCodec: AudioCodec.AAC,
  audioKbps: "128",
  qualityTier: QualityTier.STANDARD,
};

function draftOf(p: Preset): Draft {
  const v = p.video;
  return {
    name: p.name,
    slug: p.slug,
    description: p.description ?? "",
    container: p.container || Container.MP4,
    deliveryFormat: p.deliveryFormat || DeliveryFormat.PROGRESSIVE,
    videoCodec: v?.codec || VideoCodec.H264,
    resolution: v?.resolution || (v?.width && v.height ? "custom" : ""),
    bitrateMode: v?.bitrateMode || (v?.bitrateKbps ? BitrateMode.VBR : BitrateMode.CRF),
    crf: v?.crf ? String(v.crf) : "",
    bitrateKbps: v?.bitrateKbps ? String(v.bitrateKbps) : "",
    audioCodec: p.audio?.codec || AudioCodec.AAC,
    audioKbps: p.audio?.bitrateKbps ? String(p.audio.bitrateKbps) : "",
    qualityTier: p.qualityTier || QualityTier.STANDARD,
  };
}

/** A message's fields without its type tag, to start another message's init from. */
function fieldsOf<T extends { $typeName: string; $unknown?: unknown }>(m: T | undefined): Partial<Omit<T, "$typeName" | "$unknown">> {
  if (!m) return {};
  const { $typeName: _type, $unknown: _unknown, ...rest } = m;
  return rest as Partial<Omit<T, "$typeName" | "$unknown">>;
}

const int = (s: string) => (s.trim() === "" ? 0 : Number(s));

/** The video settings of a draft over the preset's own (profile, level, … are kept: Update replaces the whole video). */
function videoOf(d: Draft, before?: VideoSettings) {
  const custom = d.resolution === "custom";
  return {
    ...fieldsOf(before),
    codec: d.videoCodec,
    resolution: custom ? "" : d.resolution,
    width: custom ? (before?.width ?? 0) : 0,
    height: custom ? (before?.height ?? 0) : 0,
    bitrateMode: d.bitrateMode,
    crf: d.bitrateMode === BitrateMode.CRF ? int(d.crf) : 0,
    bitrateKbps: d.bitrateMode === BitrateMode.CRF ? 0 : int(d.bitrateKbps),
  };
}

/** What a duplicate is called unless changed. */
const copyOf = (p: Preset) => ({ name: `${p.name} (copy)`, slug: `${p.slug.replace(/^system_/, "")}_copy`.slice(0, 64) });

function PresetDetail({ appId, id }: { appId: string; id: string }) {
  const [preset, setPreset] = useState<Preset | undefined>();
  const [draft, setDraft] = useState<Draft>(BLANK);
  const [problem, setProblem] = useState<Problem | undefined>();
  const [saved, setSaved] = useState("");
  const [busy, setBusy] = useState(false);
  const [copy, setCopy] = useState({ name: "", slug: "" });
  const [copyProblem, setCopyProblem] = useState<Problem | undefined>();

  useEffect(() => {
    if (!id) return;
    void api.presets.get({ id }).then(
      (r) => {
        if (!r.preset) return;
        setPreset(r.preset);
        setDraft(draftOf(r.preset));
        setCopy(copyOf(r.preset));
      },
      (e: unknown) => setProblem(problemOf(e)),
    );
  }, [id]);

  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => setDraft((d) => ({ ...d, [k]: v }));
  const readOnly = !!preset && (preset.systemPreset || !!preset.archivedAt);

  const submit = async (e: Event) => {
    e.preventDefault();
    setProblem(undefined);
    setSaved("");
    setBusy(true);
    const audio = { ...fieldsOf(preset?.audio), codec: draft.audioCodec, bitrateKbps: int(draft.audioKbps) };
    try {
      if (!preset) {
        await api.presets.create({
          appId,
          name: draft.name,
          slug: draft.slug,
          description: draft.description,
          container: draft.container,
          deliveryFormat: draft.deliveryFormat,
          video: videoOf(draft),
          audio,
          qualityTier: draft.qualityTier,
        });
        location.hash = "#/presets";
        return;
      }
      const updated = await api.presets.update({
        id: preset.id,
        name: draft.name,
        slug: draft.slug,
        description: draft.description,
        container: draft.container,
        deliveryFormat: draft.deliveryFormat,
        video: videoOf(draft, preset.video),
        audio,
        qualityTier: draft.qualityTier,
      });
      if (updated.preset) {
        setPreset(updated.preset);
        setDraft(draftOf(updated.preset));
        setCopy(copyOf(updated.preset));
      }
      setSaved(`Saved at ${new Date().toLocaleTimeString()}.`);
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(false);
    }
  };

  const duplicate = async (e: Event) => {
    e.preventDefault();
    if (!preset) return;
    setCopyProblem(undefined);
    try {
      const r = await api.presets.duplicate({ sourceId: preset.id, name: copy.name, slug: copy.slug, appId });
      if (r.preset) location.hash = `#/presets/${r.preset.id}`;
    } catch (err) {
      setCopyProblem(problemOf(err));
    }
  };

  const archive = async () => {
    if (!preset || !confirm(`Archive the preset "${preset.name}"? New jobs can no longer use it; jobs already made with it are not affected.`)) return;
    try {
      await api.presets.archive({ id: preset.id });
      location.hash = "#/presets";
    } catch (err) {
      setProblem(problemOf(err));
    }
  };

  if (id && !preset)
    return (
      <>
        <h1>Preset</h1>
        <p class="toolbar">
          <a href="#/presets">All presets</a>
        </p>
        {problem ? <p role="alert">{problem.message}</p> : <p class="loading">Loading the preset…</p>}
      </>
    );

  const f = (field: string) => ({ problem, field });
  return (
    <>
      <h1>{preset ? preset.name : "New preset"}</h1>
      <div class="toolbar">
        <a href="#/presets">All presets</a>
        {preset && !readOnly && (
          <button type="button" class="danger" onClick={() => void archive()}>
            Archive preset
          </button>
        )}
      </div>
      {preset && (
        <dl class="facts card">
          <dt>ID</dt>
          <dd>
            <code>{preset.id}</code>
          </dd>
          <dt>Kind</dt>
          <dd>{preset.systemPreset ? "System preset (read-only)" : preset.archivedAt ? "Archived (read-only)" : "Custom preset"}</dd>
          <dt>Estimated cost</dt>
          <dd>{cost(preset)}</dd>
        </dl>
      )}
      {problem && (
        <p role="alert">
          {preset ? "Not saved" : "The preset was not created"}: {problem.message}
        </p>
      )}
      {saved && <p role="status">{saved}</p>}
      <form class="stack" onSubmit={(e) => void submit(e)} aria-label={preset ? "Preset settings" : "New preset"}>
        <fieldset disabled={readOnly || busy} class="stack">
          <legend>General</legend>
          <Field id="preset-name" label="Name" {...f("name")}>
            {(a) => <input {...a} value={draft.name} onInput={(e) => set("name", e.currentTarget.value)} />}
          </Field>
          <Field id="preset-slug" label="Slug" hint="3 to 64 lowercase letters, digits or underscores; jobs can name the preset by it." {...f("slug")}>
            {(a) => <input {...a} value={draft.slug} onInput={(e) => set("slug", e.currentTarget.value)} />}
          </Field>
          <Field id="preset-description" label="Description (optional)" {...f("description")}>
            {(a) => <textarea {...a} rows={2} value={draft.description} onInput={(e) => set("description", e.currentTarget.value)} />}
          </Field>
          <Field id="preset-container" label="Container" {...f("container")}>
            {(a) => (
              <select {...a} value={draft.container} onChange={(e) => set("container", Number(e.currentTarget.value))}>
                {CONTAINERS.map(([v, l]) => (
                  <option value={v}>{l}</option>
                ))}
              </select>
            )}
          </Field>
          <Field id="preset-delivery" label="Delivery" {...f("delivery_format")}>
            {(a) => (
              <select {...a} value={draft.deliveryFormat} onChange={(e) => set("deliveryFormat", Number(e.currentTarget.value))}>
                {DELIVERY.map(([v, l]) => (
                  <option value={v}>{l}</option>
                ))}
              </select>
            )}
          </Field>
          <Field id="preset-tier" label="Quality tier" {...f("quality_tier")}>
            {(a) => (
              <select {...a} value={draft.qualityTier} onChange={(e) => set("qualityTier", Number(e.currentTarget.value))}>
                {TIERS.map(([v, l]) => (
                  <option value={v}>{l}</option>
                ))}
              </select>
            )}
          </Field>
        </fieldset>
        <fieldset disabled={readOnly || busy} class="stack">
          <legend>Video</legend>
          <Field id="preset-video-codec" label="Video codec" {...f("video.codec")}>
            {(a) => (
              <select {...a} value={draft.videoCodec} onChange={(e) => set("videoCodec", Number(e.currentTarget.value))}>
                {VIDEO_CODECS.map(([v, l]) => (
                  <option value={v}>{l}</option>
                ))}
              </select>
            )}
          </Field>
          <Field id="preset-resolution" label="Height" {...f(problem?.fields["video.height"] ? "video.height" : "video.resolution")}>
            {(a) => (
              <select {...a} value={draft.resolution} onChange={(e) => set("resolution", e.currentTarget.value)}>
                <option value="">Same as the source</option>
                {RESOLUTIONS.map((r) => (
                  <option value={r}>{r}</option>
                ))}
                {draft.resolution === "custom" && (
                  <option value="custom">
                    {preset?.video?.width}×{preset?.video?.height} (custom, kept)
                  </option>
                )}
              </select>
            )}
          </Field>
          <Field id="preset-mode" label="Rate control" {...f("video.bitrate_mode")}>
            {(a) => (
              <select {...a} value={draft.bitrateMode} onChange={(e) => set("bitrateMode", Number(e.currentTarget.value))}>
                {MODES.map(([v, l]) => (
                  <option value={v}>{l}</option>
                ))}
              </select>
            )}
          </Field>
          {draft.bitrateMode === BitrateMode.CRF ? (
            <Field
              id="preset-crf"
              label="CRF"
              hint="Lower is better quality and larger files. H.264 15–35, H.265 18–35, VP9 15–50, AV1 20–55."
              {...f("video.crf")}
            >
              {(a) => <input {...a} type="number" inputMode="numeric" value={draft.crf} onInput={(e) => set("crf", e.currentTarget.value)} />}
            </Field>
          ) : (
            <Field id="preset-bitrate" label="Video bitrate (kb/s)" hint="100 to 100000." {...f("video.bitrate_kbps")}>
              {(a) => <input {...a} type="number" inputMode="numeric" value={draft.bitrateKbps} onInput={(e) => set("bitrateKbps", e.currentTarget.value)} />}
            </Field>
          )}
        </fieldset>
        <fieldset disabled={readOnly || busy} class="stack">
          <legend>Audio</legend>
          <Field id="preset-audio-codec" label="Audio codec" {...f("audio.codec")}>
            {(a) => (
              <select {...a} value={draft.audioCodec} onChange={(e) => set("audioCodec", Number(e.currentTarget.value))}>
                {AUDIO_CODECS.map(([v, l]) => (
                  <option value={v}>{l}</option>
                ))}
              </select>
            )}
          </Field>
          <Field id="preset-audio-bitrate" label="Audio bitrate (kb/s)" hint="32 to 512." {...f("audio.bitrate_kbps")}>
            {(a) => <input {...a} type="number" inputMode="numeric" value={draft.audioKbps} onInput={(e) => set("audioKbps", e.currentTarget.value)} />}
          </Field>
        </fieldset>
        {!readOnly && (
          <div class="toolbar">
            <button type="submit" disabled={busy}>
              {preset ? "Save preset" : "Create preset"}
            </button>
          </div>
        )}
      </form>
      {preset && (
        <form class="stack card" onSubmit={(e) => void duplicate(e)} aria-label="Duplicate preset">
          <h2>Duplicate</h2>
          <p class="muted">Copies every setting, including the ones this form does not show, into a new preset of your own.</p>
          <Field id="copy-name" label="Name of the copy" problem={copyProblem} field="name">
            {(a) => <input {...a} value={copy.name} onInput={(e) => setCopy({ ...copy, name: e.currentTarget.value })} />}
          </Field>
          <Field id="copy-slug" label="Slug of the copy" problem={copyProblem} field="slug">
            {(a) => <input {...a} value={copy.slug} onInput={(e) => setCopy({ ...copy, slug: e.currentTarget.value })} />}
          </Field>
          {copyProblem && <p role="alert">Not duplicated: {copyProblem.message}</p>}
          <div class="toolbar">
            <button type="submit" class="secondary">
              Duplicate preset
            </button>
          </div>
        </form>
      )}
    </>
  );
}
