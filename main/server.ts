// The composition root: the embedded default runs every role in one process on the file store and
// the in-process bus; in cluster mode each process runs the roles it is given on Kafka and Cassandra.
import { existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { ApiKeyBehavior } from "../actors/api-key/api-key.js";
import { ApiKey, secretFields, KEY_SECRET_LENGTH, type ApiKeyRecord } from "../actors/api-key/messages.js";
import { directKey, DirectRoutes, serveDirect, type DirectServer } from "../actors/direct.js";
import { ownedKeys, publishUpdate, serveCommands, CommandClient, tell, tellRewrite, topicsFor, UpdatesHub, type EntityCommands } from "../actors/commands.js";
import { VideoBehavior, videoIntentHandlers } from "../actors/video/video.js";
import { Video } from "../actors/video/messages.js";
import { SourceRetention } from "../actors/video/retention.js";
import { entity } from "../actors/entity.js";
import { ActorHost } from "../actors/host.js";
import { JobBehavior, jobIntentHandlers } from "../actors/job/job.js";
import { ACTIVE_JOBS, ACTIVE_PARTITION, Job, JOB_ERROR_CODES, JOBS, TERMINAL, type JobRecord } from "../actors/job/messages.js";
import { Relay, type Intent, type Outbox } from "../actors/outbox.js";
import { QueueBehavior, queueIntentHandlers, type QueueIntent, type QueueState } from "../actors/scheduler/scheduler.js";
import { Queue, QUEUE_ID } from "../actors/scheduler/messages.js";
import { WebhookEndpointBehavior, type EndpointIntent } from "../actors/webhook-endpoint/webhook-endpoint.js";
import { WebhookEndpoint, type EndpointState } from "../actors/webhook-endpoint/messages.js";
import { Deliverer } from "../delivery/deliverer.js";
import { LegacyPoster } from "../delivery/legacy.js";
import { startEncoderNode, type EncoderNode } from "../encoder-node/node.js";
import { NetGuard } from "../src/net-guard.js";
import { createHandlers } from "../gateway/router.js";
import { PublicAddress, type Hosting } from "../gateway/hosting.js";
import { hostingRoutes, PlaybackRecords } from "../gateway/hosting-edge.js";
import { loadUws } from "../gateway/uws-loader.js";
import { startHashWorker } from "../src/md5-offload.js";
import { Code, createContextValues } from "@connectrpc/connect";
import { EdgeRouter } from "../gateway/edge.js";
import { CLIENT_ADDRESS } from "../gateway/front.js";
import { listenNodeHttp } from "../gateway/node-http.js";
import type { HostOptions, HostServer } from "../gateway/uws.js";
import { ConfigError, type Config } from "../src/config.js";
import { VersionConflict } from "../src/errors.js";
import { Directory, T } from "../src/directory.js";
import { KeyCallers } from "../gateway/key-callers.js";
import { newHosting } from "../src/hosting.js";
import { openManagedStorage } from "../src/managed-storage.js";
import { newId, Prefix, randomToken } from "../src/ids.js";
import { SessionVerifier } from "../src/identity.js";
import { Sessions } from "../src/sessions.js";
import { authRoutes } from "../gateway/auth-edge.js";
import { consoleRoutes } from "../gateway/console-edge.js";
import { createLogger, type Logger } from "../src/log.js";
import { tracingOn } from "../src/tracing.js";
import { tracedBus } from "../src/bus/traced-bus.js";
import { Paginator } from "../src/pagination.js";
import { SecretBox } from "../src/secrets.js";
import { FileStore } from "../src/store/file-store.js";
import type { Store } from "../src/store/port.js";
import { CassandraStore, cassandraConnection } from "../src/store/cassandra-store.js";
import { KafkaBus } from "../src/bus/kafka-bus.js";
import { kafkaConnection } from "../src/bus/kafka-security.js";
import { MemoryBus } from "../src/bus/memory-bus.js";
import { knowJobErrorCodes, registerStoreGauges, timedBus, timedStore } from "../src/metrics.js";
import { metricsRoute } from "../gateway/metrics-edge.js";
import { openApiRoute } from "../gateway/openapi-edge.js";
import { probeRoutes } from "../gateway/probe-edge.js";
import { encoderReadiness } from "../encoder-node/prerequisites.js";
import { Readiness, type ReadinessCheck } from "../src/readiness.js";
import { listenMetrics } from "./metrics-server.js";
import { lockDataFolder } from "./data-lock.js";
import { refuseInterruptedRestore } from "./backup.js";
import type { Bus, Consumer } from "../src/bus/port.js";

export interface Bootstrap {
  readonly organization_id: string;
  readonly app_id: string;
  readonly api_key: string;
  readonly user_email: string;
}

export interface RunningServer {
  /** HTTP port of the gateway role; 0 when this process runs no gateway. */
  readonly port: number;
  readonly store: Store;
  readonly bootstrap: Bootstrap | undefined;
  /** Whether this start created the bootstrap credentials (they are printed only then). */
  readonly bootstrapCreated: boolean;
  /** What serves HTTP: the uWebSockets build's label, or node:http; empty without a gateway. */
  readonly httpServer: string;
  close(): Promise<void>;
}

/** The server secret: configuration, or generated once into the data folder (mode 0600). */
export function ensureServerSecret(config: Config): string {
  if (config.serverSecret) return config.serverSecret;
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(config.dataDir, "server-secret");
  if (!existsSync(file)) writeFileSync(file, randomToken(48), { mode: 0o600, flag: "wx" });
  return readFileSync(file, "utf8").trim();
}

/** The pseudo-issuer of the bootstrap owner's first identity: no token names it. */
const BOOTSTRAP_ISSUER = "media-bootstrap";

const BOOTSTRAP_MARK = { table: "meta", id: "bootstrap" } as const;
/** Asks for the bootstrap key before giving up: each waits the command timeout, minutes in all. */
const BOOTSTRAP_ATTEMPTS = 12;

/**
 * First start on an empty store: the default organization, app, owner and key. Several gateways
 * of a cluster may start at once, so the start claims the bootstrap with a conditional write first.
 */
async function bootstrapIfEmpty(
  config: Config,
  store: Store,
  directory: Directory,
  actors: EntityCommands,
  box: SecretBox,
  log: Logger,
): Promise<{ bootstrap: Bootstrap | undefined; created: boolean }> {
  const file = path.join(config.dataDir, "bootstrap.json");
  const existing = () => ({ bootstrap: existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Bootstrap) : undefined, created: false });
  if (await store.get(BOOTSTRAP_MARK.table, BOOTSTRAP_MARK.id)) return existing();
  try {
    await store.commit({ writes: [{ table: BOOTSTRAP_MARK.table, id: BOOTSTRAP_MARK.id, value: { at: Date.now() }, expectedVersion: 0 }] });
  } catch (e) {
    if (e instanceof VersionConflict) return existing();
    throw e;
  }
  const email = config.bootstrapEmail;
  // The owner is known by email until a sign-in links an identity to it (a one-time link, or a provider's verified email).
  const user = await directory.provision({ issuer: BOOTSTRAP_ISSUER, subject: email, email, emailVerified: true, firstName: "Owner", lastName: "" }, true);
  const org = await directory.createOrganization(user, { name: "Default organization", slug: `default-${randomToken(6).toLowerCase()}` });
  const app = await directory.createApp(org.id, { name: "Default app", hosting: newHosting(box) });
  const secret = `ak_${randomToken(KEY_SECRET_LENGTH)}`;
  const id = newId(Prefix.apiKey);
  const request = { appId: app.id, organizationId: org.id, name: "bootstrap", scopes: [], ...secretFields(secret, box.hashSecret(secret)) };
  // In a cluster the actor hosts may still be joining their group when the first gateway starts
  // (all roles of a compose file or a chart start together): the key's create is asked again until
  // one answers. The same id and secret make a repeat a no-op, so there is never a second key; and
  // giving up here would leave the bootstrap claimed above without its credentials file.
  const create = { type: "create" as const, id, at: Date.now(), request };
  let reply = await actors.ask(ApiKey, id, create);
  for (let attempt = 1; !reply.ok && reply.rejection.code === Code.Unavailable && attempt < BOOTSTRAP_ATTEMPTS; attempt++) {
    log.info({ attempt, reason: reply.rejection.message }, "bootstrap: the API key's create was not answered yet; asking again");
    reply = await actors.ask(ApiKey, id, create);
  }
  if (!reply.ok) throw new Error(`bootstrap key: ${reply.rejection.message}`);
  const result: Bootstrap = { organization_id: org.id, app_id: app.id, api_key: secret, user_email: email };
  writeFileSync(file, JSON.stringify(result, null, 2) + "\n", { mode: 0o600 });
  log.info({ organization_id: org.id, app_id: app.id, user_email: email, file }, "bootstrap: created the default organization, app, owner and API key");
  return { bootstrap: result, created: true };
}

