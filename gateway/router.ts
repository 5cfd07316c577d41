// The router: every service of the contract on Connect's universal handlers, behind the access,
// idempotency and error interceptors and the spec JSON bridge, each call counted and timed once
// (rpc-metrics.ts). Host adapters (uWS, node:http) only move bytes to and from these handlers.
import type { KeyCallers } from "./key-callers.js";
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createConnectRouter, createServiceImplSpec, type Interceptor, type MethodImplSpec } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { apiError, StoreUnavailable, unimplemented } from "../src/errors.js";
import { APIKeyService } from "../src/gen/media/v1/api_key_pb.js";
import { AppService } from "../src/gen/media/v1/app_pb.js";
import { HealthService } from "../src/gen/media/v1/health_pb.js";
import { JobService } from "../src/gen/media/v1/job_pb.js";
import { OrganizationService } from "../src/gen/media/v1/organization_pb.js";
import { OriginService } from "../src/gen/media/v1/origin_pb.js";
import { PresetService } from "../src/gen/media/v1/preset_pb.js";
import { UserService } from "../src/gen/media/v1/user_pb.js";
import { VideoService } from "../src/gen/media/v1/video_pb.js";
import { WebhookService } from "../src/gen/media/v1/webhook_pb.js";
import { newId, Prefix } from "../src/ids.js";
import { annotate } from "../src/tracing.js";
import type { SessionVerifier } from "../src/identity.js";
import type { Sessions } from "../src/sessions.js";
import { accessInterceptor, defaultRule, REQUEST_ID, RULES, SCOPE_RESOURCES, type Rule } from "./access.js";
import { idempotencyInterceptor } from "./idempotency.js";
import { withSpecJson } from "./json-bridge.js";
import { boundedGzip } from "./compression.js";
import { rateLimitInterceptors } from "./rate-limit.js";
import { withRpcMetrics } from "./rpc-metrics.js";
import { apiKeyService } from "./services/api-key.js";
import { appService } from "./services/app.js";
import type { ServiceDeps } from "./services/deps.js";
import { healthService } from "./services/health.js";
import { organizationService } from "./services/organization.js";
import { userService } from "./services/user.js";
import { originService } from "./services/origin.js";
import { presetService } from "./services/preset.js";
import { jobService } from "./services/job.js";
import { webhookService } from "./services/webhook.js";
import { videoService } from "./services/video.js";
import type { Hosting } from "./hosting.js";
import type { ApiKeyRecord } from "../actors/api-key/messages.js";
import { WatchHub } from "./watch/hub.js";
import { withSharedFrames } from "./watch/route.js";

/** Services whose capability arrives in a later issue: every method answers unimplemented. */
const LATER: readonly { service: DescService; capability: string; resource: (typeof SCOPE_RESOURCES)[number] }[] = [];

/** Services whose methods follow the default rule of their resource: reads need :read, the rest :write. */
const BY_RESOURCE: Readonly<Record<string, (typeof SCOPE_RESOURCES)[number]>> = {
  [OriginService.typeName]: "origins",
  [PresetService.typeName]: "presets",
  [JobService.typeName]: "jobs",
  [WebhookService.typeName]: "webhooks",
  [VideoService.typeName]: "videos",
  ...Object.fromEntries(LATER.map((l) => [l.service.typeName, l.resource])),
};

/** The longest Connect-Timeout-Ms: Node's timers hold 2^31-1 ms and would fire a longer one at once. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** Server streams of entity updates: their updates go out as frames shared by every stream (gateway/watch/). */
const WATCH_METHODS = new Set([`/${JobService.typeName}/${JobService.method.watch.name}`, `/${VideoService.typeName}/${VideoService.method.watch.name}`]);

const READ_METHOD = /^(Get|List|Retrieve|Watch|Check)/;

export function ruleOf(service: string, method: string): Rule | undefined {
  const explicit = RULES[`${service}/${method}`];
  if (explicit) return explicit;
  const resource = BY_RESOURCE[service];
  return resource && defaultRule(resource, !READ_METHOD.test(method));
}

function publicOrigin(hosting: Hosting): string | undefined {
  try {
    return new URL(hosting.publicUrl()).origin;
  } catch {
    return undefined;
  }
}

export interface RouterDeps extends ServiceDeps {
  readonly hosting: Hosting;
  readonly sessions: SessionVerifier;
  readonly signIns: Sessions;
  readonly onKeyUsed: (key: ApiKeyRecord) => void;
  /** Keys' apps and organizations, kept a few seconds and forgotten on a change (gateway/key-callers.ts). */
  readonly keyCallers: KeyCallers;
}

