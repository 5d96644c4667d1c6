package persona

import (
	"errors"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		wantName string
		ok       bool
	}{
		{"noor", "noor", true},
		{"platform-sre", "noor", true},
		{"Sol", "sol", true},
		{"k8s-engineer", "sol", true},
		{" VERA ", "vera", true},
		{"code-reviewer", "vera", true},
		{"dax", "dax", true},
		{"cicd-engineer", "dax", true},
		{"Ada", "ada", true},
		{"backend-architect", "ada", true},
		{"", "", false},
		{"agent-k8s-engineer", "", false},
		{"solo", "", false},
		{"noor ada", "", false},
	}
	for _, tc := range tests {
		got, ok := Lookup(tc.in)
		if ok != tc.ok || got.Name != tc.wantName {
			t.Errorf("Lookup(%q) = %+v, %v; want name %q, %v", tc.in, got, ok, tc.wantName, tc.ok)
		}
	}
}

func TestAllOrderAndUniqueness(t *testing.T) {
	t.Parallel()
	want := []Info{
		{"noor", "platform-sre"}, {"sol", "k8s-engineer"}, {"vera", "code-reviewer"},
		{"dax", "cicd-engineer"}, {"ada", "backend-architect"},
	}
	if len(All) != len(want) {
		t.Fatalf("All has %d personas, want %d", len(All), len(want))
	}
	for i, w := range want {
		if All[i] != w {
			t.Errorf("All[%d] = %+v, want %+v", i, All[i], w)
		}
	}
}

func TestResolveUnknownListsChoices(t *testing.T) {
	t.Parallel()
	_, err := Resolve("bob")
	if !errors.Is(err, ErrUnknownPersona) {
		t.Fatalf("err = %v, want ErrUnknownPersona", err)
	}
	for _, p := range All {
		if !strings.Contains(err.Error(), p.Name+" ("+p.Slug+")") {
			t.Errorf("error %q does not list %s (%s)", err, p.Name, p.Slug)
		}
	}
}