/** The actors this build has; commands for any other type are refused. */
const BEHAVIORS = [ApiKeyBehavior, JobBehavior, VideoBehavior, WebhookEndpointBehavior, QueueBehavior] as const;

/**
 * The embedded bus lives in this process: a restart loses the tasks it held. So an embedded host
 * hands the task of each of its unfinished jobs out again once, at start (a task that runs twice
 * is a second attempt, and the job counts only the latest). Kafka keeps tasks; a cluster does not.
 */
async function redispatchAfterRestart(store: Store, host: ActorHost, owned: readonly number[], partitions: number, log: Logger): Promise<void> {
  const mine = ownedKeys(owned, partitions);
  let before: string | undefined;
  for (;;) {
    const page = await store.scan<{ jobId: string }>(ACTIVE_JOBS, ACTIVE_PARTITION, { limit: 500, ...(before !== undefined ? { before } : {}) });
    for (const row of page.items) {
      const id = row.value.jobId;
      if (!mine(`${Job.type}:${id}`)) continue;
      const job = (await store.get<JobRecord>(JOBS, id))?.value;
      if (!job || job.status === "awaiting_confirmation") continue;
      log.info({ job_id: id, status: job.status }, "handing the task of an unfinished job out again after a restart");
      await host.ask(Job, id, { type: "resume" });
    }
    if (!page.more) return;
    before = page.items.at(-1)!.sort;
  }
}