function outermost(deps: RouterDeps): Interceptor {
  return (next) => async (req) => {
    const requestId = newId(Prefix.request);
    req.contextValues.set(REQUEST_ID, requestId);
    // The call's span (rpc-trace.ts) names the id its answer and its log lines carry.
    annotate("media.request_id", requestId);
    try {
      const res = await next(req);
      res.header.set("x-request-id", requestId);
      return res;
    } catch (e) {
      if (e instanceof ConnectError) {
        e.metadata.set("x-request-id", requestId);
        // Errors raised by the protocol layer carry no details; every answer must.
        if (e.details.length === 0) throw Object.assign(apiError(e.code, e.rawMessage), { metadata: e.metadata });
        throw e;
      }
      if (e instanceof StoreUnavailable) {
        deps.log.warn({ err: e, request_id: requestId }, "store unavailable");
        const unavailable = apiError(Code.Unavailable, "the database is unavailable; retry (with the same Idempotency-Key for a change)");
        unavailable.metadata.set("x-request-id", requestId);
        throw unavailable;
      }
      deps.log.error({ err: e, request_id: requestId, method: `${req.service.typeName}/${req.method.name}` }, "unhandled error");
      const internal = apiError(Code.Internal, `internal error (request ${requestId})`);
      internal.metadata.set("x-request-id", requestId);
      throw internal;
    }
  };
}

export function createHandlers(routerDeps: RouterDeps): Map<string, UniversalHandler> {
  // One fan-out per gateway: every Watch stream of an entity shares its subscription and its frames.
  const watches =
    routerDeps.updates &&
    new WatchHub(routerDeps.updates, {
      stallMs: routerDeps.config.watchStallMs,
      onError: (err, entity) => routerDeps.log.error({ err, entity }, "watch update not presented"),
    });
  const deps: RouterDeps = watches ? { ...routerDeps, watches } : routerDeps;
  // Rate limits by address wrap access (a flood costs no credential checks); by caller run inside it.
  const rateLimits = rateLimitInterceptors({ limits: deps.config.rateLimits, isPublic: (service, method) => ruleOf(service, method)?.public === true });
  const interceptors = [
    outermost(deps),
    rateLimits.byAddress,
    accessInterceptor({ ...deps, staffEmails: deps.config.staffEmails, ruleOf, publicOrigin: () => publicOrigin(deps.hosting) }),
    rateLimits.byCaller,
    idempotencyInterceptor(deps.store, deps.box, ruleOf),
  ];
  const router = createConnectRouter({
    connect: true,
    grpcWeb: true,
    grpc: false,
    acceptCompression: [boundedGzip],
    readMaxBytes: deps.config.maxRequestBytes,
    maxTimeoutMs: MAX_TIMEOUT_MS,
    interceptors,
  });
  const limits = { readMaxBytes: deps.config.maxRequestBytes, maxTimeoutMs: MAX_TIMEOUT_MS };
  const unary = new Map<string, MethodImplSpec & { kind: "unary" }>();
  const serve = (service: DescService, impl: object) => {
    router.service(service, impl);
    for (const spec of Object.values(createServiceImplSpec(service, impl).methods)) {
      if (spec.kind === "unary") unary.set(`/${service.typeName}/${spec.method.name}`, spec);
    }
  };
  serve(HealthService, healthService(deps));
  serve(OrganizationService, organizationService(deps));
  serve(AppService, appService(deps));
  serve(APIKeyService, apiKeyService(deps));
  serve(UserService, userService(deps));
  serve(OriginService, originService(deps));
  serve(PresetService, presetService(deps));
  serve(JobService, jobService(deps));
  serve(WebhookService, webhookService(deps));
  serve(VideoService, videoService(deps));
  for (const later of LATER) {
    const impl: Record<string, () => never> = {};
    for (const m of later.service.methods) {
      impl[m.localName] = () => {
        throw unimplemented(later.capability);
      };
    }
    serve(later.service, impl);
  }
  return new Map(
    router.handlers.map((h) => {
      const spec = unary.get(h.requestPath);
      const bridged = withSpecJson(h, limits, spec && { spec, interceptors });
      // A Watch is counted around its shared frames: Connect's part of it ends at the snapshot.
      return [h.requestPath, withRpcMetrics(WATCH_METHODS.has(h.requestPath) ? withSharedFrames(bridged) : bridged)];
    }),
  );
}
