package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citeOutside matches citations of documents a reader of the repository
// cannot open: the design notes and field report it was built from.
var citeOutside = regexp.MustCompile(`ARCHITECTURE §|(?i:seed)( [0-9]+)? ?§|(?i:seeds?/[0-9]{3}_)|\.\./shared/`)

// Comments and docs cite the repository's own documents (docs/MANUAL.md,
// docs/ARCHITECTURE.md), never ones outside it.
func TestNoCitationsOutsideTheRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "bin" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".yml", ".sh", ".env", "":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if loc := citeOutside.FindIndex(b); loc != nil && !strings.HasSuffix(path, "citations_test.go") {
			line := 1 + strings.Count(string(b[:loc[0]]), "\n")
			t.Errorf("%s:%d cites a document outside the repository: %q", path, line, b[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
