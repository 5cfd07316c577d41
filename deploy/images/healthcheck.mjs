// The image's HEALTHCHECK: healthy when this container's process answers GET /healthz with 200, on
// the HTTP port (the gateway and the embedded server) or else on the metrics port (the actor host
// and the encoder node serve no HTTP port of their own).
const ports = [process.env.MEDIA_HTTP_PORT || "8080", process.env.MEDIA_METRICS_PORT].filter(Boolean);
for (const port of ports) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
    if (res.status === 200) process.exit(0);
  } catch {
    // not this port: try the next
  }
}
process.exit(1);
