// The `media` command: `serve` runs the embedded service; `token --email` mints a development session;
// `upload` and `videos` use the hosting API.
import { ConfigError, loadConfig, type Config } from "../src/config.js";
import { mintDevToken } from "../src/identity.js";
import { createLogger } from "../src/log.js";
import { launchCluster } from "./launcher.js";
import { ALL_ROLES, startServer, type Roles } from "./server.js";
import { upload, videos } from "./upload-cli.js";

const USAGE = `usage: media <command>
  serve                  run every role in one process (embedded default; MEDIA_MODE=cluster for Kafka and Cassandra)
  gateway                cluster mode: the HTTP gateway role only
  actor-host             cluster mode: the actor host role only
  encoder-node           cluster mode: the encoder node role only (ffprobe and ffmpeg)
  cluster [--gateways N] [--actor-hosts M] [--encoder-nodes E] [--port P]
                         cluster mode on one machine: N gateways (ports P, P+1, ...), M actor hosts, E encoder nodes
  token --email <addr>   mint a session token from the embedded development issuer
  upload FILE [--title T] [--visibility public|unlisted|private]
                         upload a video (resumable), wait until it is ready, print its playback and embed URLs
  videos                 list the app's hosted videos
                         (upload and videos call MEDIA_API_URL with MEDIA_API_KEY and MEDIA_ORGANIZATION_ID,
                         by default the embedded server of this data folder with its bootstrap key)`;

function onSignals(stop: (signal: string) => Promise<void>): void {
  let stopping = false;
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      stop(signal).then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}

async function serve(config: Config, roles: Roles = ALL_ROLES): Promise<void> {
  const log = createLogger(config.logLevel);
  if ((!roles.gateway || !roles.actorHost || !roles.encoderNode) && config.mode !== "cluster") {
    throw new ConfigError("MEDIA_MODE", "the gateway, actor-host and encoder-node roles run as separate processes only in cluster mode; set MEDIA_MODE=cluster");
  }
  const server = await startServer(config, log, roles);
  // One plain line on stdout whatever the log level: launchers and operators wait for it.
  if (roles.actorHost && !roles.gateway) process.stdout.write(`media actor host ready (pid ${process.pid})\n`);
  if (roles.encoderNode && !roles.gateway) process.stdout.write(`media encoder node ready (pid ${process.pid})\n`);
  if (server.bootstrapCreated && server.bootstrap) {
    process.stdout.write(`\nmedia is running on http://localhost:${server.port}\n`);
    process.stdout.write(`bootstrap credentials (also in ${config.dataDir}/bootstrap.json):\n${JSON.stringify(server.bootstrap, null, 2)}\n\n`);
  }
  onSignals(async (signal) => {
    log.info({ signal }, "shutting down");
    await server.close();
  });
}

function flag(args: string[], name: string, fallback: number): number {
  const at = args.indexOf(name);
  if (at < 0) return fallback;
  const value = Number(args[at + 1]);
  if (!Number.isInteger(value) || value < 0) throw new ConfigError(name, "must be a whole number");
  return value;
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
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
    case "cluster": {
      const cluster = await launchCluster({
        gateways: flag(rest, "--gateways", 2),
        actorHosts: flag(rest, "--actor-hosts", 2),
        encoderNodes: flag(rest, "--encoder-nodes", 1),
        basePort: flag(rest, "--port", config.httpPort),
        env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
        inheritOutput: true,
      });
      process.stdout.write(`cluster up: gateways on ${cluster.gateways.map((g) => g.port).join(", ")}; ${cluster.actorHosts.length} actor hosts; ${cluster.encoderNodes.length} encoder nodes\n`);
      onSignals(() => cluster.stop());
      return;
    }
    case "token": {
      const at = rest.indexOf("--email");
      const email = at >= 0 ? rest[at + 1] : undefined;
      if (!email || !/^[^@\s]+@[^@\s]+$/.test(email)) {
        process.stderr.write("media token: --email <address> is required\n");
        process.exit(2);
      }
      process.stdout.write((await mintDevToken(config, email)) + "\n");
      return;
    }
    case "upload":
      process.exitCode = await upload(config, rest);
      return;
    case "videos":
      process.exitCode = await videos(config);
      return;
    default:
      process.stderr.write(USAGE + "\n");
      process.exit(command ? 2 : 0);
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  // A bad setting stops the process with one line naming it.
  if (e instanceof ConfigError) process.stderr.write(`media: bad configuration: ${e.message}\n`);
  else process.stderr.write(`media: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(e instanceof ConfigError ? 2 : 1);
});
