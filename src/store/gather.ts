// Requests of concurrent callers that go to the database as one, the way the Kafka bus batches its
// publishes: one request of a kind in flight at a time, and every item that arrives meanwhile goes
// in the next one (up to `most`). When nothing is in flight, the request goes at the end of the
// event loop's turn (setImmediate): the callers that one turn's I/O set going (the commits one
// database answer finished, the requests of one read from the sockets) share it, and an idle caller
// waits for no timer. A busy caller pays at most the request ahead of it. Each request costs both
// sides (parsing, the database's request stages, the reply, a socket write), so under load N
// concurrent callers share one request's cost instead of paying N.

/** What one item came to: its value, or the error that failed it. */
export type Outcome<R> = { readonly ok: true; readonly value: R } | { readonly ok: false; readonly error: unknown };

interface Waiting<I, R> {
  readonly item: I;
  readonly resolve: (value: R) => void;
  readonly reject: (e: unknown) => void;
}

export class Gather<I, R> {
  private waiting: Waiting<I, R>[] = [];
  private busy = false;

  constructor(
    /** Sends the items as one request (or a few); one outcome per item, in their order. A throw fails every item. */
    private readonly send: (items: readonly I[]) => Promise<readonly Outcome<R>[]>,
    /** The most items in one request. */
    private readonly most = 64,
    /** When true, an item goes in a request of its own at once (nothing is gained by gathering it). */
    private readonly alone: () => boolean = () => false,
  ) {}

  run(item: I): Promise<R> {
    if (this.alone()) return this.send([item]).then(([o]) => settled(o));
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.busy) return;
      this.busy = true;
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      const group = this.waiting.splice(0, this.most);
      let outcomes: readonly Outcome<R>[];
      try {
        outcomes = await this.send(group.map((w) => w.item));
      } catch (e) {
        outcomes = group.map(() => ({ ok: false, error: e }));
      }
      group.forEach((w, i) => {
        try {
          w.resolve(settled(outcomes[i]));
        } catch (e) {
          w.reject(e);
        }
      });
    }
    this.busy = false;
  }
}

/** An outcome's value, or its error thrown. */
function settled<R>(o: Outcome<R> | undefined): R {
  if (!o) throw new Error("no outcome for a gathered item");
  if (!o.ok) throw o.error;
  return o.value;
}

/** Every item's outcome from one attempt at them all, or, when that fails and there were several, from one attempt each. */
export async function togetherOrAlone<I, R>(items: readonly I[], together: (items: readonly I[]) => Promise<R[]>): Promise<Outcome<R>[]> {
  try {
    return (await together(items)).map((value) => ({ ok: true, value }));
  } catch (e) {
    if (items.length === 1) return [{ ok: false, error: e }];
    return Promise.all(
      items.map((item) =>
        together([item]).then(
          ([value]) => ({ ok: true, value: value as R }) as const,
          (error: unknown) => ({ ok: false, error }) as const,
        ),
      ),
    );
  }
}
