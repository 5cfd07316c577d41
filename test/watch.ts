// A raw Connect server-streaming reader over JSON, as a strict client sees it: each message is one
// enveloped JSON object; the end-of-stream envelope carries an error, if any.
import type { Auth } from "./harness.js";

export interface StreamMessage {
  /** Parsed JSON of the message. */
  readonly body: any;
  /** Date.now() when the message arrived. */
  readonly receivedAt: number;
}

export interface StreamResult {
  readonly status: number;
  readonly messages: StreamMessage[];
  /** The end-of-stream error, when the stream ended with one. */
  readonly error?: { code: string; message: string };
}

/** Calls a server-streaming method; `onMessage` hears each message as it arrives. */
export async function stream(
  base: string,
  route: string,
  body: unknown,
  auth: Auth,
  onMessage?: (m: StreamMessage) => void,
  signal?: AbortSignal,
): Promise<StreamResult> {
  const json = new TextEncoder().encode(JSON.stringify(body));
  const request = new Uint8Array(5 + json.length);
  new DataView(request.buffer).setUint32(1, json.length);
  request.set(json, 5);
  const headers: Record<string, string> = { "content-type": "application/connect+json", "connect-protocol-version": "1" };
  if (auth.bearer) headers.authorization = `Bearer ${auth.bearer}`;
  if (auth.org) headers["x-organization-id"] = auth.org;
  const res = await fetch(`${base}/media.v1.${route}`, { method: "POST", headers, body: request, ...(signal ? { signal } : {}) });
  const messages: StreamMessage[] = [];
  if (!res.body) return { status: res.status, messages };
  if (!res.headers.get("content-type")?.startsWith("application/connect+json")) {
    const text = await res.text();
    return { status: res.status, messages, error: JSON.parse(text) as { code: string; message: string } };
  }
  const reader = res.body.getReader();
  let buffer = new Uint8Array(0);
  let error: { code: string; message: string } | undefined;
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (value) {
      const merged = new Uint8Array(buffer.length + value.length);
      merged.set(buffer);
      merged.set(value, buffer.length);
      buffer = merged;
    }
    while (buffer.length >= 5) {
      const flags = buffer[0]!;
      const length = new DataView(buffer.buffer, buffer.byteOffset).getUint32(1);
      if (buffer.length < 5 + length) break;
      const payload = JSON.parse(decoder.decode(buffer.subarray(5, 5 + length)));
      buffer = buffer.subarray(5 + length);
      if (flags & 0x02) {
        if (payload.error) error = payload.error;
      } else {
        const m = { body: payload, receivedAt: Date.now() };
        messages.push(m);
        onMessage?.(m);
      }
    }
    if (done) break;
  }
  return { status: res.status, messages, ...(error ? { error } : {}) };
}
