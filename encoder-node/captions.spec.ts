// Captions without ffmpeg: parsing uploads, cues from transcripts, WebVTT, HLS and DASH text tracks.
import { describe, expect, it } from "vitest";
import {
  addTextTracksToMpd,
  CAPTION_LIMITS,
  CaptionError,
  formatVttTime,
  hlsSubtitleRendition,
  parseSubtitles,
  toWhisperLanguage,
  WHISPER_LANGUAGES,
  writeChaptersVtt,
  writeWebVtt,
  type Cue,
} from "./captions.js";
import { MediaError } from "./media-errors.js";

/** The CaptionError a parse throws (fails the test when it throws nothing or something else). */
function parseError(text: string, format?: "vtt" | "srt"): CaptionError {
  try {
    parseSubtitles(text, format);
  } catch (e) {
    if (e instanceof CaptionError) return e;
    throw e;
  }
  throw new Error("parseSubtitles accepted the input");
}

describe("parseSubtitles: SRT", () => {
  it("reads CRLF with a BOM, keeps b/i/u, drops font and ASS overrides, escapes the rest, and sorts by start", () => {
    const srt = [
      "\uFEFF1",
      "00:00:03,000 --> 00:00:04,500",
      '<font color="#ff0000">{\\an8}<I>Top</I></font>',
      "Tom & Jerry &amp; <3 > 2",
      "",
      "2",
      "00:00:01,000 --> 00:00:02,000",
      "<b>Bold</b> <u>under</u> <span>x</span> &#233;",
      "",
      "",
    ].join("\r\n");
    expect(parseSubtitles(srt)).toEqual([
      { start: 1, end: 2, text: "<b>Bold</b> <u>under</u> &lt;span&gt;x&lt;/span&gt; &#233;" },
      { start: 3, end: 4.5, text: "<i>Top</i>\nTom &amp; Jerry &amp; &lt;3 &gt; 2" },
    ]);
  });

  it("tolerates a missing cue number, '.' before the milliseconds, one-digit hours, coordinates, no spaces round the arrow, and CR line ends", () => {
    const srt = "00:00:01.000 --> 00:00:02.000 X1:100 X2:200 Y1:10 Y2:20\rfirst\r\r3\r0:00:02,500-->0:00:03,000\rsecond\r";
    expect(parseSubtitles(srt)).toEqual([
      { start: 1, end: 2, text: "first" },
      { start: 2.5, end: 3, text: "second" },
    ]);
  });

  it("detects SRT after leading blank lines, and takes a forced format", () => {
    const srt = "\n\n1\n00:00:01,000 --> 00:00:02,000\nHi\n";
    expect(parseSubtitles(srt)).toEqual([{ start: 1, end: 2, text: "Hi" }]);
    expect(parseSubtitles(srt, "srt")).toEqual([{ start: 1, end: 2, text: "Hi" }]);
    const forced = parseError(srt, "vtt");
    expect([forced.line, forced.message]).toEqual([1, 'line 1: the header must be WEBVTT, optionally followed by a space and text, not ""']);
  });
});

