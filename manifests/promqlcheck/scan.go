package promqlcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ScanGo reads the metrics one binary registers from its Go source (tests
// excluded) under dirs: every prometheus.New{Counter,Gauge,Histogram,
// Summary}[Vec|Func] call, its name (Namespace_Subsystem_Name, constants
// resolved within the package), its variable and constant labels, and the
// labels every metric of the binary gets from
// prometheus.WrapRegistererWith (the agent's agent="<slug>", docs/MANUAL.md
// "Metrics and logs"). A histogram gives _bucket (with le), _sum and
// _count. A call it cannot read is an error naming file and line, so a
// metric is never silently missed.
func ScanGo(dirs ...string) (Metrics, error) {
	s := &scan{out: Metrics{}, fset: token.NewFileSet()}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if n := d.Name(); p != dir && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir // not built (go help packages)
			}
			return s.pkg(p)
		})
		if err != nil {
			return nil, err
		}
	}
	if len(s.errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(s.errs, "\n"))
	}
	for _, ls := range s.out {
		for _, l := range s.wrap {
			ls[l] = true
		}
	}
	return s.out, nil
}

type scan struct {
	out  Metrics
	fset *token.FileSet
	wrap []string
	errs []string
}

// pkg scans the non-test files of one directory, its string constants first.
func (s *scan) pkg(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var files []*ast.File
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(s.fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	consts := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, sp := range g.Specs {
					vs := sp.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if v, ok := strLit(vs.Values[i]); ok {
								consts[n.Name] = v
							}
						}
					}
				}
			}
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				s.call(c, consts)
			}
			return true
		})
	}
	return nil
}

// kinds are the constructors read, by what their series look like.
var kinds = map[string]string{
	"NewCounter": "plain", "NewCounterVec": "plain", "NewCounterFunc": "plain",
	"NewGauge": "plain", "NewGaugeVec": "plain", "NewGaugeFunc": "plain",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram",
	"NewSummary": "summary", "NewSummaryVec": "summary",
}

func (s *scan) call(c *ast.CallExpr, consts map[string]string) {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "prometheus" {
		return
	}
	pos := s.fset.Position(c.Pos())
	if sel.Sel.Name == "WrapRegistererWith" && len(c.Args) > 0 {
		keys, err := mapKeys(c.Args[0], consts)
		if err != nil {
			s.errs = append(s.errs, fmt.Sprintf("%s: WrapRegistererWith: %v", pos, err))
		}
		s.wrap = append(s.wrap, keys...)
		return
	}
	kind, ok := kinds[sel.Sel.Name]
	if !ok || len(c.Args) == 0 {
		return
	}
	opts := c.Args[0]
	if u, ok := opts.(*ast.UnaryExpr); ok {
		opts = u.X
	}
	lit, ok := opts.(*ast.CompositeLit)
	if !ok {
		s.errs = append(s.errs, fmt.Sprintf("%s: prometheus.%s: options are not a literal", pos, sel.Sel.Name))
		return
	}
	parts := map[string]string{}
	var labels []string
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		id, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		switch key := id.Name; key {
		case "Namespace", "Subsystem", "Name":
			v, ok := value(kv.Value, consts)
			if !ok {
				s.errs = append(s.errs, fmt.Sprintf("%s: prometheus.%s: %s is not a string constant", pos, sel.Sel.Name, key))
				return
			}
			parts[key] = v
		case "ConstLabels":
			keys, err := mapKeys(kv.Value, consts)
			if err != nil {
				s.errs = append(s.errs, fmt.Sprintf("%s: ConstLabels: %v", pos, err))
			}
			labels = append(labels, keys...)
		}
	}
	if strings.HasSuffix(sel.Sel.Name, "Vec") {
		vl, err := stringList(c.Args[1], consts)
		if err != nil {
			s.errs = append(s.errs, fmt.Sprintf("%s: prometheus.%s labels: %v", pos, sel.Sel.Name, err))
		}
		labels = append(labels, vl...)
	}
	var name []string
	for _, k := range []string{"Namespace", "Subsystem", "Name"} {
		if parts[k] != "" {
			name = append(name, parts[k])
		}
	}
	full := strings.Join(name, "_")
	switch kind {
	case "histogram":
		s.out.Add(full+"_bucket", append(labels, "le")...)
		s.out.Add(full+"_sum", labels...)
		s.out.Add(full+"_count", labels...)
	case "summary":
		s.out.Add(full, append(labels, "quantile")...)
		s.out.Add(full+"_sum", labels...)
		s.out.Add(full+"_count", labels...)
	default:
		s.out.Add(full, labels...)
	}
}

func strLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(b.Value)
	return v, err == nil
}

// value is a string literal or a constant of the package.
func value(e ast.Expr, consts map[string]string) (string, bool) {
	if v, ok := strLit(e); ok {
		return v, true
	}
	if id, ok := e.(*ast.Ident); ok {
		v, ok := consts[id.Name]
		return v, ok
	}
	return "", false
}

// stringList reads []string{"a", "b"}.
func stringList(e ast.Expr, consts map[string]string) ([]string, error) {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("not a []string literal")
	}
	var out []string
	for _, el := range lit.Elts {
		v, ok := value(el, consts)
		if !ok {
			return out, fmt.Errorf("an element is not a string constant")
		}
		out = append(out, v)
	}
	return out, nil
}

// mapKeys reads the keys of prometheus.Labels{"a": …}.
func mapKeys(e ast.Expr, consts map[string]string) ([]string, error) {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("not a prometheus.Labels literal")
	}
	var out []string
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			return out, fmt.Errorf("not a key: value element")
		}
		v, ok := value(kv.Key, consts)
		if !ok {
			return out, fmt.Errorf("a key is not a string constant")
		}
		out = append(out, v)
	}
	return out, nil
}
