// Scraping a process's /metrics in tests: the Prometheus text format parsed by
// parse-prometheus-text-format, and the values of its series by exact labels.
import parsePrometheusTextFormat, { type PrometheusMetric, type PrometheusSample } from "parse-prometheus-text-format";
import { expect } from "vitest";

/** Metric families by name, and the type each is declared with. */
export interface Scrape {
  readonly families: PrometheusMetric[];
  readonly types: ReadonlyMap<string, string>;
}

/**
 * GET /metrics, parsed. parse-prometheus-text-format 1.1.1 merges the series of a labelled histogram
 * into one and drops their _count and _sum (its issue #13), so histograms are parsed as untyped:
 * name_bucket, name_count and name_sum then come out as families of their own, labels kept.
 */
export async function scrapeMetrics(url: string): Promise<Scrape> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
  return { families: parsePrometheusTextFormat(text.replace(/^(# TYPE \S+) histogram$/gm, "$1 untyped")), types };
}

const sameLabels = (a: Readonly<Record<string, string>> | undefined, b: Record<string, string>) =>
  JSON.stringify(Object.entries(a ?? {}).sort()) === JSON.stringify(Object.entries(b).sort());

/** Every sample of a name: untyped, a histogram's series interleave, so one name may head several families. */
export const series = (scraped: Scrape, name: string): PrometheusSample[] => scraped.families.filter((m) => m.name === name).flatMap((m) => m.metrics);

/** A series' value with exactly these labels (a histogram's name_count, say); 0 when it does not exist yet. */
export function value(scraped: Scrape, name: string, labels: Record<string, string> = {}): number {
  const sample = series(scraped, name).find((s) => sameLabels(s.labels, labels));
  return Number(sample?.value ?? 0);
}

/** A histogram's observation count with exactly these labels. */
export const count = (scraped: Scrape, name: string, labels: Record<string, string>): number => value(scraped, `${name}_count`, labels);