describe("parseSubtitles: WebVTT", () => {
  it("skips the header, NOTE, STYLE and REGION blocks, reads ids, hour-less times and settings, and keeps the text as is", () => {
    const vtt = [
      "WEBVTT - Lecture 1",
      "Kind: captions",
      "Language: en",
      "",
      "NOTE",
      "This is a comment",
      "over two lines",
      "",
      "STYLE",
      "::cue { color: yellow }",
      "",
      "REGION",
      "id:fred",
      "width:40%",
      "",
      "intro",
      "00:01.000 --> 00:04.000 align:start line:0",
      "<v Roger>Hello &amp; <b>welcome</b>",
      "",
      "NOTE one-line note",
      "",
      "00:00:00.500 --> 00:00:00.900",
      "First",
      "",
      "01:02:03.004 --> 01:02:04.000 position:10%",
      "Last line one",
      "Last line two",
      "",
    ].join("\n");
    expect(parseSubtitles(vtt)).toEqual([
      { start: 0.5, end: 0.9, text: "First" },
      { start: 1, end: 4, text: "<v Roger>Hello &amp; <b>welcome</b>" },
      { start: 3723.004, end: 3724, text: "Last line one\nLast line two" },
    ]);
  });

  it("accepts a BOM and CRLF, a tab after WEBVTT, and keeps cues that start together in file order", () => {
    const vtt = "\uFEFFWEBVTT\theader text\r\n\r\n00:05.000 --> 00:06.000\r\nB\r\n\r\n00:05.000 --> 00:07.000\r\nA\r\n\r\n00:01.000 --> 00:02.000\r\nfirst\r\n";
    expect(parseSubtitles(vtt).map((c) => c.text)).toEqual(["first", "B", "A"]);
  });

  it("takes a cue that follows the header without a blank line", () => {
    expect(parseSubtitles("WEBVTT\n00:01.000 --> 00:02.000\nx\n")).toEqual([{ start: 1, end: 2, text: "x" }]);
  });
});

describe("parseSubtitles: refusals name the line", () => {
  it.each([
    ["an empty file", "", 1, "line 1: the file is empty"],
    ["a blank file", "\n \r\n\t\n", 1, "line 1: the file is empty"],
    [
      "neither format",
      "hello\nworld\n",
      1,
      "line 1: neither WebVTT (the first line must be WEBVTT) nor SRT (a cue number, then a line like 00:00:01,000 --> 00:00:02,000)",
    ],
    ["a bad header", "WEBVTTX\n\n00:01.000 --> 00:02.000\nx\n", 1, 'line 1: the header must be WEBVTT, optionally followed by a space and text, not "WEBVTTX"'],
    [
      "a comma in a WebVTT time",
      "WEBVTT\n\n00:01.000 --> 00:02.000\nok\n\n00:03,000 --> 00:04.000\nbad\n",
      6,
      'line 6: bad timestamp "00:03,000" (expected hh:mm:ss.ttt or mm:ss.ttt)',
    ],
    ["60 minutes", "WEBVTT\n\n00:60.000 --> 01:02.000\nx\n", 3, 'line 3: bad timestamp "00:60.000" (expected hh:mm:ss.ttt or mm:ss.ttt)'],
    [
      "an SRT time without milliseconds",
      "1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\n00:00:03 --> 00:00:04,000\nbad\n",
      6,
      'line 6: bad timestamp "00:00:03" (expected hh:mm:ss,mmm)',
    ],
    ["a timing without an end", "1\n00:00:01,000 -->\nx\n", 2, 'line 2: bad cue timing "00:00:01,000 -->" (expected start --> end)'],
    ["an end before the start", "1\n00:00:05,000 --> 00:00:04,000\nx\n", 2, "line 2: the cue ends (00:00:04.000) before it starts (00:00:05.000)"],
    ["a negative time", "1\n-00:00:01,000 --> 00:00:02,000\nx\n", 2, 'line 2: negative time "-00:00:01,000"'],
    [
      "a WebVTT block without a timing",
      "WEBVTT\n\n00:01.000 --> 00:02.000\nok\n\nid\ntext without timing\n",
      7,
      'line 7: expected a cue timing line (start --> end), found "text without timing"',
    ],
    [
      "an SRT block without a number or timing",
      "1\n00:00:01,000 --> 00:00:02,000\nok\n\njunk\nmore\n",
      5,
      'line 5: expected a cue number and a timing line (00:00:01,000 --> 00:00:02,000), found "junk"',
    ],
    ["a header and no cues", "WEBVTT\nKind: captions\n\nNOTE nothing here\n", 5, "line 5: the file holds no cues"],
    ["a NUL byte", "WEBVTT\n\n00:01.000 --> 00:02.000\nab\0c\n", 4, "line 4: binary content (a NUL byte), not a text subtitle file"],
    [
      "many replacement characters",
      `1\n00:00:01,000 --> 00:00:02,000\n${"\uFFFD".repeat(9)}\n`,
      3,
      "line 3: binary content or not UTF-8 (9 invalid characters)",
    ],
  ])("%s", (_, text, line, message) => {
    const e = parseError(text);
    expect([e.code, e.name, e.line, e.message]).toEqual(["subtitle_invalid", "CaptionError", line, message]);
  });

  it("lets a few replacement characters through (one badly converted letter)", () => {
    expect(parseSubtitles(`1\n00:00:01,000 --> 00:00:02,000\nCaf\uFFFD ${"\uFFFD".repeat(7)}\n`)).toHaveLength(1);
  });

  it("counts the input's UTF-8 bytes against maxBytes, not its characters", () => {
    const text = `WEBVTT\n\n00:01.000 --> 00:02.000\n${"é".repeat(1_100_000)}\n`;
    expect(text.length).toBeLessThan(CAPTION_LIMITS.maxBytes);
    const e = parseError(text);
    expect([e.line, e.message]).toEqual([1, `line 1: the file is ${Buffer.byteLength(text)} bytes, over the limit of 2097152`]);
  });

  it("takes maxCues cues and refuses one more at its timing line", () => {
    const srt = (n: number) => Array.from({ length: n }, (_, k) => `${k + 1}\n00:00:01,000 --> 00:00:02,000\nx\n`).join("\n");
    expect(parseSubtitles(srt(CAPTION_LIMITS.maxCues))).toHaveLength(20_000);
    const e = parseError(srt(CAPTION_LIMITS.maxCues + 1));
    expect([e.line, e.message]).toEqual([80_002, "line 80002: more than 20000 cues"]);
  });

  it("takes a cue of maxCueChars characters and refuses a longer one", () => {
    const vtt = (chars: number) => `WEBVTT\n\n00:01.000 --> 00:02.000\n${"a".repeat(chars)}\n`;
    expect(parseSubtitles(vtt(1000))[0]!.text).toHaveLength(1000);
    expect(parseError(vtt(1001)).message).toBe("line 3: the cue has 1001 characters, over the limit of 1000");
  });
});

