// Types of parse-prometheus-text-format, which ships none: the prom2json shape it answers.
declare module "parse-prometheus-text-format" {
  export interface PrometheusSample {
    readonly labels?: Readonly<Record<string, string>>;
    /** Counters, gauges, untyped. */
    readonly value?: string;
    /** Histograms (by upper bound, "+Inf" included) and summaries. */
    readonly buckets?: Readonly<Record<string, string>>;
    readonly quantiles?: Readonly<Record<string, string>>;
    readonly count?: string;
    readonly sum?: string;
  }
  export interface PrometheusMetric {
    readonly name: string;
    readonly help: string;
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    readonly metrics: readonly PrometheusSample[];
  }
  export default function parsePrometheusTextFormat(text: string): PrometheusMetric[];
}