/**
 * Fault injection for the outbox's crash test (MEDIA_FAILPOINT, a comma list): kill -9 this process
 * right after a job entry is durable and before any of its intents runs. "job-encode-task": the
 * entry hands the job to the encoders; "job-settled": the entry ends the job.
 */
function withFailpoints(outbox: Outbox, failpoints: readonly string[]): Outbox {
  if (failpoints.length === 0) return outbox;
  const hit = (type: string, intents: readonly Intent[], state: unknown): boolean => {
    if (type !== Job.type) return false;
    const job = (state as { job?: JobRecord }).job;
    if (failpoints.includes("job-encode-task") && intents.some((i) => i.kind === "task" && (i as { task?: string }).task === "encode")) return true;
    return failpoints.includes("job-settled") && job !== undefined && TERMINAL.has(job.status);
  };
  return {
    beforeAppend: (type, id, seq) => outbox.beforeAppend(type, id, seq),
    appended: (type, id, seq, intents, state, trace) => {
      if (hit(type, intents, state)) process.kill(process.pid, "SIGKILL");
      outbox.appended(type, id, seq, intents, state, trace);
    },
    now: (type, id, intents, state, trace) => outbox.now(type, id, intents, state, trace),
    uncertain: (type, id) => outbox.uncertain(type, id),
    fenced: (type, id) => outbox.fenced(type, id),
  };
}

export interface Roles {
  readonly gateway: boolean;
  readonly actorHost: boolean;
  readonly encoderNode: boolean;
}

export const ALL_ROLES: Roles = { gateway: true, actorHost: true, encoderNode: true };

/** The adapters as every role uses them: timed, with the encode queue gauges read from the store. */
function measured(store: Store, bus: Bus): { store: Store; bus: Bus } {
  const timed = timedStore(store);
  registerStoreGauges(timed);
  // Traced only with tracing on: off, the bus is not wrapped at all.
  return { store: timed, bus: tracingOn() ? tracedBus(timedBus(bus)) : timedBus(bus) };
}

