// Package promqlcheck holds the fleet's PromQL (the chart's PrometheusRule
// and Grafana dashboard, docs/RUNBOOK.md) to what Prometheus and the
// binaries do: every expression is parsed by Prometheus's own parser, and
// every series and label it names must be one a scrape of the fleet gives.
// A renamed metric or label makes an alert that silently never fires.
package promqlcheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// Metrics maps a series name to the names of its labels.
type Metrics map[string]map[string]bool

// Add records a series with its labels (a union when it is already known).
func (m Metrics) Add(series string, labels ...string) {
	if m[series] == nil {
		m[series] = map[string]bool{}
	}
	for _, l := range labels {
		m[series][l] = true
	}
}

// Merge adds every series of o.
func (m Metrics) Merge(o Metrics) {
	for s, ls := range o {
		m.Add(s)
		for l := range ls {
			m[s][l] = true
		}
	}
}

// Checker checks expressions against the series it knows.
type Checker struct {
	// Series are the series a query may name, with their own labels.
	Series Metrics
	// Target are the labels the scrape adds to every series (the
	// Prometheus Operator's namespace, pod, job…).
	Target []string
}

var promql = parser.NewParser(parser.Options{})

// Check parses expr and returns what is wrong with it: the parse error, or
// each series no one exposes and each label (in a selector, a by/without
// grouping, an on/ignoring or group_left/right) the series it applies to
// do not carry. Nil when nothing is.
func (c Checker) Check(expr string) []string {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("does not parse: %v", err)}
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		out = append(out, c.node(n)...)
		return nil
	})
	return out
}

func (c Checker) node(n parser.Node) []string {
	switch x := n.(type) {
	case *parser.VectorSelector:
		return c.selector(x)
	case *parser.AggregateExpr:
		if len(x.Grouping) == 0 {
			return nil
		}
		how := "by"
		if x.Without {
			how = "without"
		}
		return missing(fmt.Sprintf("%s %s (…)", x.Op, how), x.Grouping, c.labels(x.Expr))
	case *parser.BinaryExpr:
		vm := x.VectorMatching
		if vm == nil || c.scalar(x.LHS) || c.scalar(x.RHS) {
			return nil
		}
		var out []string
		if vm.On || len(vm.MatchingLabels) > 0 {
			how := "ignoring"
			if vm.On {
				how = "on"
			}
			clause := fmt.Sprintf("%s %s (…)", x.Op, how)
			out = append(out, missing(clause+" left side", vm.MatchingLabels, c.labels(x.LHS))...)
			out = append(out, missing(clause+" right side", vm.MatchingLabels, c.labels(x.RHS))...)
		}
		switch vm.Card {
		case parser.CardManyToOne:
			out = append(out, missing(fmt.Sprintf("%s group_left (…)", x.Op), vm.Include, c.labels(x.RHS))...)
		case parser.CardOneToMany:
			out = append(out, missing(fmt.Sprintf("%s group_right (…)", x.Op), vm.Include, c.labels(x.LHS))...)
		}
		return out
	}
	return nil
}

// selector: the series must be known and carry every label matched on.
func (c Checker) selector(vs *parser.VectorSelector) []string {
	name := vs.Name
	if name == "" {
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" {
				name = m.Value
			}
		}
	}
	own, ok := c.Series[name]
	if !ok {
		return []string{fmt.Sprintf("series %q: no known metric has it", name)}
	}
	var used []string
	for _, m := range vs.LabelMatchers {
		if m.Name != "__name__" {
			used = append(used, m.Name)
		}
	}
	return missing(fmt.Sprintf("selector %s", vs), used, c.withTarget(own))
}

func (c Checker) withTarget(own map[string]bool) map[string]bool {
	out := make(map[string]bool, len(own)+len(c.Target))
	for l := range own {
		out[l] = true
	}
	for _, l := range c.Target {
		out[l] = true
	}
	return out
}

// scalar: a number, or an expression of numbers only.
func (c Checker) scalar(e parser.Expr) bool {
	return e.Type() == parser.ValueTypeScalar
}

// labels is what the series an expression yields may carry: a permissive
// upper bound (a union where Prometheus would take one side), so a label
// outside it is certainly absent.
func (c Checker) labels(e parser.Expr) map[string]bool {
	switch x := e.(type) {
	case *parser.VectorSelector:
		name := x.Name
		for _, m := range x.LabelMatchers {
			if m.Name == "__name__" && name == "" {
				name = m.Value
			}
		}
		return c.withTarget(c.Series[name])
	case *parser.MatrixSelector:
		return c.labels(x.VectorSelector)
	case *parser.ParenExpr:
		return c.labels(x.Expr)
	case *parser.UnaryExpr:
		return c.labels(x.Expr)
	case *parser.SubqueryExpr:
		return c.labels(x.Expr)
	case *parser.StepInvariantExpr:
		return c.labels(x.Expr)
	case *parser.AggregateExpr:
		return aggregated(x, c.labels(x.Expr))
	case *parser.Call:
		out := map[string]bool{}
		for _, a := range x.Args {
			union(out, c.labels(a))
		}
		if x.Func.Name == "label_replace" && len(x.Args) > 1 {
			if s, ok := x.Args[1].(*parser.StringLiteral); ok {
				out[s.Val] = true
			}
		}
		return out
	case *parser.BinaryExpr:
		l, r := c.labels(x.LHS), c.labels(x.RHS)
		if x.Op == parser.LAND || x.Op == parser.LUNLESS {
			return l
		}
		return union(l, r)
	}
	return map[string]bool{}
}

// aggregated is what an aggregation keeps of its input's labels.
func aggregated(x *parser.AggregateExpr, in map[string]bool) map[string]bool {
	switch {
	case x.Op == parser.TOPK || x.Op == parser.BOTTOMK || x.Op == parser.LIMITK || x.Op == parser.LIMIT_RATIO:
		return in
	case x.Without:
		out := map[string]bool{}
		for l := range in {
			if !slices.Contains(x.Grouping, l) {
				out[l] = true
			}
		}
		return out
	}
	out := map[string]bool{}
	for _, l := range x.Grouping {
		out[l] = true
	}
	if x.Op == parser.COUNT_VALUES {
		if s, ok := x.Param.(*parser.StringLiteral); ok {
			out[s.Val] = true
		}
	}
	return out
}

func union(a, b map[string]bool) map[string]bool {
	for l := range b {
		a[l] = true
	}
	return a
}

// missing lists the labels of used that have is without.
func missing(where string, used []string, have map[string]bool) []string {
	var out []string
	for _, l := range used {
		if !have[l] {
			out = append(out, fmt.Sprintf("%s: label %q is on none of its series (they have %s)", where, l, names(have)))
		}
	}
	return out
}

func names(set map[string]bool) string {
	if len(set) == 0 {
		return "no labels"
	}
	out := make([]string, 0, len(set))
	for l := range set {
		out = append(out, l)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// Used lists the series expr selects (nil when it does not parse).
func (c Checker) Used(expr string) []string {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return nil
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs.Name)
		}
		return nil
	})
	return out
}
