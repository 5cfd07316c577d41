// The `media` command: `serve` runs the embedded service; `token --email` mints a development session;
// `upload` and `videos` use the hosting API; `backup` and `restore` copy the embedded data folder.
import { parseArgs, type ParseArgsConfig } from "node:util";
import { ConfigError, loadConfig, type Config } from "../src/config.js";
import { createLogger } from "../src/log.js";
import type { Roles } from "./server.js";
import { BackupRefused } from "./backup-archive.js";
import { DataFolderInUse } from "./data-lock.js";
import { CliError, upload, videos } from "./upload-cli.js";

// The server (and the launcher and the token minter) load only for the commands that use them:
// usage, errors, upload and videos answer in a fraction of a second instead of the server's load.

/** The commands, their options (node:util parseArgs) and their lines of the usage text. */
const COMMANDS = {
  serve: {
    synopsis: "serve",
    about: [
      "run every role in one process (embedded default; MEDIA_MODE=cluster for Kafka and Cassandra)",
      "embedded, it locks its data folder (MEDIA_DATA_DIR, media.lock): one media process per folder",
    ],
    options: {},
  },
  gateway: { synopsis: "gateway", about: ["cluster mode: the HTTP gateway role only"], options: {} },
  "actor-host": { synopsis: "actor-host", about: ["cluster mode: the actor host role only"], options: {} },
  "encoder-node": { synopsis: "encoder-node", about: ["cluster mode: the encoder node role only (ffprobe and ffmpeg)"], options: {} },
  migrate: {
    synopsis: "migrate",
    about: [
      "cluster mode: apply the Cassandra schema (infra/cql) once and exit, before the roles start",
      "with MEDIA_CASSANDRA_CREATE_SCHEMA=false (a compose file's or a chart's one-shot step)",
    ],
    options: {},
  },
  cluster: {
    synopsis: "cluster [--gateways N] [--actor-hosts M] [--encoder-nodes E] [--port P]",
    about: ["cluster mode on one machine: N gateways (ports P, P+1, ...), M actor hosts, E encoder nodes"],
    options: { gateways: { type: "string" }, "actor-hosts": { type: "string" }, "encoder-nodes": { type: "string" }, port: { type: "string" } },
  },
  token: {
    synopsis: "token --email <addr>",
    about: ["mint a session token from the embedded development issuer (tests and scripts; embedded only)"],
    options: { email: { type: "string" } },
  },
  "login-link": {
    synopsis: "login-link --email <addr>",
    about: ["print a one-time sign-in link (15 minutes, single use) for the user with this email"],
    options: { email: { type: "string" } },
  },
  upload: {
    synopsis: "upload FILE [--title T] [--visibility public|unlisted|private]",
    about: ["upload a video (resumable), wait until it is ready, print its playback and embed URLs"],
    options: { title: { type: "string" }, visibility: { type: "string" } },
    positionals: true,
  },
  videos: {
    synopsis: "videos",
    about: [
      "list the app's hosted videos",
      "(upload and videos call MEDIA_API_URL with MEDIA_API_KEY and MEDIA_ORGANIZATION_ID,",
      "by default the embedded server of this data folder with its bootstrap key)",
    ],
    options: {},
  },
  backup: {
    synopsis: "backup FILE|FOLDER",
    about: [
      "copy the embedded data folder (MEDIA_DATA_DIR) to a tar file, while serve runs or not;",
      "in FOLDER it is named media-backup-<time>.tar; owner-only: it holds the server secret",
    ],
    options: {},
    positionals: true,
  },
  restore: {
    synopsis: "restore FILE [--force]",
    about: [
      "restore a backup into the data folder (MEDIA_DATA_DIR) with serve stopped;",
      "--force replaces a folder that holds files (never one a running server holds)",
    ],
    options: { force: { type: "boolean" } },
    positionals: true,
  },
} satisfies Record<string, { synopsis: string; about: readonly string[]; options: ParseArgsConfig["options"]; positionals?: boolean }>;

type CommandName = keyof typeof COMMANDS;

const isCommand = (name: string): name is CommandName => Object.hasOwn(COMMANDS, name);

function usageLine(name: CommandName): string {
  const { synopsis, about } = COMMANDS[name];
  const head = `  ${synopsis}`;
  const pad = " ".repeat(25);
  const [first = "", ...more] = about;
  return [head.length < 25 ? head.padEnd(25) + first : `${head}\n${pad}${first}`, ...more.map((l) => pad + l)].join("\n");
}

const USAGE = [`usage: media <command> [--help]`, ...Object.keys(COMMANDS).filter(isCommand).map(usageLine)].join("\n");

/** A command line that names no command or option this build has: one line naming it, exit 2. */
class UsageError extends Error {}