/**
 * `media migrate`: applies the Cassandra schema (the migrations of infra/cql it lacks). The
 * roles of a deployment then start with schema creation off, together: several clients creating
 * the same tables at once leave Cassandra with tables of two ids ("Unknown CF").
 */
export async function migrate(config: Config): Promise<void> {
  if (config.mode !== "cluster") throw new ConfigError("MEDIA_MODE", "media migrate applies the Cassandra schema of cluster mode; set MEDIA_MODE=cluster");
  const c = config.cluster;
  const store = new CassandraStore({ ...cassandraConnection(c), keyspace: c.cassandraKeyspace, replication: c.cassandraReplication, createSchema: true });
  await store.open();
  await store.close();
}

async function openInfrastructure(config: Config, log: Logger): Promise<{ store: Store; bus: Bus }> {
  if (config.mode === "embedded") {
    const store = new FileStore(config.dataDir);
    await store.open();
    const bus = new MemoryBus();
    await bus.start();
    return measured(store, bus);
  }
  const c = config.cluster;
  const store = new CassandraStore({
    ...cassandraConnection(c),
    keyspace: c.cassandraKeyspace,
    replication: c.cassandraReplication,
    createSchema: c.cassandraCreateSchema,
  });
  await store.open();
  const bus = new KafkaBus({ ...kafkaConnection(c), clientId: `media-${process.pid}`, lingerMs: c.kafkaLingerMs, log });
  try {
    await bus.start();
  } catch (e) {
    await store.close();
    throw e;
  }
  return measured(store, bus);
}

export async function startServer(config: Config, log: Logger = createLogger(config.logLevel), roles: Roles = ALL_ROLES): Promise<RunningServer> {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  // One process at a time owns an embedded data folder (its store log above all), so the lock comes
  // before anything in it is opened. A cluster's processes share theirs by design: their store is Cassandra.
  const lock = config.mode === "embedded" ? lockDataFolder(config.dataDir) : undefined;
  try {
    // A restore that stopped while swapping the folder's entries left it half old, half new.
    if (lock) refuseInterruptedRestore(config.dataDir);
    const server = await startRoles(config, log, roles);
    return {
      ...server,
      async close() {
        await server.close();
        lock?.release();
      },
    };
  } catch (e) {
    lock?.release();
    throw e;
  }
}

