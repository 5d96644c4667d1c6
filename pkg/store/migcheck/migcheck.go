// Package migcheck enforces the migrations' compatibility contract
// (docs/ARCHITECTURE.md, "Upgrades"): a migration is expand-only, so the
// previous version keeps working on the migrated schema while both run
// side by side. It may add tables, nullable or defaulted columns, indexes,
// and widen a check; it may not drop, rename, retype, add NOT NULL to an
// existing column, or narrow what an old version may write. Those are
// contract steps, allowed only when marked "-- contract-step: <why>" in a
// release after which no running version needs what they remove.
package migcheck

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// File is one migration: its file name (NNNNN_name.sql, the version
// first) and its content.
type File struct {
	Name string
	SQL  string
}

// Finding is a statement the contract refuses (Rule says why), or a
// marked contract step (Step, with the mark's Reason).
type Finding struct {
	File      string
	Line      int
	Statement string
	Rule      string
	Step      bool
	Reason    string
}

func (f Finding) String() string {
	if f.Step {
		return fmt.Sprintf("%s:%d: contract step (%s): %s", f.File, f.Line, f.Reason, f.Statement)
	}
	return fmt.Sprintf("%s:%d: %s: %s", f.File, f.Line, f.Rule, f.Statement)
}

// Version is the number a migration's file name starts with.
func Version(name string) (int, error) {
	digits, _, ok := strings.Cut(name, "_")
	n, err := strconv.Atoi(digits)
	if !ok || err != nil {
		return 0, fmt.Errorf("%s: a migration's name starts with its version and an underscore", name)
	}
	return n, nil
}

// inList is a check constraint of the form CHECK (column IN ('a', …)).
type inList struct {
	column string
	values []string
}

// Check judges the Up sections of files (in any order; they are read by
// version) whose version is above baseline. The earlier ones are read for
// what they define (the check constraints a later one may widen). It
// returns what the contract refuses and the marked contract steps.
func Check(files []File, baseline int) (refused, steps []Finding, err error) {
	files = slices.Clone(files)
	versions := map[string]int{}
	for _, f := range files {
		v, err := Version(f.Name)
		if err != nil {
			return nil, nil, err
		}
		versions[f.Name] = v
	}
	slices.SortFunc(files, func(a, b File) int { return versions[a.Name] - versions[b.Name] })
	checks := map[string]inList{} // "table.constraint" → its IN list
	for _, f := range files {
		c := &checker{file: f.Name, checks: checks, created: map[string]bool{}, dropped: map[string]statement{}}
		up, first := upSection(f.SQL)
		for _, st := range split(up, first) {
			c.statement(st)
		}
		c.finish()
		if versions[f.Name] <= baseline {
			continue
		}
		refused = append(refused, c.refused...)
		steps = append(steps, c.steps...)
	}
	return refused, steps, nil
}

// checker reads one migration.
type checker struct {
	file    string
	checks  map[string]inList
	created map[string]bool      // tables created by this migration
	dropped map[string]statement // "table.constraint" dropped, not yet added back wider
	refused []Finding
	steps   []Finding
	marks   []statement // statements marked contract steps
	cur     statement
}

// refuse records that the current statement breaks the contract, unless it
// is marked a contract step.
func (c *checker) refuse(rule string) {
	c.refuseAt(Finding{File: c.file, Line: c.cur.line, Statement: abbrev(c.cur.text), Rule: rule}, c.cur)
}

func (c *checker) refuseAt(f Finding, st statement) {
	if st.marked {
		if st.reason == "" {
			f.Rule = "a contract-step mark needs its reason (-- " + StepMark + " <why no running version needs this>)"
			c.refused = append(c.refused, f)
			return
		}
		f.Step, f.Reason = true, st.reason
		c.steps = append(c.steps, f)
		return
	}
	c.refused = append(c.refused, f)
}

var (
	reCreateTable = regexp.MustCompile(`(?i)^CREATE (?:(?:GLOBAL |LOCAL )?(?:TEMP|TEMPORARY|UNLOGGED) )?TABLE (?:IF NOT EXISTS )?([^\s(]+)\s*\((.*)\)`)
	reCreateIndex = regexp.MustCompile(`(?i)^CREATE (UNIQUE )?INDEX .*?\bON (?:ONLY )?([^\s(]+)`)
	reAlterTable  = regexp.MustCompile(`(?i)^ALTER TABLE (?:IF EXISTS )?(?:ONLY )?([^\s]+) (.*)$`)
	reFirstWords  = regexp.MustCompile(`(?i)^([A-Z]+)(?: ([A-Z]+))?`)
	reWord        = func(w string) *regexp.Regexp { return regexp.MustCompile(`(?i)\b` + w + `\b`) }
	reRename      = reWord("RENAME")
	reDrop        = reWord("DROP")
)

