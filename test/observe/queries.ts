// The queries of deploy/observe: the rules file's recording and alerting rules, and every target of
// the Grafana dashboard with Grafana's interval variables replaced the way Grafana would.
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { ROOT } from "../harness.js";

export interface Rule {
  readonly record?: string;
  readonly alert?: string;
  readonly expr: string;
}
export interface RuleFile {
  readonly groups: readonly { readonly name: string; readonly interval?: string; readonly rules: readonly Rule[] }[];
}

export const RULES = path.join(ROOT, "deploy/observe/prometheus/rules.yml");
export const DASHBOARD = path.join(ROOT, "deploy/observe/grafana/media.json");

export function ruleFile(): RuleFile {
  return parse(readFileSync(RULES, "utf8")) as RuleFile;
}

export interface PanelQuery {
  readonly panel: string;
  readonly section: string;
  readonly legend: string;
  readonly expr: string;
}

/** Every target of the dashboard, `$__rate_interval` and `$__interval` replaced by `rateInterval`. */
export function dashboardQueries(rateInterval = "5m"): PanelQuery[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as {
    panels: { type: string; title: string; targets?: { expr: string; legendFormat?: string }[] }[];
  };
  const out: PanelQuery[] = [];
  let section = "";
  for (const panel of dashboard.panels) {
    if (panel.type === "row") section = panel.title;
    for (const t of panel.targets ?? []) {
      out.push({
        panel: panel.title,
        section,
        legend: t.legendFormat ?? "",
        expr: t.expr.replaceAll("$__rate_interval", rateInterval).replaceAll("$__interval", rateInterval),
      });
    }
  }
  return out;
}
