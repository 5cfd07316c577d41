"""Offline speech recognition and chapter detection worker for the encoder node.

The encoder node spawns this once and reuses it:

    .venv-asr/bin/python encoder-node/asr/worker.py --model <whisper dir or name> --minilm <dir>

(scripts/asr-setup.sh builds .venv-asr and the model directories under .cache/asr/.)
Nothing is downloaded at run time: HF_HUB_OFFLINE=1 is set before faster-whisper is imported.

Protocol: newline-delimited JSON. One request per line on stdin, handled one at a time in order;
every line this writes on stdout is one JSON object carrying the request's "id" (null when the
request line was not a JSON object). Nothing else is written to stdout; logs go to stderr.

  {"id":"1","op":"ping"}
    -> {"id":"1","type":"result","ok":true,"faster_whisper":"1.2.1","model":"<--model>"}

  {"id":"2","op":"transcribe","wav":"/a.wav","language":"","chunk_seconds":300}
    wav: 16 kHz mono signed 16-bit PCM. language: ISO 639-1, "en-US" is taken as "en"; "" or
    absent: detected on the first chunk with speech and kept for the rest ("" with probability 0
    in the result when there is no speech at all). chunk_seconds: default 300; each chunk is cut
    at the quietest 0.5 s within its last 20 s, so only one chunk is in memory at a time.
    -> {"id":"2","type":"progress","fraction":0.37}                (zero or more)
    -> {"id":"2","type":"result","language":"en","language_probability":0.98,"duration":61.2,
        "segments":[{"start":0.0,"end":3.2,"text":"Hello world.",
                     "words":[{"start":0.0,"end":0.5,"word":"Hello","probability":0.9}]}]}
    Times are seconds from the start of the file, rounded to 3 decimals. No speech: no segments.

  {"id":"3","op":"chapters","sentences":[{"start":0,"end":4.1,"text":"..."}],
   "min_seconds":15,"max_chapters":10}
    -> {"id":"3","type":"result","chapters":[{"start":0.0,"end":21.3,"title":"Lava, Volcanoes"}]}
    Chapters are contiguous and cover the first sentence's start to the last sentence's end; each
    starts at the start of its first sentence. No sentences: no chapters. Boundaries split the
    MiniLM sentence embeddings into the most coherent topics (see "Chapters" below); a title is
    the chapter's top keywords (at most 3, 40 chars) by TF-IDF across the chapters, comma-separated.

  Errors: {"id":..,"type":"error","code":"unknown_language"|"failed","message":".."}
    unknown_language: the given language is not one Whisper knows; failed: anything else
    (unreadable wav, bad request, unknown op). The worker keeps serving after an error.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle OpenMP threads must not spin
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never fetch a model
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# numpy's matrices here are small; threaded OpenBLAS only fights ctranslate2 (and other jobs).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import importlib.metadata
import json
import logging
import math
import re
import struct
import sys
import time
import traceback
import wave

import numpy as np

SAMPLE_RATE = 16000
log = logging.getLogger("asr-worker")


class RequestError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------------------------------------
# Output


class Output:
    """Writes one JSON object per line to the real stdout, flushing each line."""

    def __init__(self):
        # Keep the real stdout for the protocol and point fd 1 (and sys.stdout) at stderr, so a
        # stray print from a library cannot corrupt the stream.
        self._out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def send(self, obj):
        self._out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._out.flush()


def r3(x):
    return round(float(x), 3)


# ---------------------------------------------------------------------------------------------
# Reading the wav in chunks


def open_wav(path):
    try:
        wf = wave.open(path, "rb")
    except (OSError, EOFError, wave.Error) as e:
        raise RequestError("failed", f"cannot read wav {path!r}: {e or type(e).__name__}")
    if (wf.getnchannels(), wf.getsampwidth(), wf.getframerate()) != (1, 2, SAMPLE_RATE):
        got = f"{wf.getnchannels()} ch, {8 * wf.getsampwidth()} bit, {wf.getframerate()} Hz"
        wf.close()
        raise RequestError("failed", f"wav must be 16 kHz mono 16-bit PCM, got {got}")
    return wf


def wav_seconds(wf, path):
    """The wav's length; the header may overstate it when ffmpeg could not patch it."""
    by_size = max(0, os.path.getsize(path) - 44) / (2 * SAMPLE_RATE)
    return min(wf.getnframes() / SAMPLE_RATE, by_size)