/**
 * A command's options, or --help; parsed before anything else runs, so that neither opens the data
 * folder, a store or a port.
 */
function parseCommand(name: CommandName, args: string[]): { values: Record<string, string | boolean | undefined>; positionals: string[]; help: boolean } {
  const spec: { options: ParseArgsConfig["options"]; positionals?: boolean } = COMMANDS[name];
  try {
    const { values, positionals } = parseArgs({
      args,
      options: { ...spec.options, help: { type: "boolean", short: "h" } },
      allowPositionals: spec.positionals ?? false,
      strict: true,
    });
    const flat: Record<string, string | boolean | undefined> = {};
    for (const [key, value] of Object.entries(values)) flat[key] = Array.isArray(value) ? value[0] : value;
    if (positionals.length > 1) throw new Error(`Unexpected argument '${positionals[1]}'`);
    return { values: flat, positionals, help: flat.help === true };
  } catch (e) {
    // parseArgs names the option or argument in its first sentence ("Unknown option '--foo'").
    const first = (e instanceof Error ? e.message : String(e)).split(". ")[0]!;
    throw new UsageError(`media ${name}: ${first.charAt(0).toLowerCase()}${first.slice(1)} (media ${name} --help shows the usage)`);
  }
}

function onSignals(stop: (signal: string) => Promise<void>): void {
  let stopping = false;
  const stopOn = (signal: string) => {
    if (stopping) return;
    stopping = true;
    stop(signal).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => stopOn(signal));
  // Started by npx (npm exec), which does not pass a SIGTERM on to us: when npx goes, we go too,
  // rather than run on as an orphan. Started any other way (node bin/media.js, a supervisor), we
  // stay whatever happens to the parent.
  if (process.env.npm_command === "exec") {
    const parent = process.ppid;
    setInterval(() => {
      if (process.ppid !== parent) stopOn("parent exited");
    }, 1000).unref();
  }
}

/** Serves every role, or the one given (cluster mode only). */
async function serve(config: Config, roles?: Roles): Promise<void> {
  // Before anything starts (the logger too, whose lines then name their trace), so that the first
  // request is traced; the SDK loads only when configured.
  const tracing = config.tracing ? await (await import("../src/tracing.js")).startTracing(config.tracing, roleNames(roles), config.version) : undefined;
  const log = createLogger(config.logLevel);
  if (roles !== undefined && config.mode !== "cluster") {
    throw new ConfigError(
      "MEDIA_MODE",
      "the gateway, actor-host and encoder-node roles run as separate processes only in cluster mode; set MEDIA_MODE=cluster",
    );
  }
  const { startServer } = await import("./server.js");
  const server = await startServer(config, log, roles);
  // One plain line on stdout whatever the log level: launchers and operators wait for it.
  if (roles?.actorHost) process.stdout.write(`media actor host ready (pid ${process.pid})\n`);
  if (roles?.encoderNode) process.stdout.write(`media encoder node ready (pid ${process.pid})\n`);
  // Which Node runs it (the one package.json brings, under npx) and what serves HTTP.
  if (server.port > 0) process.stdout.write(`media is running on http://localhost:${server.port} (Node ${process.version}, ${server.httpServer})\n`);
  // The embedded default needs no identity provider: the owner signs in through a one-time link.
  if (server.port > 0 && roles === undefined && config.mode === "embedded") {
    const link = await loginLink(config, config.bootstrapEmail, `http://localhost:${server.port}`);
    process.stdout.write(`sign in as ${config.bootstrapEmail} (once, within 15 minutes; media login-link makes another): ${link}\n`);
  }
  if (server.bootstrapCreated && server.bootstrap) {
    process.stdout.write(`bootstrap credentials (also in ${config.dataDir}/bootstrap.json):\n${JSON.stringify(server.bootstrap, null, 2)}\n\n`);
  }
  onSignals(async (signal) => {
    log.info({ signal }, "shutting down");
    await server.close();
    // Last: the spans of the drain itself are exported too.
    await tracing?.shutdown().catch((e: unknown) => log.warn({ err: e }, "traces not all exported"));
  });
}

/** The roles a process runs, as its traces' resource names them. */
function roleNames(roles: Roles | undefined): string[] {
  if (roles === undefined) return ["gateway", "actor-host", "encoder-node"];
  return [...(roles.gateway ? ["gateway"] : []), ...(roles.actorHost ? ["actor-host"] : []), ...(roles.encoderNode ? ["encoder-node"] : [])];
}

/** A one-time sign-in link, signed with the server key: no store is opened, so it works beside a running server. */
async function loginLink(config: Config, email: string, fallbackBase: string): Promise<string> {
  const [{ ensureServerSecret }, { SecretBox }, { mintSignInLink }] = await Promise.all([
    import("./server.js"),
    import("../src/secrets.js"),
    import("../src/sessions.js"),
  ]);
  const token = mintSignInLink(new SecretBox(ensureServerSecret(config)), email);
  return `${config.publicUrl ?? fallbackBase}/auth/link/${token}`;
}