async function startRoles(config: Config, log: Logger, roles: Roles): Promise<RunningServer> {
  const { store, bus } = await openInfrastructure(config, log);
  // Not ready (503 "starting") until every role has started; not ready again from the first step of close.
  const readiness = new Readiness({ log });
  const metrics = config.metricsPort !== undefined ? await listenMetrics(config.httpHost, config.metricsPort, log, readiness) : undefined;
  const topics = topicsFor(config.mode === "embedded" ? "media" : config.cluster.topicPrefix);
  await bus.ensureTopics([
    { topic: topics.commands, partitions: config.mode === "embedded" ? 4 : config.cluster.commandPartitions },
    // Each asker reads one partition of replies (its id's): more partitions, fewer others' replies read.
    { topic: topics.replies, partitions: config.mode === "embedded" ? 4 : 16 },
    { topic: topics.updates, partitions: 4 },
    { topic: topics.signals, partitions: 4 },
  ]);
  const secret = ensureServerSecret(config);
  const box = new SecretBox(secret);
  // One guard per process, so its checks and its connection pools are shared by every role.
  const guard = new NetGuard(config);
  const managed = openManagedStorage(config, guard);

  let actorHost: ActorHost | undefined;
  let commandConsumer: Consumer | undefined;
  let directServer: DirectServer | undefined;
  let stopEffects: () => void = () => undefined;
  if (roles.actorHost) {
    const partitions = config.mode === "embedded" ? 4 : config.cluster.commandPartitions;
    // Effects leave the actors as intents journaled with their events; the relay carries them out.
    const relay = new Relay(store, log, { partitions });
    knowJobErrorCodes(Object.keys(JOB_ERROR_CODES));
    const failpoints = (process.env.MEDIA_FAILPOINT ?? "").split(",").filter((f) => f !== "");
    const host = new ActorHost(store, log, 10_000, withFailpoints(relay, failpoints), { scope: topics.commands, partitions }).register(...BEHAVIORS);
    actorHost = host;
    // A refused or failed fenced commit may have landed its read models without its events: the
    // entity's owner writes them again (src/store/port.ts, Fence).
    if (store.takeEpoch) host.rewritesVia((type, id) => tellRewrite(bus, topics, type, id));
    relay.attach((type, id) => host.wake(entity(type), id));
    const deliverer = new Deliverer(store, host, box, guard, log, config.webhooks);
    const legacy = new LegacyPoster(store, guard, box, log, { partitions, retryScale: config.webhooks.retryScale });
    relay.register(
      Job.type,
      jobIntentHandlers({
        bus,
        topics,
        store,
        legacy: (job, seq, posts) => legacy.record(job, seq, posts),
        retentionDayMs: config.sourceRetention.dayMs,
      }),
    );
    relay.register(Video.type, videoIntentHandlers({ bus, topics, store, managed }));
    relay.register<QueueIntent, QueueState>(
      Queue.type,
      queueIntentHandlers(
        (signal) => bus.publish(topics.signals, [{ key: "work", value: new TextEncoder().encode(JSON.stringify(signal)) }]),
        (jobId, task, lostOn, at, part) => tell(bus, topics, Job, jobId, { type: "task_abandoned", task, lostOn, at, ...(part !== undefined ? { part } : {}) }),
      ),
    );
    relay.register<EndpointIntent, EndpointState>(WebhookEndpoint.type, { deliveries: async (_intent, { state }) => deliverer.schedule(state) });
    const retention = new SourceRetention(store, host, log, { partitions, sweepMs: config.sourceRetention.sweepMs });
    stopEffects = () => {
      retention.stop();
      relay.stop();
      deliverer.stop();
      legacy.stop();
    };
    // Gateways' asks straight to this host (actors/direct.ts), for the partitions it is assigned.
    const direct = config.mode === "cluster" ? config.cluster.directCommands : undefined;
    if (direct) directServer = await serveDirect(host, { ...direct, key: directKey(secret), partitions }, log);
    let started = false;
    commandConsumer = await serveCommands(
      bus,
      topics,
      host,
      log,
      (assigned) => {
        relay.assign(assigned);
        retention.assign(assigned);
        // Another host may have owned these entities: its timers are its own; arm ours from the store.
        deliverer.clear();
        deliverer.resume(assigned, partitions).catch((e: unknown) => log.warn({ err: e }, "webhook deliveries not resumed"));
        legacy.clear();
        legacy.resume(assigned).catch((e: unknown) => log.warn({ err: e }, "legacy webhooks not resumed"));
        if (config.mode === "embedded" && !started && assigned.length > 0) {
          started = true;
          redispatchAfterRestart(store, host, assigned, partitions, log).catch((e: unknown) => log.warn({ err: e }, "unfinished jobs not handed out again"));
        }
      },
      directServer,
    );
    log.info({ mode: config.mode }, "actor host ready");
  }
  const stopActors = async () => {
    stopEffects();
    await directServer?.close();
    await commandConsumer?.stop();
    actorHost?.stop();
  };

  // Gateways and encoder nodes send commands, gateways follow updates; a lone actor host does neither.
  let commands: CommandClient | undefined;
  let updates: UpdatesHub | undefined;
  if (roles.gateway || roles.encoderNode) {
    // Asks go straight to the owning host where the asker knows it (actors/direct.ts); an encoder
    // node's progress tells stay on Kafka, which a job takes in any order (the highest counts).
    const direct = config.mode === "cluster" ? config.cluster.directCommands : undefined;
    commands = new CommandClient(bus, topics, undefined, direct && new DirectRoutes(directKey(secret), config.cluster.commandPartitions, log));
    await commands.start();
  }
  if (roles.gateway) {
    updates = new UpdatesHub(bus, topics, log);
    await updates.start();
  }
  let encoderNode: EncoderNode | undefined;
  if (roles.encoderNode) {
    const client = commands!;
    encoderNode = await startEncoderNode({
      bus,
      topics,
      report: (jobId, command) => client.ask(Job, jobId, command),
      notify: (jobId, command) => client.tell(Job, jobId, command),
      queue: (command) => client.ask(Queue, QUEUE_ID, command),
      box,
      guard,
      config,
      log,
      managed,
    });
  }
  const stopClients = async () => {
    await encoderNode?.stop();
    await updates?.stop();
    await commands?.stop();
  };
  const checks = readinessChecks(config, roles, store, bus, encoderNode);

  if (!roles.gateway) {
    readiness.serve(checks);
    return {
      port: 0,
      store,
      bootstrap: undefined,
      bootstrapCreated: false,
      httpServer: "",
      async close() {
        readiness.drain();
        await stopClients();
        await stopActors();
        await bus.close();
        await store.close();
        await metrics?.close();
      },
    };
  }

  // A key's bearer is resolved once and kept a few seconds (gateway/key-callers.ts); a change to an
  // app or an organization made here forgets what it fed, here and, announced, at every gateway.
  // The announcement carries no state: a follower reads the entity again. The change is made
  // whether or not the bus takes it (Kafka down or slow): the call is not held for it, and the
  // others' time to live bounds a lost one.
  const announce = async (type: string, id: string) => {
    publishUpdate(bus, topics, { type, id, version: Date.now(), state: {} }).catch((e: unknown) =>
      log.warn({ err: e, entity: `${type}:${id}` }, "change not announced; other gateways keep what they read for up to 5 s"),
    );
  };
  const directory = new Directory(store, async (table, id) => {
    if (table === T.apps || table === T.organizations) await keyCallers.changed(table, id);
  });
  const keyCallers: KeyCallers = new KeyCallers({ store, directory }, (type, id, listener) => updates!.subscribe(type, id, listener), announce);
  const paginator = new Paginator(store, box);
  // The provider the operator named is reachable even on a private address: it alone, not its network.
  const identityGuard = config.identity.oidc
    ? new NetGuard({
        ...config,
        net: { ...config.net, allow: [...config.net.allow, new URL(config.identity.oidc.issuer).hostname.replace(/^\[(.*)\]$/, "$1")] },
      })
    : guard;
  const sessions = await SessionVerifier.create(config, identityGuard);
  const signIns = new Sessions(store, box, config.identity.sessionIdleSeconds * 1000, config.identity.sessionAbsoluteSeconds * 1000);
  const { bootstrap, created: bootstrapCreated } = await bootstrapIfEmpty(config, store, directory, commands!, box, log);

  // last_used_at is kept to the minute: one journal write per key per minute at most.
  const lastTouched = new Map<string, number>();
  const onKeyUsed = (key: ApiKeyRecord) => {
    const now = Date.now();
    if (now - (lastTouched.get(key.id) ?? key.lastUsedAt ?? 0) < 60_000) return;
    lastTouched.set(key.id, now);
    commands!.ask(ApiKey, key.id, { type: "touch", at: now }).catch((e: unknown) => log.warn({ err: e, key_id: key.id }, "last_used_at not recorded"));
  };

  // Upload URLs, the edge and the player page hang off the public URL, known once the port is.
  const address = new PublicAddress(config.publicUrl);
  const playback = new PlaybackRecords({ store, directory, box }, (type, id, listener) => updates!.subscribe(type, id, listener));
  const hosting = { publicUrl: () => address.get(), managed, playback } satisfies Hosting;
  const handlers = createHandlers({
    config,
    store,
    bus,
    directory,
    actors: commands!,
    paginator,
    box,
    guard,
    log,
    sessions,
    signIns,
    onKeyUsed,
    keyCallers,
    updates: updates!,
    hosting,
    ...(encoderNode ? { encoder: () => encoderNode.health() } : {}),
  });
  const hostOptions: HostOptions = {
    host: config.httpHost,
    port: config.httpPort,
    cors: { origins: config.corsOrigins },
    log,
    contextValues: (address) => createContextValues().set(CLIENT_ADDRESS, address),
  };
  // Upload ETags are hashed on a worker thread: started now rather than by the first upload.
  startHashWorker();
  const auth = authRoutes({
    directory,
    sessions: signIns,
    oidc: sessions.oidc,
    staffEmails: config.staffEmails,
    publicUrl: () => address.get(),
    sessionAbsoluteSeconds: config.identity.sessionAbsoluteSeconds,
    log,
    limits: { perAddress: config.rateLimits.signIn, perAccount: config.rateLimits.signInAccount },
  });
  const edge = new EdgeRouter([
    ...hostingRoutes({ store, directory, box, hosting }),
    ...auth,
    ...consoleRoutes(),
    metricsRoute(),
    openApiRoute(),
    ...probeRoutes(readiness),
  ]);
  const { server: http, host, label } = await listenHost(config.httpServer, { rpc: handlers, edge }, hostOptions, log);
  address.listening(http.port);
  readiness.serve(checks);
  log.info({ port: http.port, data_dir: config.dataDir, mode: config.mode, http_server: host, node: process.version }, "media API listening");
  return {
    port: http.port,
    httpServer: label,
    store,
    bootstrap,
    bootstrapCreated,
    async close() {
      // Draining: /readyz answers 503 at once, and everything else is still served for the drain
      // delay, so that a load balancer sees the 503 and sends nothing more before the listener
      // closes; then the listener closes and the requests in flight finish.
      readiness.drain();
      if (config.drainDelayMs > 0) {
        log.info({ delay_ms: config.drainDelayMs }, "draining: not ready; serving on until the delay is over");
        await new Promise((resolve) => setTimeout(resolve, config.drainDelayMs));
      }
      await http.close();
      if (identityGuard !== guard) identityGuard.destroy();
      await stopClients();
      await stopActors();
      await bus.close();
      await store.close();
      await metrics?.close();
    },
  };
}

