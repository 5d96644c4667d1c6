package gitops

import (
	"context"
	"strings"
	"testing"
)

// TestLocateByClusterPath: one repository holds two clusters' copies of
// the same app; without a template the two are ambiguous, with
// clusters/{cluster}/apps/{name} each cluster's agent finds its own.
func TestLocateByClusterPath(t *testing.T) {
	t.Parallel()
	deploy := func(mem string) []byte {
		return []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n  namespace: shop\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          resources:\n            limits: {memory: " + mem + "}\n")
	}
	l, _, _ := newLocalRepo(t, map[string][]byte{
		"clusters/eu-west/apps/api/deployment.yaml": deploy("256Mi"),
		"clusters/us-east/apps/api/deployment.yaml": deploy("512Mi"),
	})
	ctx := context.Background()
	if _, err := LocateManifest(ctx, l, "shop", "Deployment", "api", "app"); err == nil {
		t.Fatal("two clusters' copies located without a template: want an ambiguity error")
	}
	paths, err := ParsePathTemplates("clusters/{cluster}/apps/{name}, {namespace}/{name}")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cluster, want string }{
		{"eu-west", "clusters/eu-west/apps/api/deployment.yaml"},
		{"us-east", "clusters/us-east/apps/api/deployment.yaml"},
	} {
		o := Options{Paths: paths, Cluster: tc.cluster}
		loc, err := LocateManifestIn(ctx, l, o.firstDirs("shop", "api"), "shop", "Deployment", "api", "app")
		if err != nil || loc.Path != tc.want || loc.How != "convention clusters/"+tc.cluster+"/apps/api/" {
			t.Fatalf("cluster %s: %+v %v, want %s", tc.cluster, loc, err, tc.want)
		}
	}
}

func TestParsePathTemplates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, err string }{
		{"clusters/{cluster}/apps/{name}", ""},
		{"", ""},
		{"clusters/{region}/apps", "unknown placeholder {region}"},
		{"../{name}", "want a relative path of plain segments"},
		{"a//{name}", "want a relative path of plain segments"},
	} {
		_, err := ParsePathTemplates(tc.in)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParsePathTemplates(%q) = %v, want %q", tc.in, err, tc.err)
		}
	}
	if d, ok := PathTemplate("clusters/{cluster}/{name}").Dir("", "shop", "api"); ok {
		t.Errorf("a template with {cluster} and no cluster expanded to %q", d)
	}
	if _, ok := PathTemplate("{namespace}/{name}").Dir("eu", "../x", "api"); ok {
		t.Error("a namespace of .. segments expanded")
	}
}

// FuzzPathTemplates: whatever the template and the values, an expanded
// directory is relative and never climbs out of the repository.
func FuzzPathTemplates(f *testing.F) {
	f.Add("clusters/{cluster}/apps/{name}", "eu-west", "shop", "api")
	f.Add("{namespace}/{name},apps/{name}", "", "../..", "a/b")
	f.Add("x/{name}{cluster}", ".", "shop", ".")
	f.Fuzz(func(t *testing.T, tmpl, cluster, namespace, name string) {
		ts, err := ParsePathTemplates(tmpl)
		if err != nil {
			return
		}
		for _, tp := range ts {
			d, ok := tp.Dir(cluster, namespace, name)
			if !ok {
				continue
			}
			for _, seg := range strings.Split(d, "/") {
				if seg == ".." || seg == "." || seg == "" {
					t.Fatalf("template %q expanded to %q", tp, d)
				}
			}
		}
	})
}