describe("WebVTT writing", () => {
  const two: Cue[] = [
    { start: 1, end: 2.5, text: "Hello" },
    { start: 3, end: 4.25, text: "Two\nlines" },
  ];

  it("writes cues exactly, with and without the HLS timestamp map", () => {
    expect(writeWebVtt(two)).toBe("WEBVTT\n\n00:00:01.000 --> 00:00:02.500\nHello\n\n00:00:03.000 --> 00:00:04.250\nTwo\nlines\n");
    expect(writeWebVtt(two, { timestampMap: { mpegts: 900000 } })).toBe(
      "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000\n\n00:00:01.000 --> 00:00:02.500\nHello\n\n00:00:03.000 --> 00:00:04.250\nTwo\nlines\n",
    );
    expect(writeWebVtt([])).toBe("WEBVTT\n");
  });

  it("keeps a cue's text from ending the cue or starting another", () => {
    expect(writeWebVtt([{ start: 0, end: 1, text: "a\n\n  \nb --> c" }])).toBe("WEBVTT\n\n00:00:00.000 --> 00:00:01.000\na\nb --&gt; c\n");
  });

  it("round-trips through the parser", () => {
    expect(parseSubtitles(writeWebVtt(two))).toEqual(two);
  });

  it("formats times with hours, rounding to the millisecond", () => {
    expect([0, 3661.5, 59.9996, 0.0004, 360_000, -2].map(formatVttTime)).toEqual([
      "00:00:00.000",
      "01:01:01.500",
      "00:01:00.000",
      "00:00:00.000",
      "100:00:00.000",
      "00:00:00.000",
    ]);
  });

  it("writes chapters as cues of plain titles", () => {
    expect(
      writeChaptersVtt([
        { start: 0, end: 65, title: "Intro & <setup>" },
        { start: 65, end: 130.5, title: "Part\ntwo " },
      ]),
    ).toBe("WEBVTT\n\n00:00:00.000 --> 00:01:05.000\nIntro &amp; &lt;setup&gt;\n\n00:01:05.000 --> 00:02:10.500\nPart two\n");
  });
});

