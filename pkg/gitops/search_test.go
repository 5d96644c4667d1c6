package gitops

import (
	"fmt"
	"strings"
	"testing"
)

// search_repo is grep over the repository, bounded: what it cannot show
// or read it says.
func TestSearchRepo(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{
		"apps/shop/api/deployment.yaml": []byte("kind: Deployment\nspec:\n  containers:\n  - image: shop/api:latest\n    resources: {limits: {memory: 256Mi}}\n"),
		"apps/shop/web/deployment.yaml": []byte("kind: Deployment\n  - image: shop/web@sha256:abc\n"),
		"apps/shop/README.md":           []byte("image: shop/docs:latest is not a manifest\n"),
		"clusters/prod/big.yaml":        []byte(strings.Repeat("image: x:latest\n", SearchMaxFileBytes/16+1)),
		"clusters/prod/blob.bin":        []byte("image: y:latest\x00\x01"),
		"clusters/prod/long.yaml":       []byte("image: " + strings.Repeat("z", 500) + ":latest\n"),
	}
	for i := range SearchMaxMatches + 5 {
		files[fmt.Sprintf("apps/many/m%02d.yaml", i)] = []byte("image: many:latest\n")
	}
	l, _, _ := newLocalRepo(t, files)
	dax := newAgent(t, l, "", Options{}) // read-only: no identity needed
	cases := []struct {
		name string
		args map[string]any
		want []string
		not  []string
	}{
		{"pattern in a dir, with line numbers", map[string]any{"pattern": `image: .*:latest`, "dir": "apps/shop"},
			[]string{"apps/shop/api/deployment.yaml:4:   - image: shop/api:latest", "apps/shop/README.md:1: image: shop/docs:latest", "2 matching line(s) in 3 file(s) searched."},
			[]string{"web"}},
		{"glob narrows the files", map[string]any{"pattern": `latest`, "dir": "apps/shop", "glob": "*.yaml"},
			[]string{"apps/shop/api/deployment.yaml:4:", "1 matching line(s) in 2 file(s) searched."}, []string{"README"}},
		{"case-insensitive flag", map[string]any{"pattern": `(?i)MEMORY: 256`, "dir": "apps/shop"},
			[]string{"apps/shop/api/deployment.yaml:5:"}, nil},
		{"large, binary files skipped; long lines cut", map[string]any{"pattern": `latest`, "dir": "clusters"},
			[]string{"clusters/prod/long.yaml:1: image: zzz", "…", "2 file(s) not searched (over 200 files, over 256 KiB, or binary)"}, []string{"big.yaml:", "blob.bin:"}},
		{"matches beyond the bound are counted", map[string]any{"pattern": `many`, "dir": "apps/many"},
			[]string{fmt.Sprintf("%d matching line(s)", SearchMaxMatches+5), "5 more not shown (narrow dir, glob or pattern)"}, nil},
		{"no match", map[string]any{"pattern": `kind: CronJob`}, []string{`No match for "kind: CronJob" in`}, nil},
		{"a bad pattern is the model's to fix", map[string]any{"pattern": `image: (`}, []string{"ERROR", "not a regular expression (RE2)"}, nil},
		{"an empty pattern", map[string]any{"pattern": " "}, []string{"ERROR", "pattern is required"}, nil},
		{"a path outside the repository", map[string]any{"pattern": "x", "dir": "../.."}, []string{"ERROR"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := dax.call(ToolSearchRepo, tc.args)
			mustContain(t, out, tc.want...)
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("output contains %q:\n%s", n, out)
				}
			}
			if n := strings.Count(out, "\n"); n > SearchMaxMatches+1 {
				t.Errorf("%d lines: the output is not bounded", n)
			}
		})
	}
}
