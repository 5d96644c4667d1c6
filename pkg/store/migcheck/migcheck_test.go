package migcheck

import (
	"fmt"
	"strings"
	"testing"
)

// base is the schema every case migrates from.
const base = `-- +goose Up
CREATE TABLE t (
    id   text PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('a', 'b')),
    n    integer,
    CONSTRAINT t_state CHECK (state IN ('open', 'closed'))
);
-- +goose Down
DROP TABLE t;
`

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sql  string
		// want: one "line: rule fragment" per refusal, "step line: reason"
		// per contract step, refusals first, each in line order.
		want []string
	}{
		// Additive: nothing to say.
		{"new table, index, nullable and defaulted columns", `-- +goose Up
CREATE TABLE u (id text PRIMARY KEY, v text NOT NULL);
CREATE INDEX t_n ON t (n);
CREATE UNIQUE INDEX u_v ON u (v);
ALTER TABLE t ADD COLUMN note text;
ALTER TABLE t ADD COLUMN count integer NOT NULL DEFAULT 1 CHECK (count >= 1);
ALTER TABLE t ADD COLUMN at timestamptz, ALTER COLUMN n SET DEFAULT 0, ALTER COLUMN n DROP NOT NULL;
ALTER TABLE u DROP COLUMN v; -- the table is new: no version uses it yet
UPDATE t SET note = '';
-- +goose Down
DROP TABLE u;
ALTER TABLE t DROP COLUMN note;
`, nil},
		{"a check widened", `-- +goose Up
ALTER TABLE t DROP CONSTRAINT t_kind_check;
ALTER TABLE t ADD CONSTRAINT t_kind_check CHECK (kind IN ('a', 'b', 'c'));
ALTER TABLE t DROP CONSTRAINT t_state, ADD CONSTRAINT t_state CHECK (state IN ('closed', 'open', 'stale'));
`, nil},
		{"semicolons and keywords in strings, comments and dollar quotes", `-- +goose Up
-- DROP TABLE t; is only a comment
/* ALTER TABLE t DROP COLUMN n; */
INSERT INTO t (id, kind) VALUES ('x; DROP TABLE t', 'a');
CREATE FUNCTION f() RETURNS trigger AS $body$ BEGIN DELETE FROM t; RETURN NULL; END $body$ LANGUAGE plpgsql;
`, nil},
		{"the Down section is not judged", `-- +goose Up
CREATE INDEX t_kind ON t (kind);
-- +goose Down
DROP INDEX t_kind;
`, nil},

		// Destructive: refused, with the line.
		{"drops", `-- +goose Up
DROP TABLE t;
DROP INDEX t_n;
ALTER TABLE t DROP COLUMN n;
ALTER TABLE t DROP n;
`, []string{"2: DROP TABLE removes", "3: DROP INDEX removes", "4: DROP removes", "5: DROP removes"}},
		{"renames", `-- +goose Up
ALTER TABLE t RENAME COLUMN n TO m;
ALTER TABLE t RENAME TO t2;
ALTER INDEX t_n RENAME TO t_m;
`, []string{"2: RENAME breaks", "3: RENAME breaks", "4: drops or renames"}},
		{"retype, NOT NULL, defaults", `-- +goose Up
ALTER TABLE t ALTER COLUMN n TYPE bigint;
ALTER TABLE t ALTER n SET DATA TYPE bigint;
ALTER TABLE t ALTER COLUMN n SET NOT NULL;
ALTER TABLE t
    ADD COLUMN owner text NOT NULL;
ALTER TABLE t ALTER COLUMN kind DROP DEFAULT;
`, []string{"2: TYPE changes", "3: TYPE changes", "4: SET NOT NULL", "5: NOT NULL without a DEFAULT", "7: DROP DEFAULT"}},
		{"narrowing constraints", `-- +goose Up
ALTER TABLE t ADD CONSTRAINT t_n_positive CHECK (n > 0);
ALTER TABLE t ADD CHECK (n > 0);
ALTER TABLE t ADD CONSTRAINT t_n_key UNIQUE (n);
ALTER TABLE t ADD COLUMN ref text REFERENCES t (id);
CREATE UNIQUE INDEX t_n_unique ON t (n);
ALTER TABLE t VALIDATE CONSTRAINT t_n_positive;
`, []string{"2: a new CHECK", "3: a new CHECK", "4: ADD UNIQUE", "5: PRIMARY KEY, UNIQUE or REFERENCES", "6: a unique index on an existing table", "7: VALIDATE CONSTRAINT"}},
		{"a check narrowed", `-- +goose Up
ALTER TABLE t DROP CONSTRAINT t_kind_check;
ALTER TABLE t ADD CONSTRAINT t_kind_check CHECK (kind IN ('a', 'c'));
`, []string{"2: DROP CONSTRAINT without adding the same check back", `3: narrows t_kind_check: drops "b"`}},
		{"a check dropped", `-- +goose Up
ALTER TABLE t DROP CONSTRAINT t_kind_check;
`, []string{"2: DROP CONSTRAINT without adding"}},
		{"a check replaced by one the checker cannot compare", `-- +goose Up
ALTER TABLE t DROP CONSTRAINT t_kind_check;
ALTER TABLE t ADD CONSTRAINT t_kind_check CHECK (kind <> '');
`, []string{"2: DROP CONSTRAINT without adding", "3: widening not shown"}},
		{"rows destroyed, privileges revoked", `-- +goose Up
DELETE FROM t WHERE n IS NULL;
TRUNCATE t;
REVOKE SELECT ON t FROM kubecrew;
`, []string{"2: DELETE destroys", "3: TRUNCATE destroys", "4: REVOKE"}},
		{"unknown statements are not assumed additive", `-- +goose Up
ALTER TABLE t SET LOGGED;
VACUUM t;
`, []string{"2: ALTER TABLE action not known", "3: not a statement the checker knows"}},

		// The allowlist: a contract step, marked with its reason.
		{"a marked contract step", `-- +goose Up
-- contract-step: nothing reads t.n since 00002's release; the previous version pinned in hack/upgrade/previous does not
ALTER TABLE t DROP COLUMN n;
`, []string{"step 3: nothing reads t.n since 00002's release; the previous version pinned in hack/upgrade/previous does not"}},
		{"a marked dropped constraint", `-- +goose Up
-- contract-step: no version writes kind any more
ALTER TABLE t DROP CONSTRAINT t_kind_check;
`, []string{"step 3: no version writes kind any more"}},
		{"a mark without its reason", `-- +goose Up
-- contract-step:
ALTER TABLE t DROP COLUMN n;
`, []string{"3: a contract-step mark needs its reason"}},
		{"a mark on what the contract allows", `-- +goose Up
-- contract-step: not needed
CREATE INDEX t_n ON t (n);
`, []string{"3: marked a contract step, but the contract allows it"}},
		{"a mark covers the next statement only", `-- +goose Up
-- contract-step: n is unused
ALTER TABLE t DROP COLUMN n;
ALTER TABLE t DROP COLUMN kind;
`, []string{"4: DROP removes", "step 3: n is unused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			refused, steps, err := Check([]File{{"00002_change.sql", tt.sql}, {"00001_init.sql", base}}, 1)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range refused {
				got = append(got, fmt.Sprintf("%d: %s", f.Line, f.Rule))
			}
			for _, f := range steps {
				got = append(got, fmt.Sprintf("step %d: %s", f.Line, f.Reason))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d findings, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w[:strings.Index(w, ":")+1]) || !strings.Contains(got[i], w[strings.Index(w, ":")+2:]) {
					t.Errorf("finding %d = %q, want %q", i, got[i], w)
				}
			}
		})
	}
}

