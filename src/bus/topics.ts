// The topics of one deployment, named once: every role (gateway, actor host, encoder node) uses them.

/** Topic and group names of one deployment; a prefix keeps deployments sharing a broker apart. */
export interface Topics {
  /** Commands to entities, keyed by entity; encoder nodes report on it too, so one writer owns a job. */
  readonly commands: string;
  readonly replies: string;
  readonly actorHosts: string;
  /** Entity states after each change, without secrets; every gateway reads all of it (Watch). */
  readonly updates: string;
  /** Small signals every encoder node reads: a canceled job's stop (keyed by job id), and "work queued". */
  readonly signals: string;
}

export function topicsFor(prefix: string): Topics {
  return {
    commands: `${prefix}.commands`,
    replies: `${prefix}.replies`,
    actorHosts: `${prefix}.actor-hosts`,
    updates: `${prefix}.updates`,
    signals: `${prefix}.signals`,
  };
}
