// The image's HEALTHCHECK: healthy when this container's process answers GET /readyz with 200
// (its store and bus reachable, an encoder node's tools present), on the HTTP port (the gateway,
// the embedded server) or else on the metrics port (actor hosts and encoder nodes serve no HTTP
// port of their own). Compose's depends_on waits on it; Kubernetes uses its own probes.
const ports = [process.env.MEDIA_HTTP_PORT || "8080", process.env.MEDIA_METRICS_PORT].filter(Boolean);
for (const port of ports) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2000) });
    if (res.status === 200) process.exit(0);
  } catch {
    // not this port: try the next
  }
}
process.exit(1);
