// The client: connect-es clients of every media.v1 service over one transport that speaks the binary
// codec (the service's JSON uses the spec's lowercase enum names, which protobuf JSON cannot read),
// sends the credentials, retries what is safe to retry (a mutating call under one Idempotency-Key
// for all its attempts) and throws MediaApiError with the field violations.
import { Code, ConnectError, createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { MediaApiError } from "./errors.js";
import { APIKeyService } from "./gen/media/v1/api_key_pb.js";
import { AppService } from "./gen/media/v1/app_pb.js";
import { HealthService } from "./gen/media/v1/health_pb.js";
import { JobService } from "./gen/media/v1/job_pb.js";
import { OrganizationService } from "./gen/media/v1/organization_pb.js";
import { OriginService } from "./gen/media/v1/origin_pb.js";
import { PresetService } from "./gen/media/v1/preset_pb.js";
import { UserService } from "./gen/media/v1/user_pb.js";
import { VideoService } from "./gen/media/v1/video_pb.js";
import { WebhookService } from "./gen/media/v1/webhook_pb.js";

export interface ClientOptions {
  /** The service's address, e.g. https://media.example.com (no path). */
  readonly baseUrl: string;
  /** An API key (ak_…): sent as `Authorization: Bearer`. */
  readonly apiKey?: string;
  /** X-Organization-ID (org_…): required by nearly every method, API keys included. */
  readonly organizationId?: string;
  /** Attempts of a call that failed with a retryable code (unavailable, resource_exhausted, aborted) or no answer; default 4. */
  readonly maxAttempts?: number;
  /** First backoff in ms, doubled each attempt with jitter; default 200. */
  readonly backoffMs?: number;
  /** A fetch of your own (tests, proxies); default globalThis.fetch. */
  readonly fetch?: typeof globalThis.fetch;
  /** JSON instead of binary: only to see the traffic; every enum then reads as UNSPECIFIED (see docs/clients.md). */
  readonly useJson?: boolean;
}

/** Reads and streams: safe to repeat without a key. Every other method changes something. */
const READ = /\/(Get\w*|List\w*|Retrieve\w*|Check\w*|Watch)$/;
const RETRYABLE = new Set([Code.Unavailable, Code.ResourceExhausted, Code.Aborted]);

function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

/**
 * A failure with no answer from the service (connection refused or reset: fetch's TypeError, which
 * connect-web reports as unknown without any response header); the call may or may not have run.
 */
function noAnswer(e: ConnectError): boolean {
  return e.code === Code.Unknown && e.metadata.get("content-type") === null;
}

function interceptors(o: ClientOptions): Interceptor[] {
  const attempts = Math.max(1, o.maxAttempts ?? 4);
  const backoff = o.backoffMs ?? 200;
  const auth: Interceptor = (next) => (req) => {
    if (o.apiKey) req.header.set("authorization", `Bearer ${o.apiKey}`);
    if (o.organizationId) req.header.set("x-organization-id", o.organizationId);
    return next(req);
  };
  const retry: Interceptor = (next) => async (req) => {
    const procedure = req.url.slice(req.url.lastIndexOf("/media.v1.") + 1);
    const mutating = !READ.test(req.url);
    // One key for every attempt: the service replays the first answer instead of acting twice.
    if (mutating && !req.header.has("idempotency-key")) req.header.set("idempotency-key", newIdempotencyKey());
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(req);
      } catch (e) {
        const err = ConnectError.from(e);
        const again = req.stream ? false : RETRYABLE.has(err.code) || noAnswer(err);
        if (!again || attempt >= attempts || req.signal.aborted)
          throw err instanceof MediaApiError || err.code === Code.Canceled ? err : new MediaApiError(err, procedure);
        const wait = backoff * 2 ** (attempt - 1) * (0.5 + Math.random());
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  };
  return [auth, retry];
}

/** The transport every client of this SDK uses (binary Connect protocol). */
export function mediaTransport(o: ClientOptions): Transport {
  if (!/^https?:\/\/[^/]+\/?$/.test(o.baseUrl)) throw new TypeError(`baseUrl must be http(s)://host[:port] with no path, not ${JSON.stringify(o.baseUrl)}`);
  return createConnectTransport({
    baseUrl: o.baseUrl.replace(/\/$/, ""),
    useBinaryFormat: !o.useJson,
    interceptors: interceptors(o),
    ...(o.fetch ? { fetch: o.fetch } : {}),
  });
}

export interface MediaClient {
  readonly transport: Transport;
  readonly options: ClientOptions;
  readonly apiKeys: Client<typeof APIKeyService>;
  readonly apps: Client<typeof AppService>;
  readonly health: Client<typeof HealthService>;
  readonly jobs: Client<typeof JobService>;
  readonly organizations: Client<typeof OrganizationService>;
  readonly origins: Client<typeof OriginService>;
  readonly presets: Client<typeof PresetService>;
  readonly users: Client<typeof UserService>;
  readonly videos: Client<typeof VideoService>;
  readonly webhooks: Client<typeof WebhookService>;
}

export function createMediaClient(options: ClientOptions): MediaClient {
  const transport = mediaTransport(options);
  return {
    transport,
    options,
    apiKeys: createClient(APIKeyService, transport),
    apps: createClient(AppService, transport),
    health: createClient(HealthService, transport),
    jobs: createClient(JobService, transport),
    organizations: createClient(OrganizationService, transport),
    origins: createClient(OriginService, transport),
    presets: createClient(PresetService, transport),
    users: createClient(UserService, transport),
    videos: createClient(VideoService, transport),
    webhooks: createClient(WebhookService, transport),
  };
}