function flag(values: Record<string, string | boolean | undefined>, name: string, fallback: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new ConfigError(`--${name}`, "must be a whole number");
  return value;
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined) {
    process.stderr.write(USAGE + "\n");
    return;
  }
  if (command === "--help" || command === "-h") {
    process.stdout.write(USAGE + "\n");
    return;
  }
  if (!isCommand(command))
    throw new UsageError(`media: unknown ${command.startsWith("-") ? "option" : "command"} '${command}' (media --help lists the commands)`);
  const { values, positionals, help } = parseCommand(command, rest);
  if (help) {
    const { synopsis, about } = COMMANDS[command];
    process.stdout.write(`usage: media ${synopsis}\n${about.map((l) => `  ${l}\n`).join("")}`);
    return;
  }
  const config = loadConfig();
  switch (command) {
    case "serve":
      return serve(config);
    case "gateway":
      return serve(config, { gateway: true, actorHost: false, encoderNode: false });
    case "actor-host":
      return serve(config, { gateway: false, actorHost: true, encoderNode: false });
    case "encoder-node":
      return serve(config, { gateway: false, actorHost: false, encoderNode: true });
    case "migrate": {
      const { migrate } = await import("./server.js");
      await migrate(config);
      process.stdout.write(`media migrate: keyspace ${config.cluster.cassandraKeyspace} has every migration of infra/cql\n`);
      return;
    }
    case "cluster": {
      const { launchCluster } = await import("./launcher.js");
      const cluster = await launchCluster({
        gateways: flag(values, "gateways", 2),
        actorHosts: flag(values, "actor-hosts", 2),
        encoderNodes: flag(values, "encoder-nodes", 1),
        basePort: flag(values, "port", config.httpPort),
        env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
        inheritOutput: true,
      });
      process.stdout.write(
        `cluster up: gateways on ${cluster.gateways.map((g) => g.port).join(", ")}; ${cluster.actorHosts.length} actor hosts; ${cluster.encoderNodes.length} encoder nodes\n`,
      );
      onSignals(() => cluster.stop());
      return;
    }
    case "token": {
      const email = values.email;
      if (typeof email !== "string" || !/^[^@\s]+@[^@\s]+$/.test(email)) {
        process.stderr.write("media token: --email <address> is required\n");
        process.exit(2);
      }
      const { mintDevToken } = await import("../src/identity.js");
      process.stdout.write((await mintDevToken(config, email)) + "\n");
      return;
    }
    case "login-link": {
      const email = values.email;
      if (typeof email !== "string" || !/^[^@\s]+@[^@\s]+$/.test(email)) {
        process.stderr.write("media login-link: --email <address> is required\n");
        process.exit(2);
      }
      process.stdout.write((await loginLink(config, email, `http://localhost:${config.httpPort}`)) + "\n");
      return;
    }
    case "upload": {
      const text = (v: string | boolean | undefined) => (typeof v === "string" ? v : undefined);
      process.exitCode = await upload(config, { file: positionals[0], title: text(values.title), visibility: text(values.visibility) });
      return;
    }
    case "videos":
      process.exitCode = await videos(config);
      return;
    case "backup":
    case "restore": {
      const file = positionals[0];
      if (file === undefined) throw new UsageError(`media ${command}: FILE is required (media ${command} --help shows the usage)`);
      const copies = await import("./backup.js");
      try {
        if (command === "backup") {
          const result = await copies.backup(config, file);
          for (const note of copies.backupNotes(config)) process.stderr.write(`media backup: note: ${note}\n`);
          process.stdout.write(copies.describeBackup(result) + "\n");
        } else {
          const manifest = await copies.restore(config, file, { force: values.force === true });
          process.stdout.write(copies.describeRestore(config, file, manifest) + "\n");
        }
      } catch (e) {
        // A refusal is one line under the command's name, exit 1.
        if (e instanceof BackupRefused || e instanceof DataFolderInUse) throw new CliError(`media ${command}: ${e.message}`);
        throw e;
      }
      return;
    }
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  // A bad setting stops the process with one line naming it.
  if (e instanceof ConfigError) process.stderr.write(`media: bad configuration: ${e.message}\n`);
  else if (e instanceof UsageError || e instanceof CliError) process.stderr.write(`${e.message.startsWith("media") ? "" : "media: "}${e.message}\n`);
  else process.stderr.write(`media: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(e instanceof ConfigError || e instanceof UsageError || (e instanceof CliError && e.message.startsWith("media upload:")) ? 2 : 1);
});
