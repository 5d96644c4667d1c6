package store

import (
	"io/fs"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/store/migcheck"
)

// contractBaseline is the last migration the compatibility contract does
// not judge: 00001 created the schema, with no earlier version to keep
// working. Every later migration is expand-only (docs/ARCHITECTURE.md,
// "Upgrades"), or a marked contract step.
const contractBaseline = 1

// TestMigrationsKeepTheContract fails on a destructive statement in an Up
// migration after the baseline: the previous version, still running beside
// the new one during a rolling upgrade, would break on it.
func TestMigrationsKeepTheContract(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var files []migcheck.File
	for _, n := range names {
		b, err := fs.ReadFile(migrations, n)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, migcheck.File{Name: n[len("migrations/"):], SQL: string(b)})
	}
	if len(files) <= contractBaseline {
		t.Fatalf("%d migrations: nothing after the baseline %d to judge", len(files), contractBaseline)
	}
	refused, steps, err := migcheck.Check(files, contractBaseline)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range steps {
		t.Logf("pkg/store/migrations/%s", f)
	}
	for _, f := range refused {
		t.Errorf("pkg/store/migrations/%s\n\tadd instead, and drop in a later release once no running version needs it (mark it -- %s <why>)", f, migcheck.StepMark)
	}
}
