package archtest

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The size limits of the lint ratchet (make lint): no Go file over 600
// lines, no function over 100 (lines inside composite literals — tables —
// do not count), no main.go over 60. What was over a limit when the
// ratchet came is listed with its size in hack/size-allowlist.txt and may
// shrink but never grow.
const (
	maxFileLines = 600
	maxFuncLines = 100
	maxMainLines = 60
	allowlist    = "hack/size-allowlist.txt"
)

// measure returns every over-limit size in the repository, keyed
// "file path" or "func path Name", non-test Go files only.
func measure(t *testing.T, root string) map[string]int {
	t.Helper()
	over := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "testdata" || n == "bin" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Count(string(src), "\n")
		limit := maxFileLines
		if filepath.Base(rel) == "main.go" {
			limit = maxMainLines
		}
		if lines > limit {
			over["file "+rel] = lines
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if n := funcLines(fset, fn); n > maxFuncLines {
				over["func "+rel+" "+funcName(fn)] = n
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return over
}

// funcLines counts fn's lines that are not inside a composite literal of
// more than one line (a table).
func funcLines(fset *token.FileSet, fn *ast.FuncDecl) int {
	start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
	table := map[int]bool{}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if cl, ok := n.(*ast.CompositeLit); ok {
			a, b := fset.Position(cl.Lbrace).Line, fset.Position(cl.Rbrace).Line
			for l := a + 1; l < b; l++ {
				table[l] = true
			}
			return false
		}
		return true
	})
	return end - start + 1 - len(table)
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

func readAllowlist(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		size, err := strconv.Atoi(line[i+1:])
		if i < 0 || err != nil {
			t.Fatalf("%s:%d: want `file <path> <lines>` or `func <path> <Name> <lines>`", path, n)
		}
		out[line[:i]] = size
	}
	return out
}

// TestSizeRatchet is the lint ratchet. KUBECREW_SIZE_ALLOWLIST=write
// rewrites the allowlist from the tree (only to record a shrink).
// It runs in make lint (KUBECREW_LINT=1), not in every go test.
func TestSizeRatchet(t *testing.T) {
	if os.Getenv("KUBECREW_LINT") == "" && os.Getenv("KUBECREW_SIZE_ALLOWLIST") == "" {
		t.Skip("the size ratchet runs in make lint (KUBECREW_LINT=1)")
	}
	root := filepath.Join("..", "..")
	over := measure(t, root)
	if os.Getenv("KUBECREW_SIZE_ALLOWLIST") == "write" {
		var b strings.Builder
		b.WriteString("# What was over a size limit when the ratchet came (pkg/archtest/sizes_test.go):\n")
		b.WriteString("# it may shrink, never grow. Regenerate after a shrink: KUBECREW_SIZE_ALLOWLIST=write go test ./archtest -run SizeRatchet\n")
		keys := make([]string, 0, len(over))
		for k := range over {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s %d\n", k, over[k])
		}
		if err := os.WriteFile(filepath.Join(root, allowlist), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	allowed := readAllowlist(t, filepath.Join(root, allowlist))
	for k, n := range over {
		was, ok := allowed[k]
		switch {
		case !ok:
			t.Errorf("%s: %d lines, over the limit (files %d, functions %d, main.go %d): split it along its seams", k, n, maxFileLines, maxFuncLines, maxMainLines)
		case n > was:
			t.Errorf("%s: grew to %d lines from %d (%s); it is over the limit, so it may only shrink", k, n, was, allowlist)
		}
	}
}