// statement judges one statement.
func (c *checker) statement(st statement) {
	c.cur = st
	if st.marked {
		c.marks = append(c.marks, st)
	}
	m := reFirstWords.FindStringSubmatch(st.text)
	if m == nil {
		c.refuse("not a statement the checker knows to be additive")
		return
	}
	verb, object := strings.ToUpper(m[1]), strings.ToUpper(m[2])
	switch {
	case verb == "CREATE" && reCreateTable.MatchString(st.text):
		mm := reCreateTable.FindStringSubmatch(st.text)
		table := ident(mm[1])
		c.created[table] = true
		c.tableChecks(table, mm[2])
	case verb == "CREATE" && reCreateIndex.MatchString(st.text):
		mm := reCreateIndex.FindStringSubmatch(st.text)
		if mm[1] != "" && !c.created[ident(mm[2])] {
			c.refuse("a unique index on an existing table refuses rows an old version may write")
		}
	case verb == "CREATE" || verb == "INSERT" || verb == "UPDATE" || verb == "COMMENT" || verb == "GRANT" ||
		verb == "SELECT" || verb == "SET" || verb == "ANALYZE":
		// New objects, backfills, comments, grants: additive.
	case verb == "ALTER" && object == "TABLE":
		c.alterTable(st)
	case verb == "ALTER" && (reDrop.MatchString(st.text) || reRename.MatchString(st.text)):
		c.refuse("drops or renames what an old version may use")
	case verb == "ALTER":
		// ALTER TYPE … ADD VALUE, ALTER SEQUENCE …: additive.
	case verb == "DROP":
		c.refuse("DROP " + object + " removes what an old version may use")
	case verb == "DELETE" || verb == "TRUNCATE":
		c.refuse(verb + " destroys rows")
	case verb == "REVOKE":
		c.refuse("REVOKE takes away what an old version may use")
	default:
		c.refuse("not a statement the checker knows to be additive")
	}
}

// alterTable judges each action of an ALTER TABLE.
func (c *checker) alterTable(st statement) {
	m := reAlterTable.FindStringSubmatch(st.text)
	if m == nil {
		c.refuse("not an ALTER TABLE the checker can read")
		return
	}
	table := ident(m[1])
	if c.created[table] {
		return // created by this migration: no version uses it yet
	}
	for _, action := range topLevel(m[2], ',') {
		c.action(table, action)
	}
}

var (
	reAddConstraint  = regexp.MustCompile(`(?i)^ADD (?:CONSTRAINT ([^\s]+) )?(CHECK|UNIQUE|PRIMARY KEY|FOREIGN KEY|EXCLUDE)\b\s*(.*)$`)
	reAddColumn      = regexp.MustCompile(`(?i)^ADD (?:COLUMN )?(?:IF NOT EXISTS )?([^\s]+) (.*)$`)
	reDropConstraint = regexp.MustCompile(`(?i)^DROP CONSTRAINT (?:IF EXISTS )?([^\s]+)`)
	reAlterColumn    = regexp.MustCompile(`(?i)^ALTER (?:COLUMN )?([^\s]+) (.*)$`)
	reRenameAction   = regexp.MustCompile(`(?i)^RENAME\b`)
	reNotNull        = regexp.MustCompile(`(?i)\bNOT NULL\b`)
	reDefault        = regexp.MustCompile(`(?i)\bDEFAULT\b|\bGENERATED\b`)
	reNarrowing      = regexp.MustCompile(`(?i)\bPRIMARY KEY\b|\bUNIQUE\b|\bREFERENCES\b`)
	reAllowedAlter   = regexp.MustCompile(`(?i)^(SET DEFAULT|DROP NOT NULL|SET STATISTICS|SET STORAGE|SET COMPRESSION|SET \(|RESET \()`)
	reSafeAction     = regexp.MustCompile(`(?i)^(SET \(|RESET \(|OWNER TO|ENABLE |CLUSTER ON|SET WITHOUT CLUSTER|REPLICA IDENTITY)`)
)

// action judges one action of an ALTER TABLE on an existing table.
func (c *checker) action(table, a string) {
	switch {
	case reAddConstraint.MatchString(a):
		m := reAddConstraint.FindStringSubmatch(a)
		name, kind := ident(m[1]), strings.ToUpper(m[2])
		if kind != "CHECK" {
			c.refuse("ADD " + kind + " refuses rows an old version may write")
			return
		}
		c.addCheck(table, name, m[3])
	case reAddColumn.MatchString(a) && !strings.HasPrefix(strings.ToUpper(a), "ADD CONSTRAINT "):
		def := reAddColumn.FindStringSubmatch(a)[2]
		switch {
		case reNotNull.MatchString(def) && !reDefault.MatchString(def):
			c.refuse("ADD COLUMN … NOT NULL without a DEFAULT refuses an old version's inserts")
		case reNarrowing.MatchString(def):
			c.refuse("ADD COLUMN with PRIMARY KEY, UNIQUE or REFERENCES refuses rows an old version may write")
		}
	case reDropConstraint.MatchString(a):
		name := ident(reDropConstraint.FindStringSubmatch(a)[1])
		// Allowed only if this migration adds it back, wider (finish).
		c.dropped[table+"."+name] = c.cur
	case reRenameAction.MatchString(a):
		c.refuse("RENAME breaks an old version that uses the old name")
	case reAlterColumn.MatchString(a):
		rest := reAlterColumn.FindStringSubmatch(a)[2]
		up := strings.ToUpper(rest)
		switch {
		case strings.HasPrefix(up, "TYPE ") || strings.HasPrefix(up, "SET DATA TYPE "):
			c.refuse("ALTER COLUMN … TYPE changes what an old version reads and writes")
		case strings.HasPrefix(up, "SET NOT NULL"):
			c.refuse("SET NOT NULL refuses an old version's rows without the column")
		case strings.HasPrefix(up, "DROP DEFAULT"):
			c.refuse("DROP DEFAULT leaves an old version's inserts without the value")
		case reAllowedAlter.MatchString(rest):
		default:
			c.refuse("ALTER COLUMN action not known to be additive")
		}
	case strings.HasPrefix(strings.ToUpper(a), "DROP "):
		c.refuse("DROP removes what an old version may use")
	case strings.HasPrefix(strings.ToUpper(a), "VALIDATE CONSTRAINT"):
		c.refuse("VALIDATE CONSTRAINT narrows what the table holds")
	case strings.HasPrefix(strings.ToUpper(a), "SET SCHEMA"):
		c.refuse("SET SCHEMA moves the table away from an old version")
	case reSafeAction.MatchString(a):
	default:
		c.refuse("ALTER TABLE action not known to be additive")
	}
}

