// An entity type's reference, in the manner of Akka Typed's EntityTypeKey: its persistence name and,
// in its type, the commands it takes and the reply it answers. A caller needs nothing else to ask
// or tell one of its entities; the behaviour behind it (decide, fold, read models, effects) is
// registered once, at the composition root (main/), with the hosts that run it.

export interface EntityRef<C, R> {
  /** Persistence key prefix and command routing name, e.g. "video". */
  readonly type: string;
  /** Never set: carries the command and reply types, so `ask(ref, id, command)` is checked. */
  readonly protocol?: { readonly command: C; readonly reply: R };
}

/** The reference of entity type `type`, taking commands C and answering R. */
export function entity<C, R>(type: string): EntityRef<C, R> {
  return Object.freeze({ type });
}

/** One command of a protocol declared as a table of command bodies by type (e.g. VideoCommands). */
export type CommandOf<Table, K extends keyof Table> = { readonly type: K } & Table[K];
/** Every command of such a protocol: a union discriminated by `type`. */
export type CommandUnion<Table> = { [K in keyof Table]: CommandOf<Table, K> }[keyof Table];