def read_samples(wf, count):
    data = wf.readframes(count)
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def quietest_cut(audio, search_seconds=20.0, window_seconds=0.5):
    """Index at the middle of the lowest-RMS window within the last search_seconds of audio."""
    window = int(window_seconds * SAMPLE_RATE)
    search = min(int(search_seconds * SAMPLE_RATE), len(audio) // 2)
    if search < window:
        return len(audio)
    tail = audio[len(audio) - search:].astype(np.float64)
    energy = np.concatenate(([0.0], np.cumsum(tail * tail)))
    hop = SAMPLE_RATE // 50  # 20 ms steps
    starts = np.arange(0, search - window + 1, hop)
    best = starts[np.argmin(energy[starts + window] - energy[starts])]
    return len(audio) - search + int(best) + window // 2


def wav_chunks(wf, chunk_seconds):
    """Yields (start_sample, float32 samples) chunks of about chunk_seconds (at least 10), each cut
    at the quietest spot of its last 20 s; the rest is carried over to the next chunk."""
    target = int(max(chunk_seconds, 10.0) * SAMPLE_RATE)
    carry = np.zeros(0, dtype=np.float32)
    start = 0
    while True:
        want = target - len(carry)
        fresh = read_samples(wf, want)
        audio = np.concatenate((carry, fresh))
        if len(audio) == 0:
            return
        if len(fresh) < want:  # end of file
            yield start, audio
            return
        cut = quietest_cut(audio)
        yield start, audio[:cut]
        carry = audio[cut:]
        start += cut


# ---------------------------------------------------------------------------------------------
# Transcription


class Transcriber:
    def __init__(self, model_ref):
        self.model_ref = model_ref
        self._model = None

    def model(self):
        if self._model is None:
            from faster_whisper import WhisperModel

            threads = len(os.sched_getaffinity(0))
            log.info("loading whisper model %s (%d threads)", self.model_ref, threads)
            self._model = WhisperModel(
                self.model_ref, device="cpu", compute_type="int8", cpu_threads=threads
            )
        return self._model

    def check_language(self, language):
        language = re.split(r"[-_]", (language or "").strip().lower())[0]  # "en-US" -> "en"
        if not language:
            return None
        if language not in self.model().supported_languages:
            raise RequestError("unknown_language", f"Whisper does not know language {language!r}")
        return language

    def transcribe(self, req, progress):
        path = req.get("wav")
        if not isinstance(path, str) or not path:
            raise RequestError("failed", "transcribe needs a wav path")
        chunk_seconds = float(req.get("chunk_seconds") or 300)
        language = self.check_language(req.get("language"))
        probability = 1.0 if language else 0.0
        locked = language is not None
        segments = []
        wf = open_wav(path)
        try:
            total = wav_seconds(wf, path)
            done = 0.0
            for start_sample, audio in wav_chunks(wf, chunk_seconds):
                offset = start_sample / SAMPLE_RATE
                log.info("chunk %.2f-%.2f s of %s", offset, offset + len(audio) / SAMPLE_RATE, path)
                found, info = self._chunk(audio, offset, language if locked else None, total, progress)
                segments.extend(found)
                if not locked:
                    language, probability = info.language, info.language_probability
                    locked = bool(found)  # keep detecting until a chunk has speech
                done = offset + len(audio) / SAMPLE_RATE
                progress(done / total if total else 1.0)
        finally:
            wf.close()
        if not locked:  # no speech anywhere: nothing to name a language by
            language, probability = "", 0.0
        return {
            "type": "result",
            "language": language,
            "language_probability": r3(probability),
            "duration": r3(done),
            "segments": segments,
        }

    def _chunk(self, audio, offset, language, total, progress):
        generator, info = self.model().transcribe(
            audio,
            language=language,
            beam_size=5,
            vad_filter=True,
            word_timestamps=True,
            condition_on_previous_text=False,
        )
        found = []
        for seg in generator:
            text = seg.text.strip()
            if text:
                found.append(segment_json(seg, text, offset))
            if total:
                progress((offset + seg.end) / total)
        return found, info


def segment_json(seg, text, offset):
    words = [
        {
            "start": r3(offset + w.start),
            "end": r3(offset + w.end),
            "word": w.word.strip(),
            "probability": r3(w.probability),
        }
        for w in (seg.words or [])
        if w.word.strip()
    ]
    return {"start": r3(offset + seg.start), "end": r3(offset + seg.end), "text": text, "words": words}


class Progress:
    """Reports a request's progress, at most every 0.5 s and only when it moved forward."""

    def __init__(self, output, request_id):
        self.output, self.id = output, request_id
        self.last_fraction, self.last_time = 0.0, 0.0

    def __call__(self, fraction):
        fraction = min(max(fraction, 0.0), 1.0)
        now = time.monotonic()
        if fraction > self.last_fraction and now - self.last_time >= 0.5:
            self.output.send({"id": self.id, "type": "progress", "fraction": round(fraction, 3)})
            self.last_fraction, self.last_time = fraction, now


# ---------------------------------------------------------------------------------------------
# Sentence embeddings: all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide) in numpy


def load_safetensors(path):
    """{name: float32 array} from a safetensors file (only the F32 tensors are needed)."""
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len)
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        begin, end = meta["data_offsets"]
        tensors[name] = np.array(data[begin:end].view("<f4").reshape(meta["shape"]))
    return tensors


