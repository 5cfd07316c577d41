// The `media` command: `serve` runs the embedded service; `token --email` mints a development session.
import { ConfigError, loadConfig, type Config } from "./config.js";
import { mintDevToken } from "./identity.js";
import { createLogger } from "./log.js";
import { startServer } from "./server.js";

const USAGE = `usage: media <command>
  serve                  run the API in its embedded default (MEDIA_HTTP_PORT, MEDIA_DATA_DIR)
  token --email <addr>   mint a session token from the embedded development issuer`;

async function serve(config: Config): Promise<void> {
  const log = createLogger(config.logLevel);
  const server = await startServer(config, log);
  if (server.bootstrapCreated && server.bootstrap) {
    process.stdout.write(`\nmedia is running on http://localhost:${server.port}\n`);
    process.stdout.write(`bootstrap credentials (also in ${config.dataDir}/bootstrap.json):\n${JSON.stringify(server.bootstrap, null, 2)}\n\n`);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    server.close().then(
      () => process.exit(0),
      (e: unknown) => {
        log.error({ err: e }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  let config: Config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`media: bad configuration: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  switch (command) {
    case "serve":
      return serve(config);
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
    default:
      process.stderr.write(USAGE + "\n");
      process.exit(command ? 2 : 0);
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`media: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
