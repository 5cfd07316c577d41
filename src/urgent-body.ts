// A streamed answer that may have to end while its client reads nothing (a Watch whose client
// stalled): once `urgent` resolves, its host writes what the body still yields, its end included,
// without waiting for the socket to drain. The uWS and node:http hosts honour it (gateway/).

export interface UrgentBody extends AsyncIterable<Uint8Array> {
  readonly urgent: Promise<void>;
}

export const urgentOf = (body: AsyncIterable<Uint8Array> | undefined): Promise<void> | undefined =>
  body && (body as Partial<UrgentBody>).urgent instanceof Promise ? (body as UrgentBody).urgent : undefined;
