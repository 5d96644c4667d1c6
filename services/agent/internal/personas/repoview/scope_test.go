package dax

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type repo []string

func (r repo) ListFiles(_ context.Context, dir string) ([]string, error) {
	var out []string
	for _, f := range r {
		if dir == "" || strings.HasPrefix(f, dir+"/") {
			out = append(out, f)
		}
	}
	return out, nil
}

func (repo) ReadFile(context.Context, string) ([]byte, error) {
	return nil, errors.New("not read here")
}

func TestScope(t *testing.T) {
	t.Parallel()
	r := repo{"apps/shop/Dockerfile", "apps/shop/cart.yaml", "apps/payments/api.yaml", ".github/workflows/deploy.yaml"}
	tests := []struct{ task, want string }{
		{"Review our deploy path.", ""},
		{"How should we promote image tags from staging to production?", ""},
		{"Review apps/shop please", "apps/shop"},
		{"Is apps/payments/api.yaml safe to deploy?", "apps/payments"},
		{"look at .github/workflows/", ".github/workflows"},
		{"check staging/production and then apps/shop/", "apps/shop"}, // a path with no files is not a scope
		{"see https://example.com/apps/shop", ""},
		{"../../etc/passwd", ""},
	}
	for _, tc := range tests {
		if got := Scope(context.Background(), r, tc.task); got != tc.want {
			t.Errorf("Scope(%q) = %q, want %q", tc.task, got, tc.want)
		}
	}
}
