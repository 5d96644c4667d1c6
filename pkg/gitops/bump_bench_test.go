package gitops

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkBumpMemory edits the last of 500 Deployments in one file.
func BenchmarkBumpMemory(b *testing.B) {
	var sb strings.Builder
	for i := range 500 {
		fmt.Fprintf(&sb, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-%d\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          resources:\n            limits: {cpu: 100m, memory: 256Mi}\n", i)
	}
	src := []byte(sb.String())
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, _, _, err := BumpMemory(src, "Deployment", "app-499", "app", 0); err != nil {
			b.Fatal(err)
		}
	}
}
