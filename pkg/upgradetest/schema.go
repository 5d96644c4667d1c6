package upgradetest

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the newest migration applied to the schema of url
// (pkg/store's goose table).
func SchemaVersion(t testing.TB, url string) int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v int64
	if err := conn.QueryRow(context.Background(), `SELECT max(version_id) FROM kubecrew_schema_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// NewestMigration is the version of the newest migration file under root
// (pkg/store/migrations): the schema this tree's binaries migrate to.
func NewestMigration(t testing.TB, root string) int64 {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(root, "pkg/store/migrations/*.sql"))
	if err != nil || len(ms) == 0 {
		t.Fatalf("no migrations under %s: %v", root, err)
	}
	sort.Strings(ms)
	var v int64
	if _, err := fmt.Sscanf(filepath.Base(ms[len(ms)-1]), "%05d_", &v); err != nil {
		t.Fatal(err)
	}
	return v
}
