// The bus inside traces: a message published within a trace carries it in its headers (W3C
// traceparent and tracestate) under a PRODUCER span, and its handler runs in a CONSUMER span that
// continues it, with OpenTelemetry's messaging attributes. Wrapped around a bus only when tracing
// is on (main/), so with it off the bus is untouched.
import { extractTrace, failed, inSpan, injectTrace, SpanKind, childSpan, inSpanContext, type Attributes } from "../tracing.js";
import type { Bus, OutgoingMessage } from "./port.js";

/** `system`: messaging.system, "kafka" for Kafka and the in-process bus alike (it keeps Kafka's semantics). */
export function tracedBus(bus: Bus, system = "kafka"): Bus {
  return {
    start: () => bus.start(),
    close: () => bus.close(),
    health: () => bus.health(),
    ensureTopics: (specs) => bus.ensureTopics(specs),
    async publish(topic, messages) {
      const attributes: Attributes = {
        "messaging.system": system,
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.destination.name": topic,
        ...(messages.length === 1 ? { "messaging.kafka.message.key": messages[0]!.key } : { "messaging.batch.message_count": messages.length }),
      };
      // Outside a trace (a poll, a heartbeat) nothing is added.
      const span = childSpan(`send ${topic}`, SpanKind.PRODUCER, attributes);
      if (!span) return bus.publish(topic, messages);
      try {
        const carried = inSpanContext(span, () => messages.map((m): OutgoingMessage => ({ ...m, headers: injectTrace(m.headers)! })));
        await bus.publish(topic, carried);
      } catch (e) {
        failed(span, e);
        throw e;
      } finally {
        span.end();
      }
    },
    consume: (options) =>
      bus.consume(
        // A broadcast (every process reads every message from the end, most drop it: replies,
        // updates, signals) opens no span; the one who acts on it does.
        options.fromLatest
          ? options
          : {
              ...options,
              handler: (m) =>
                inSpan(
                  extractTrace(m.headers),
                  `process ${m.topic}`,
                  SpanKind.CONSUMER,
                  {
                    "messaging.system": system,
                    "messaging.operation.type": "process",
                    "messaging.operation.name": "process",
                    "messaging.destination.name": m.topic,
                    "messaging.consumer.group.name": options.group,
                    "messaging.destination.partition.id": String(m.partition),
                    "messaging.kafka.offset": Number(m.offset),
                    "messaging.kafka.message.key": m.key,
                  },
                  () => options.handler(m),
                ),
            },
      ),
  };
}
