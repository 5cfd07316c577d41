// The topics of one deployment, named once: every role (gateway, actor host, encoder node) uses them.

/** Topic and group names of one deployment; a prefix keeps deployments sharing a broker apart. */
export interface Topics {
  /** Commands to entities, keyed by entity; encoder nodes report on it too, so one writer owns a job. */
  readonly commands: string;
  readonly replies: string;
  readonly actorHosts: string;
  /** Encode tasks keyed by job id, consumed by the encoder nodes' group. */
  readonly encode: string;
  readonly encoders: string;
  /** Entity snapshots after each change; every gateway and encoder node reads all of it. */
  readonly updates: string;
}

export function topicsFor(prefix: string): Topics {
  return {
    commands: `${prefix}.commands`,
    replies: `${prefix}.replies`,
    actorHosts: `${prefix}.actor-hosts`,
    encode: `${prefix}.encode`,
    encoders: `${prefix}.encoders`,
    updates: `${prefix}.updates`,
  };
}
