// The composition root of `media serve` in its embedded default: one process runs every role.
import { existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { ApiKeyBehavior, type ApiKeyRecord } from "../actors/api-key.js";
import { ActorHost } from "../actors/host.js";
import { createHandlers } from "../gateway/router.js";
import { listenNodeHttp } from "../gateway/node-http.js";
import { listenUws, type UwsServer } from "../gateway/uws.js";
import type { Config } from "./config.js";
import { Directory } from "./directory.js";
import { newId, Prefix, randomToken } from "./ids.js";
import { SessionVerifier } from "./identity.js";
import { createLogger, type Logger } from "./log.js";
import { Paginator } from "./pagination.js";
import { SecretBox } from "./secrets.js";
import { FileStore } from "./store/file-store.js";
import type { Store } from "./store/port.js";

export interface Bootstrap {
  readonly organization_id: string;
  readonly app_id: string;
  readonly api_key: string;
  readonly user_email: string;
}

export interface RunningServer {
  readonly port: number;
  readonly store: Store;
  readonly bootstrap: Bootstrap | undefined;
  /** Whether this start created the bootstrap credentials (they are printed only then). */
  readonly bootstrapCreated: boolean;
  close(): Promise<void>;
}

/** The server secret: configuration, or generated once into the data folder (mode 0600). */
function serverSecret(config: Config): string {
  if (config.serverSecret) return config.serverSecret;
  const file = path.join(config.dataDir, "server-secret");
  if (!existsSync(file)) writeFileSync(file, randomToken(48), { mode: 0o600 });
  return readFileSync(file, "utf8").trim();
}

const BOOTSTRAP_MARK = { table: "meta", id: "bootstrap" } as const;

async function bootstrapIfEmpty(config: Config, store: Store, directory: Directory, actors: ActorHost, box: SecretBox, log: Logger): Promise<{ bootstrap: Bootstrap | undefined; created: boolean }> {
  const file = path.join(config.dataDir, "bootstrap.json");
  if (await store.get(BOOTSTRAP_MARK.table, BOOTSTRAP_MARK.id)) {
    return { bootstrap: existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Bootstrap) : undefined, created: false };
  }
  const email = config.bootstrapEmail;
  const user = await directory.provision({ email, emailVerified: true, firstName: "Owner", lastName: "" }, true);
  const org = await directory.createOrganization(user, { name: "Default organization", slug: `default-${randomToken(6).toLowerCase()}` });
  const app = await directory.createApp(org.id, { name: "Default app", hosting: true });
  const secret = `ak_${randomToken(40)}`;
  const key: ApiKeyRecord = {
    id: newId(Prefix.apiKey),
    appId: app.id,
    organizationId: org.id,
    name: "bootstrap",
    keyPrefix: secret.slice(0, 11),
    keyHint: secret.slice(-4),
    secretHash: box.hashSecret(secret),
    scopes: [],
    createdAt: Date.now(),
  };
  const reply = await actors.ask(ApiKeyBehavior, key.id, { type: "create", key });
  if (!reply.ok) throw new Error(`bootstrap key: ${reply.rejection.message}`);
  const result: Bootstrap = { organization_id: org.id, app_id: app.id, api_key: secret, user_email: email };
  writeFileSync(file, JSON.stringify(result, null, 2) + "\n", { mode: 0o600 });
  await store.commit({ writes: [{ table: BOOTSTRAP_MARK.table, id: BOOTSTRAP_MARK.id, value: { at: Date.now(), organization_id: org.id } }] });
  log.info({ organization_id: org.id, app_id: app.id, user_email: email, file }, "bootstrap: created the default organization, app, owner and API key");
  return { bootstrap: result, created: true };
}

export async function startServer(config: Config, log: Logger = createLogger(config.logLevel)): Promise<RunningServer> {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const store = new FileStore(config.dataDir);
  await store.open();
  const box = new SecretBox(serverSecret(config));
  const directory = new Directory(store);
  const actors = new ActorHost(store, log);
  const paginator = new Paginator(store, box);
  const sessions = await SessionVerifier.create(config);
  const { bootstrap, created: bootstrapCreated } = await bootstrapIfEmpty(config, store, directory, actors, box, log);

  // last_used_at is kept to the minute: one journal write per key per minute at most.
  const lastTouched = new Map<string, number>();
  const onKeyUsed = (key: ApiKeyRecord) => {
    const now = Date.now();
    if (now - (lastTouched.get(key.id) ?? key.lastUsedAt ?? 0) < 60_000) return;
    lastTouched.set(key.id, now);
    actors.ask(ApiKeyBehavior, key.id, { type: "touch", at: now }).catch((e: unknown) => log.warn({ err: e, key_id: key.id }, "last_used_at not recorded"));
  };

  const shutdown = new AbortController();
  const handlers = createHandlers({ config, store, directory, actors, paginator, box, log, sessions, onKeyUsed, shutdownSignal: shutdown.signal });
  const listen = config.httpServer === "node" ? listenNodeHttp : listenUws;
  const http: UwsServer = await listen(handlers, { host: config.httpHost, port: config.httpPort, maxRequestBytes: config.maxRequestBytes, log, shutdown });
  log.info({ port: http.port, data_dir: config.dataDir, mode: config.mode, http_server: config.httpServer }, "media API listening");
  return {
    port: http.port,
    store,
    bootstrap,
    bootstrapCreated,
    async close() {
      await http.close();
      actors.stop();
      await store.close();
    },
  };
}
