// promql-names reads PromQL expressions (a JSON array of strings) on stdin and prints, for each, the
// metric names it selects, parsed by Prometheus's own parser: a JSON array of {"expr", "names"} or
// {"expr", "error"}. The observe tests use it to check that every query of the dashboard and the
// rules names a metric the service registers, and that each one parses at all.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type result struct {
	Expr  string   `json:"expr"`
	Names []string `json:"names,omitempty"`
	Error string   `json:"error,omitempty"`
}

func main() {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		fmt.Fprintln(os.Stderr, "promql-names: stdin is not a JSON array of strings:", err)
		os.Exit(2)
	}
	out := make([]result, 0, len(exprs))
	for _, e := range exprs {
		out = append(out, names(e))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "promql-names:", err)
		os.Exit(1)
	}
}

func names(expr string) result {
	ast, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return result{Expr: expr, Error: err.Error()}
	}
	seen := map[string]bool{}
	var failure string
	parser.Inspect(ast, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if name == "" {
			// {__name__="x"}: a name given as a matcher. A regular expression over names cannot be checked.
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				} else if m.Name == labels.MetricName {
					failure = fmt.Sprintf("a metric name matched by %s cannot be checked", m.Type)
				}
			}
		}
		if name != "" {
			seen[name] = true
		}
		return nil
	})
	if failure != "" {
		return result{Expr: expr, Error: failure}
	}
	list := make([]string, 0, len(seen))
	for n := range seen {
		list = append(list, n)
	}
	sort.Strings(list)
	return result{Expr: expr, Names: list}
}