describe("hlsSubtitleRendition", () => {
  const map = "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n";
  const cues: Cue[] = [
    { start: 1, end: 2, text: "early" },
    { start: 4, end: 6, text: "edge" },
    { start: 5, end: 7, text: "spans" },
    { start: 12, end: 12.5, text: "last" },
    { start: 15, end: 16, text: "after the end" },
  ];

  it("writes a VOD playlist of segments, a cue spanning a boundary in both and one ending on it only in the first", () => {
    const r = hlsSubtitleRendition(cues, { segmentSeconds: 6, durationSeconds: 14, mpegts: 126000 });
    expect(r.playlist).toBe(
      "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:6.000,\nseg_00000.vtt\n#EXTINF:6.000,\nseg_00001.vtt\n#EXTINF:2.000,\nseg_00002.vtt\n#EXT-X-ENDLIST\n",
    );
    expect(r.segments).toEqual([
      {
        name: "seg_00000.vtt",
        text: `${map}\n00:00:01.000 --> 00:00:02.000\nearly\n\n00:00:04.000 --> 00:00:06.000\nedge\n\n00:00:05.000 --> 00:00:07.000\nspans\n`,
      },
      { name: "seg_00001.vtt", text: `${map}\n00:00:05.000 --> 00:00:07.000\nspans\n` },
      { name: "seg_00002.vtt", text: `${map}\n00:00:12.000 --> 00:00:12.500\nlast\n` },
    ]);
  });

  it("writes an empty segment as a header, and rounds the target duration up", () => {
    const r = hlsSubtitleRendition([], { segmentSeconds: 6.5, durationSeconds: 10, mpegts: 126000 });
    expect(r.playlist).toContain("#EXT-X-TARGETDURATION:7\n");
    expect(r.playlist).toContain("#EXTINF:6.500,\nseg_00000.vtt\n#EXTINF:3.500,\nseg_00001.vtt\n");
    expect(r.segments.map((s) => s.text)).toEqual([map, map]);
  });

  it("adds no segment for a duration that is a whole number of segments, or for float error", () => {
    expect(hlsSubtitleRendition(cues, { segmentSeconds: 6, durationSeconds: 12, mpegts: 0 }).segments).toHaveLength(2);
    expect(hlsSubtitleRendition(cues, { segmentSeconds: 0.1, durationSeconds: 0.1 + 0.2, mpegts: 0 }).segments).toHaveLength(3);
    const short = hlsSubtitleRendition(cues, { segmentSeconds: 6, durationSeconds: 4.2, mpegts: 0 });
    expect(short.playlist).toContain(
      "#EXT-X-TARGETDURATION:5\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:4.200,\nseg_00000.vtt\n#EXT-X-ENDLIST\n",
    );
  });

  it("refuses a zero segment length or duration", () => {
    expect(() => hlsSubtitleRendition(cues, { segmentSeconds: 0, durationSeconds: 10, mpegts: 0 })).toThrow(RangeError);
    expect(() => hlsSubtitleRendition(cues, { segmentSeconds: 6, durationSeconds: 0, mpegts: 0 })).toThrow(RangeError);
  });
});