def layer_norm(x, weight, bias, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def erf(x):
    # Abramowitz & Stegun 7.1.26 (max error 1.5e-7); numpy has no erf.
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


class MiniLM:
    MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
    BATCH = 32

    def __init__(self, directory):
        from tokenizers import Tokenizer

        with open(os.path.join(directory, "config.json")) as f:
            config = json.load(f)
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config.get("layer_norm_eps", 1e-12)
        self.w = load_safetensors(os.path.join(directory, "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
        self.tokenizer.enable_truncation(self.MAX_TOKENS)
        self.tokenizer.no_padding()

    def embed(self, texts):
        """L2-normalized mean-pooled embeddings, one row per text."""
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))  # less padding
        out = np.zeros((len(texts), self.w["embeddings.word_embeddings.weight"].shape[1]), np.float32)
        for b in range(0, len(order), self.BATCH):
            batch = order[b:b + self.BATCH]
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), np.int64)
            mask = np.zeros((len(batch), width), np.float32)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n], mask[row, :n] = encodings[i].ids, 1.0
            out[batch] = self._forward(ids, mask)
        return out

    def _forward(self, ids, mask):
        w, eps = self.w, self.eps
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][: ids.shape[1]]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for layer in range(self.layers):
            x = self._layer(x, bias, f"encoder.layer.{layer}.")
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _layer(self, x, attention_bias, p):
        w, eps = self.w, self.eps

        def dense(v, name):
            out = v.reshape(-1, v.shape[-1]) @ w[p + name + ".weight"].T + w[p + name + ".bias"]
            return out.reshape(*v.shape[:-1], -1)

        batch, length, width = x.shape
        size = width // self.heads

        def split(v):
            return v.reshape(batch, length, self.heads, size).transpose(0, 2, 1, 3)

        q = split(dense(x, "attention.self.query"))
        k = split(dense(x, "attention.self.key"))
        v = split(dense(x, "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + attention_bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
        x = layer_norm(x + dense(context, "attention.output.dense"),
                       w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], eps)
        hidden = gelu(dense(x, "intermediate.dense"))
        return layer_norm(x + dense(hidden, "output.dense"),
                          w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)


# ---------------------------------------------------------------------------------------------
# Chapters: the most coherent split of the sentences into topics
#
# For each number of chapters k up to max_chapters, dynamic programming finds the split into k
# runs of sentences, none shorter than min_seconds, whose sentence embeddings lie closest to their
# chapter's mean (the within-chapter sum of squares, as in k-means). The answer is the largest k
# whose every boundary separates two topics: the mean similarity between the sentences on either
# side is below TOPIC_CHANGE times the mean similarity within the two chapters. Judged against the
# chapters' own coherence, the test is the same for a 30 s talk of two-sentence topics as for a
# lecture. (TextTiling, used before, compared fixed windows of 3 sentences, which straddle short
# topics, against a fixed depth cutoff, which such flattened dips never reached.)
# TOPIC_CHANGE was set on the tuning talks of test/chapter-texts.ts: a change of topic scored at most
# 0.51 there (learning the guitar -> marathon training), a split of one topic at least 0.62 (the
# garden pond); 0.56 lies between. Neighbouring topics as alike as football and tennis score near
# 1 and stay together.

TOPIC_CHANGE = 0.56
# Sentences no more alike than unrelated ones (MiniLM scores those near 0) show no topic to leave.
COHERENCE_FLOOR = 0.05


def best_splits(sentences, embeddings, min_seconds, max_chapters):
    """{k: the sentence indices that start chapters 2..k} for every k that fits: the split into k
    chapters of at least min_seconds with the least within-chapter sum of squares."""
    n = len(sentences)
    sums = np.zeros((n + 1, embeddings.shape[1]))
    sums[1:] = np.cumsum(embeddings, axis=0, dtype=np.float64)
    gram = sums @ sums.T
    squares = np.diag(gram)
    count = np.arange(n + 1)[None, :] - np.arange(n + 1)[:, None]  # chapter of sentences i..j-1
    # It runs from the start of sentence i to the start of sentence j (the last sentence's end for j = n).
    edges = np.array([s["start"] for s in sentences] + [sentences[-1]["end"]])
    fits = (count > 0) & (edges[None, :] - edges[:, None] >= min_seconds)
    # Minimizing the sum of squares = maximizing the sum over chapters of |sum of embeddings|^2 / size.
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(fits, (squares[None, :] + squares[:, None] - 2 * gram) / count, -np.inf)
    del gram, count, fits  # n^2 each: a three-hour talk has thousands of sentences
    best = np.full(n + 1, -np.inf)  # best[j]: the best split of sentences 0..j-1 into k chapters
    best[0] = 0.0
    back = []
    splits = {}
    for k in range(1, max_chapters + 1):
        total = best[:, None] + gain
        back.append(np.argmax(total, axis=0))
        best = total[back[-1], np.arange(n + 1)]
        if not np.isfinite(best[n]):
            break  # k chapters do not fit, nor will more
        starts = [n]
        for choice in reversed(back):
            starts.append(int(choice[starts[-1]]))
        splits[k] = starts[-2:0:-1]
    return splits


def coherence(rows):
    """Mean cosine similarity between distinct sentences; None for one sentence."""
    if len(rows) < 2:
        return None
    total = rows.sum(axis=0)
    return float(total @ total - (rows * rows).sum()) / (len(rows) * (len(rows) - 1))


def is_topic_change(left, right, typical):
    """Whether two neighbouring chapters (their sentence embeddings) are about different things."""
    between = float(left.mean(axis=0) @ right.mean(axis=0))
    within = [c for c in (coherence(left), coherence(right)) if c is not None]
    return between < TOPIC_CHANGE * max(float(np.mean(within)) if within else typical, COHERENCE_FLOOR)


def chapter_starts(sentences, embeddings, min_seconds, max_chapters):
    """Sentence indices that start a chapter after the first, in order."""
    # A chapter of one sentence has no coherence of its own: take that of neighbouring sentences.
    typical = float(np.mean(np.sum(embeddings[1:] * embeddings[:-1], axis=1)))
    splits = best_splits(sentences, embeddings, min_seconds, max_chapters)
    for k in sorted(splits, reverse=True):
        bounds = [0] + splits[k] + [len(sentences)]
        if all(is_topic_change(embeddings[a:b], embeddings[b:c], typical) for a, b, c in zip(bounds, bounds[1:], bounds[2:])):
            return splits[k]
    return []


STOPWORDS = set("""
a about above actually after again against ago all almost also although always am among an and
another any anyone anything are around as at away back be became because become becomes been
before being below best better between big both but by came can cannot could did do does doing done
don down during each easy either else enough even ever every everything few first for from full
get gets getting give given go goes going gone good got great had has have having he her here hers
herself him himself his how however i if in into is it its itself just keep kind know known last
later least less let like little long look lot lots made make makes making many may maybe me might
more most much must my myself need never new next no nor not nothing now of off often oh ok okay old
on once one only or other others our ours ourselves out over own part people perhaps put quite
rather really right said same say says see seem seems several she should show since so some
something sometimes soon still such sure take than that the their theirs them themselves then
there these they thing things think this those though through thus time times to today together
too took toward two under until up upon us use used uses using usually very want was way ways we
well went were what whatever when where whether which while who whole whom whose why will with
within without would yeah yes yet you your yours yourself yourselves
""".split())


def keyword_stem(word):
    """Crude English plural folding so "volcano" and "volcanoes" count as one keyword."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("oes"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def chapter_titles(texts, max_chars=40, max_words=3):
    """Title per chapter: its top keywords by TF-IDF across chapters, most frequent surface form."""
    counts, surfaces = [], {}
    for text in texts:
        count = {}
        for word in re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", text.lower()):
            if len(word) < 3 or word in STOPWORDS or "'" in word:
                continue
            stem = keyword_stem(word)
            count[stem] = count.get(stem, 0) + 1
            forms = surfaces.setdefault(stem, {})
            forms[word] = forms.get(word, 0) + 1
        counts.append(count)
    n = len(texts)
    df = {}
    for count in counts:
        for stem in count:
            df[stem] = df.get(stem, 0) + 1
    titles = []
    for count in counts:
        scored = sorted(count, key=lambda s: (-count[s] * (math.log((1 + n) / (1 + df[s])) + 1), s))
        words = []
        for stem in scored[:max_words]:
            form = max(surfaces[stem], key=lambda f: (surfaces[stem][f], -len(f)))
            candidate = words + [form[:1].upper() + form[1:]]
            if words and len(", ".join(candidate)) > max_chars:
                break
            words = candidate
        titles.append(", ".join(words)[:max_chars] or "Untitled")
    return titles


class Chapterer:
    def __init__(self, minilm_dir):
        self.minilm_dir = minilm_dir
        self._model = None

    def model(self):
        if self._model is None:
            log.info("loading MiniLM from %s", self.minilm_dir)
            self._model = MiniLM(self.minilm_dir)
        return self._model

    def chapters(self, req):
        sentences = parse_sentences(req.get("sentences"))
        min_seconds = float(req.get("min_seconds") or 0)
        max_chapters = max(1, int(req.get("max_chapters") or 10))
        if not sentences:
            return {"type": "result", "chapters": []}
        starts = [0]
        span = sentences[-1]["end"] - sentences[0]["start"]
        if len(sentences) >= 2 and max_chapters > 1 and span >= 2 * min_seconds:
            embeddings = self.model().embed([s["text"] for s in sentences])
            starts += chapter_starts(sentences, embeddings, min_seconds, max_chapters)
        ends = starts[1:] + [len(sentences)]
        groups = [sentences[a:b] for a, b in zip(starts, ends)]
        titles = chapter_titles([" ".join(s["text"] for s in g) for g in groups])
        chapters = []
        for i, (group, title) in enumerate(zip(groups, titles)):
            end = groups[i + 1][0]["start"] if i + 1 < len(groups) else group[-1]["end"]
            chapters.append({"start": r3(group[0]["start"]), "end": r3(end), "title": title})
        return {"type": "result", "chapters": chapters}


def parse_sentences(raw):
    if not isinstance(raw, list):
        raise RequestError("failed", "chapters needs a sentences list")
    sentences = []
    for s in raw:
        try:
            start, end, text = float(s["start"]), float(s["end"]), str(s.get("text") or "")
        except (KeyError, TypeError, ValueError):
            raise RequestError("failed", "each sentence needs start, end and text")
        sentences.append({"start": start, "end": max(start, end), "text": text.strip()})
    sentences.sort(key=lambda s: s["start"])
    return sentences


# ---------------------------------------------------------------------------------------------
# Request loop


def faster_whisper_version():
    try:
        return importlib.metadata.version("faster-whisper")
    except importlib.metadata.PackageNotFoundError:
        return ""


def handle(req, output, transcriber, chapterer):
    op = req.get("op")
    if op == "ping":
        return {"type": "result", "ok": True, "faster_whisper": faster_whisper_version(),
                "model": transcriber.model_ref}
    if op == "transcribe":
        return transcriber.transcribe(req, Progress(output, req.get("id")))
    if op == "chapters":
        return chapterer.chapters(req)
    raise RequestError("failed", f"unknown op {op!r}")


def serve(output, transcriber, chapterer):
    for line in sys.stdin:
        if not line.strip():
            continue
        request_id = None
        try:
            try:
                req = json.loads(line)
            except ValueError as e:
                raise RequestError("failed", f"request is not JSON: {e}")
            if not isinstance(req, dict):
                raise RequestError("failed", "a request must be a JSON object")
            request_id = req.get("id")
            response = handle(req, output, transcriber, chapterer)
        except RequestError as e:
            response = {"type": "error", "code": e.code, "message": str(e)}
        except Exception as e:  # keep serving whatever went wrong
            log.error("request %s failed:\n%s", request_id, traceback.format_exc())
            response = {"type": "error", "code": "failed", "message": f"{type(e).__name__}: {e}"}
        output.send({"id": request_id, **response})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="Whisper model directory (CTranslate2) or name")
    parser.add_argument("--minilm", required=True, help="all-MiniLM-L6-v2 directory")
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="asr-worker: %(message)s")
    logging.getLogger("faster_whisper").setLevel(logging.WARNING)
    output = Output()
    serve(output, Transcriber(args.model), Chapterer(args.minilm))


if __name__ == "__main__":
    main()
