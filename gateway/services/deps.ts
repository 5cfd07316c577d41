// What the service handlers are given: the ports and shared pieces, never transport types.
import type { EntityCommands } from "../../actors/commands.js";
import type { UpdatesHub } from "../../actors/commands.js";
import type { Bus } from "../../src/bus/port.js";
import type { Config } from "../../src/config.js";
import type { Directory } from "../../src/directory.js";
import type { Logger } from "../../src/log.js";
import type { NetGuard } from "../../src/net-guard.js";
import type { Paginator } from "../../src/pagination.js";
import type { SecretBox } from "../../src/secrets.js";
import type { Store } from "../../src/store/port.js";
import type { WatchHub } from "../watch/hub.js";

export interface ServiceDeps {
  readonly config: Config;
  readonly store: Store;
  readonly directory: Directory;
  /** Commands to persistent actors, over the bus to whichever actor host owns the entity. */
  readonly actors: EntityCommands;
  readonly bus: Bus;
  readonly paginator: Paginator;
  readonly box: SecretBox;
  readonly log: Logger;
  /** The process's one network guard: every outbound connection passes it. */
  readonly guard: NetGuard;
  /** Entity updates as they happen; absent in processes that run no gateway. */
  readonly updates?: UpdatesHub;
  /** Watch streams' fan-out over `updates` (the router makes it, one per gateway). */
  readonly watches?: WatchHub;
  /** The standing of this process's own encoder node, when it runs one (the embedded mode). */
  readonly encoder?: () => { ok: boolean; message?: string };
}
