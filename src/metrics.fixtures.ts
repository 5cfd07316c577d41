// Reading this process's metrics back in unit specs, as a scrape would see them.
import { metricsRegistry } from "./metrics.js";

/** The value of one series: `name` as exposed (a histogram's name_count, name_sum), with exactly these labels; 0 when absent. */
export async function metricValue(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metrics = await metricsRegistry().getMetricsAsJSON();
  const base = name.replace(/_(count|sum)$/, "");
  const metric = metrics.find((m) => m.name === name) ?? metrics.find((m) => m.name === base);
  const nameOf = (v: object) => ("metricName" in v && typeof v.metricName === "string" ? v.metricName : metric?.name);
  const found = (metric?.values ?? []).find(
    (v) => nameOf(v) === name && JSON.stringify(Object.entries(v.labels).sort()) === JSON.stringify(Object.entries(labels).sort()),
  );
  return found?.value ?? 0;
}

/** Whether the series exists (with exactly these labels), whatever its value. */
export async function metricExists(name: string, labels: Record<string, string> = {}): Promise<boolean> {
  const text = await metricsRegistry().metrics();
  const wanted = Object.entries(labels)
    .sort()
    .map(([k, v]) => `${k}="${v}"`);
  return text.split("\n").some((line) => {
    const m = /^(\w+)(?:\{(.*)\})? /.exec(line);
    return (
      m?.[1] === name &&
      (m[2] ?? "")
        .split(",")
        .filter((s) => s !== "")
        .sort()
        .join(",") === wanted.join(",")
    );
  });
}