// What ffmpeg 5.1's dash muxer writes for one H.264 and one AAC stream (tabs and all).
const MPD = [
  '<?xml version="1.0" encoding="utf-8"?>',
  '<MPD xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"',
  '\txmlns="urn:mpeg:dash:schema:mpd:2011"',
  '\txmlns:xlink="http://www.w3.org/1999/xlink"',
  '\txsi:schemaLocation="urn:mpeg:DASH:schema:MPD:2011 http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-DASH_schema_files/DASH-MPD.xsd"',
  '\tprofiles="urn:mpeg:dash:profile:isoff-live:2011"',
  '\ttype="static"',
  '\tmediaPresentationDuration="PT4.0S"',
  '\tmaxSegmentDuration="PT2.0S"',
  '\tminBufferTime="PT8.0S">',
  "\t<ProgramInformation>",
  "\t</ProgramInformation>",
  '\t<ServiceDescription id="0">',
  "\t</ServiceDescription>",
  '\t<Period id="0" start="PT0.0S">',
  '\t\t<AdaptationSet id="0" contentType="video" startWithSAP="1" segmentAlignment="true" bitstreamSwitching="true" frameRate="30/1" maxWidth="640" maxHeight="360" par="16:9">',
  '\t\t\t<Representation id="0" mimeType="video/mp4" codecs="avc1.f4001e" bandwidth="207566" width="640" height="360" sar="1:1">',
  '\t\t\t\t<SegmentTemplate timescale="1000000" duration="2000000" initialization="init-$RepresentationID$.m4s" media="chunk-$RepresentationID$-$Number%05d$.m4s" startNumber="1">',
  "\t\t\t\t</SegmentTemplate>",
  "\t\t\t</Representation>",
  "\t\t</AdaptationSet>",
  '\t\t<AdaptationSet id="1" contentType="audio" startWithSAP="1" segmentAlignment="true" bitstreamSwitching="true" lang="eng">',
  '\t\t\t<Representation id="1" mimeType="audio/mp4" codecs="mp4a.40.2" bandwidth="69000" audioSamplingRate="44100">',
  '\t\t\t\t<AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="1" />',
  '\t\t\t\t<SegmentTemplate timescale="1000000" duration="2000000" initialization="init-$RepresentationID$.m4s" media="chunk-$RepresentationID$-$Number%05d$.m4s" startNumber="1">',
  "\t\t\t\t</SegmentTemplate>",
  "\t\t\t</Representation>",
  "\t\t</AdaptationSet>",
  "\t</Period>",
  "</MPD>",
  "",
].join("\n");

/** Element names in document order when the XML is well-formed (tags balanced, attributes quoted, text escaped); throws otherwise. */
function elementsOf(xml: string): string[] {
  const names: string[] = [];
  const open: string[] = [];
  const tag = /<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+="[^"<>]*")*)\s*(\/?)>/g;
  const body = xml.replace(/^<\?xml [^>]*\?>/, "");
  const text = body.replace(tag, (_, close: string, name: string, _attrs: string, empty: string) => {
    if (close) {
      if (open.pop() !== name) throw new Error(`</${name}> closes ${open.at(-1) ?? "nothing"}`);
    } else {
      names.push(name);
      if (!empty) open.push(name);
    }
    return "";
  });
  if (open.length > 0) throw new Error(`unclosed ${open.join(", ")}`);
  if (/[<>]|&(?!(?:amp|lt|gt|quot|apos);)/.test(text)) throw new Error(`stray markup in text: ${text.trim().slice(0, 80)}`);
  return names;
}