/**
 * What this process needs to do its work (/readyz). The store: the gateway and the actor host read
 * and write it; an encoder node does not (its work goes through the bus to the queue). The bus:
 * every role. The encoder's tools: an encoder node of a cluster only; the embedded process answers
 * the whole API, which a missing ffmpeg must not take out of its load balancer (HealthService/Check
 * names it).
 */
function readinessChecks(config: Config, roles: Roles, store: Store, bus: Bus, encoderNode: EncoderNode | undefined): ReadinessCheck[] {
  const checks: ReadinessCheck[] = [];
  if (config.mode === "embedded" || roles.gateway || roles.actorHost) checks.push({ name: "store", check: () => store.health() });
  checks.push({ name: "bus", check: () => bus.health() });
  if (config.mode === "cluster" && encoderNode) checks.push({ name: "encoder", check: () => encoderReadiness(encoderNode) });
  return checks;
}

/**
 * uWS where a build of it loads on this Node and this C library (gateway/uws-loader.ts: the newer
 * build first), node:http where none does or where the operator chose it; one log line says which
 * host serves, and why the builds before it did not.
 */
async function listenHost(
  choice: "uws" | "node",
  handlers: Parameters<typeof listenNodeHttp>[0],
  options: HostOptions,
  log: Logger,
): Promise<{ server: HostServer; host: string; label: string }> {
  if (choice === "uws") {
    const found = loadUws();
    if (found.uws) {
      const { listenUws } = await import("../gateway/uws.js");
      const server = await listenUws(handlers, options, found.uws);
      log.info({ node: process.version, ...(found.refused.length > 0 ? { not_loaded: found.refused } : {}) }, `serving with ${found.label}`);
      return { server, host: "uws", label: found.label };
    }
    log.warn({ node: process.version, not_loaded: found.refused }, "no uWebSockets.js build loads here; serving with node:http");
  } else {
    log.info({ node: process.version }, "serving with node:http (MEDIA_HTTP_SERVER=node)");
  }
  return { server: await listenNodeHttp(handlers, options), host: "node", label: "node:http" };
}