var reIn = regexp.MustCompile(`(?is)^\(\s*("?[a-z_][a-z0-9_$]*"?)\s+IN\s*\((.*)\)\s*\)$`)

// parseIn reads "(column IN ('a', 'b'))".
func parseIn(expr string) (inList, bool) {
	m := reIn.FindStringSubmatch(strings.TrimSpace(expr))
	if m == nil {
		return inList{}, false
	}
	l := inList{column: ident(m[1])}
	for _, v := range topLevel(m[2], ',') {
		if len(v) < 2 || v[0] != '\'' || v[len(v)-1] != '\'' {
			return inList{}, false
		}
		l.values = append(l.values, strings.ReplaceAll(v[1:len(v)-1], "''", "'"))
	}
	return l, true
}

// addCheck judges ADD CONSTRAINT name CHECK expr on an existing table: a
// new check narrows, unless it replaces one this migration dropped by the
// same name with an IN list over the same column that keeps every value.
func (c *checker) addCheck(table, name, expr string) {
	key := table + "." + name
	if _, dropped := c.dropped[key]; !dropped || name == "" {
		c.refuse("a new CHECK refuses rows an old version may write")
		return
	}
	old, known := c.checks[key]
	l, ok := parseIn(expr)
	switch {
	case !known || !ok:
		c.refuse("the replaced check is not an IN list over one column the checker can compare: widening not shown")
		return
	case l.column != old.column:
		c.refuse("the replaced check tests another column")
		return
	}
	for _, v := range old.values {
		if !slices.Contains(l.values, v) {
			c.refuse(fmt.Sprintf("narrows %s: drops %q, which an old version may write", name, v))
			return
		}
	}
	delete(c.dropped, key)
	c.checks[key] = l
}

// finish refuses the constraints dropped and not added back wider.
func (c *checker) finish() {
	for _, st := range c.dropped {
		c.cur = st
		c.refuse("DROP CONSTRAINT without adding the same check back, wider")
	}
	// A mark on a statement the contract allows would hide a later edit
	// that makes it destructive.
	for _, st := range c.marks {
		if !slices.ContainsFunc(c.steps, func(f Finding) bool { return f.Line == st.line }) &&
			!slices.ContainsFunc(c.refused, func(f Finding) bool { return f.Line == st.line }) {
			c.refused = append(c.refused, Finding{File: c.file, Line: st.line, Statement: abbrev(st.text),
				Rule: "marked a contract step, but the contract allows it: remove the mark"})
		}
	}
	slices.SortFunc(c.refused, func(a, b Finding) int { return a.Line - b.Line })
}

var (
	reColumnCheck = regexp.MustCompile(`(?is)^("?[a-z_][a-z0-9_$]*"?) .*?\bCHECK\s*(\(.*\))`)
	reNamedCheck  = regexp.MustCompile(`(?is)^CONSTRAINT ([^\s]+) CHECK\s*(\(.*\))`)
)

// tableChecks learns a new table's IN-list checks: a column's own check is
// named <table>_<column>_check, as Postgres names it.
func (c *checker) tableChecks(table, body string) {
	for _, def := range topLevel(body, ',') {
		if m := reNamedCheck.FindStringSubmatch(def); m != nil {
			if l, ok := parseIn(m[2]); ok {
				c.checks[table+"."+ident(m[1])] = l
			}
			continue
		}
		if m := reColumnCheck.FindStringSubmatch(def); m != nil {
			col := ident(m[1])
			if l, ok := parseIn(m[2]); ok && l.column == col {
				c.checks[table+"."+table+"_"+col+"_check"] = l
			}
		}
	}
}

// ident folds an unquoted identifier to lower case and unquotes a quoted
// one; a schema prefix is dropped.
func ident(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 && !strings.HasSuffix(s, `"`) {
		s = s[i+1:]
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return strings.ToLower(s)
}

// abbrev shortens a statement for a message.
func abbrev(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}