describe("addTextTracksToMpd", () => {
  const tracks = [
    { id: "text_en", language: "en", label: "English", url: "captions/en.vtt", role: "caption" as const },
    { id: "text_pt-BR", language: "pt-BR", label: 'Português "BR" & <more>', url: "captions/pt-BR.vtt?v=1&x=2", role: "subtitle" as const },
  ];

  it("adds one text AdaptationSet per track after the last one, indented like ffmpeg's, numbered on", () => {
    const out = addTextTracksToMpd(MPD, tracks);
    const added = [
      '\t\t<AdaptationSet id="2" contentType="text" mimeType="text/vtt" lang="en">',
      "\t\t\t<Label>English</Label>",
      '\t\t\t<Role schemeIdUri="urn:mpeg:dash:role:2011" value="caption" />',
      '\t\t\t<Representation id="text_en" bandwidth="256">',
      "\t\t\t\t<BaseURL>captions/en.vtt</BaseURL>",
      "\t\t\t</Representation>",
      "\t\t</AdaptationSet>",
      '\t\t<AdaptationSet id="3" contentType="text" mimeType="text/vtt" lang="pt-BR">',
      "\t\t\t<Label>Português &quot;BR&quot; &amp; &lt;more&gt;</Label>",
      '\t\t\t<Role schemeIdUri="urn:mpeg:dash:role:2011" value="subtitle" />',
      '\t\t\t<Representation id="text_pt-BR" bandwidth="256">',
      "\t\t\t\t<BaseURL>captions/pt-BR.vtt?v=1&amp;x=2</BaseURL>",
      "\t\t\t</Representation>",
      "\t\t</AdaptationSet>",
      "",
    ].join("\n");
    expect(out).toBe(MPD.replace("\t</Period>", `${added}\t</Period>`));
  });

  it("leaves the MPD well-formed, the new sets inside the Period", () => {
    const names = elementsOf(addTextTracksToMpd(MPD, tracks));
    expect(names.filter((n) => n === "AdaptationSet")).toHaveLength(4);
    expect(names.filter((n) => n === "Representation")).toHaveLength(4);
    expect(names.slice(-10)).toEqual([
      "AdaptationSet",
      "Label",
      "Role",
      "Representation",
      "BaseURL",
      "AdaptationSet",
      "Label",
      "Role",
      "Representation",
      "BaseURL",
    ]);
    // The checker itself catches a broken document.
    expect(() => elementsOf(MPD.replace("\t\t</AdaptationSet>\n\t</Period>", "\t</Period>"))).toThrow(/closes/);
    expect(() => elementsOf(MPD.replace("<Label>", "<Label>a & b"))).not.toThrow();
    expect(() => elementsOf(`${MPD}<Label>a & b</Label>`)).toThrow(/stray/);
  });

  it("changes nothing without tracks, and refuses an MPD without a Period or a taken Representation id", () => {
    expect(addTextTracksToMpd(MPD, [])).toBe(MPD);
    expect(() => addTextTracksToMpd("<MPD></MPD>", tracks)).toThrow(MediaError);
    expect(() => addTextTracksToMpd(MPD, [{ ...tracks[0]!, id: "1" }])).toThrow(/already has a Representation with id "1"/);
    expect(() => addTextTracksToMpd(MPD, [tracks[0]!, tracks[0]!])).toThrow(/text_en/);
  });

  it("numbers from 0 in a Period without adaptation sets", () => {
    const out = addTextTracksToMpd('<MPD>\n  <Period id="0">\n  </Period>\n</MPD>\n', [tracks[0]!]);
    expect(out).toContain('\n    <AdaptationSet id="0" contentType="text"');
    expect(elementsOf(out)).toEqual(["MPD", "Period", "AdaptationSet", "Label", "Role", "Representation", "BaseURL"]);
  });
});

describe("Whisper languages", () => {
  it("lists the 100 codes of Whisper's tokenizer", () => {
    expect(WHISPER_LANGUAGES.size).toBe(100);
    for (const code of ["en", "zh", "he", "no", "nn", "haw", "jw", "yue", "tl", "la"]) expect(WHISPER_LANGUAGES.has(code)).toBe(true);
    for (const code of ["iw", "jv", "nb", "fil", "zu", "und"]) expect(WHISPER_LANGUAGES.has(code)).toBe(false);
  });

  it.each([
    ["pt-BR", "pt"],
    ["EN", "en"],
    ["en-US", "en"],
    ["zh-Hant-TW", "zh"],
    ["zh-yue", "yue"],
    ["yue-HK", "yue"],
    ["iw", "he"],
    ["he-IL", "he"],
    ["jv", "jw"],
    ["jw", "jw"],
    ["nb-NO", "no"],
    ["nn", "nn"],
    ["fil", "tl"],
    ["in", "id"],
    ["haw", "haw"],
    ["sr_Latn", "sr"],
    ["zu", undefined],
    ["und", undefined],
    ["", undefined],
  ])("%s → %s", (tag, code) => {
    expect(toWhisperLanguage(tag)).toBe(code);
  });
});