// The baseline's migrations are read, not judged: the check they define
// is what a later migration may widen.
func TestCheckBaseline(t *testing.T) {
	t.Parallel()
	widen := "-- +goose Up\nALTER TABLE t DROP CONSTRAINT t_kind_check;\nALTER TABLE t ADD CONSTRAINT t_kind_check CHECK (kind IN ('a', 'b', 'c'));\n"
	narrow := "-- +goose Up\nALTER TABLE t DROP CONSTRAINT t_kind_check;\nALTER TABLE t ADD CONSTRAINT t_kind_check CHECK (kind IN ('c'));\n"
	files := []File{{"00001_init.sql", base}, {"00002_widen.sql", widen}, {"00003_narrow.sql", narrow}}
	for _, tt := range []struct {
		baseline, refused int
	}{{0, 2}, {2, 2}, {3, 0}} {
		refused, _, err := Check(files, tt.baseline)
		if err != nil {
			t.Fatal(err)
		}
		if len(refused) != tt.refused {
			t.Errorf("baseline %d: %d refused, want %d: %v", tt.baseline, len(refused), tt.refused, refused)
		}
	}
	if _, _, err := Check([]File{{"init.sql", base}}, 0); err == nil || !strings.Contains(err.Error(), "init.sql: a migration's name starts with its version") {
		t.Errorf("a name without a version: %v", err)
	}
}
