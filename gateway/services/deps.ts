// What the service handlers are given: the ports and shared pieces, never transport types.
import type { ActorHost } from "../../actors/host.js";
import type { Config } from "../../src/config.js";
import type { Directory } from "../../src/directory.js";
import type { Logger } from "../../src/log.js";
import type { Paginator } from "../../src/pagination.js";
import type { SecretBox } from "../../src/secrets.js";
import type { Store } from "../../src/store/port.js";

export interface ServiceDeps {
  readonly config: Config;
  readonly store: Store;
  readonly directory: Directory;
  readonly actors: ActorHost;
  readonly paginator: Paginator;
  readonly box: SecretBox;
  readonly log: Logger;
}
