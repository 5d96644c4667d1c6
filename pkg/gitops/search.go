package gitops

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// ToolSearchRepo is the grep-like search of the GitOps repository.
const ToolSearchRepo = "search_repo"

// Bounds of one search_repo call: files read, file size, lines shown and
// their length. The answer says when a bound cut it.
const (
	SearchMaxFiles     = 200
	SearchMaxFileBytes = 256 << 10
	SearchMaxMatches   = 40
	SearchMaxLineChars = 200
)

type searchArgs struct {
	Pattern string `json:"pattern" description:"RE2 regular expression matched per line, e.g. image: .*:latest or (?i)memory"`
	Dir     string `json:"dir,omitempty" description:"directory to search; empty: the whole repository"`
	Glob    string `json:"glob,omitempty" description:"only files whose name matches, e.g. *.yaml"`
}

func (s *Service) searchTool() tools.Tool {
	return tools.New(ToolSearchRepo,
		"Search the GitOps repository's files on the base branch for a pattern, like grep -rn: path:line: text, bounded.",
		false, func(ctx context.Context, a searchArgs) (string, error) {
			return Search(ctx, s.f, a.Pattern, a.Dir, a.Glob)
		})
}

// Search greps the files under dir (whose base name matches glob, when
// set) for pattern, line by line: "path:line: text", at most
// SearchMaxMatches lines of SearchMaxLineChars, reading at most
// SearchMaxFiles files and skipping larger or binary ones; the answer ends
// with what was searched and what a bound left out.
func Search(ctx context.Context, f Forge, pattern, dir, glob string) (string, error) {
	if strings.TrimSpace(pattern) == "" {
		return "", errors.New("pattern is required")
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("pattern is not a regular expression (RE2): %w", err)
	}
	if glob != "" {
		if _, err := path.Match(glob, ""); err != nil {
			return "", fmt.Errorf("glob %q: %w", glob, err)
		}
	}
	files, err := f.ListFiles(ctx, dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	shown, more, read, skipped := 0, 0, 0, 0
	for _, p := range files {
		if glob != "" {
			if ok, _ := path.Match(glob, path.Base(p)); !ok {
				continue
			}
		}
		if read == SearchMaxFiles {
			skipped++
			continue
		}
		read++
		data, err := f.ReadFile(ctx, p)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", p, err)
		}
		if len(data) > SearchMaxFileBytes || strings.IndexByte(string(data), 0) >= 0 {
			skipped++
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !re.MatchString(line) {
				continue
			}
			if shown == SearchMaxMatches {
				more++
				continue
			}
			shown++
			fmt.Fprintf(&b, "%s:%d: %s\n", p, i+1, cut(strings.TrimRight(line, "\r"), SearchMaxLineChars))
		}
	}
	if shown == 0 {
		fmt.Fprintf(&b, "No match for %q", pattern)
	} else {
		fmt.Fprintf(&b, "%d matching line(s)", shown+more)
	}
	fmt.Fprintf(&b, " in %d file(s) searched", read)
	if more > 0 {
		fmt.Fprintf(&b, "; %d more not shown (narrow dir, glob or pattern)", more)
	}
	if skipped > 0 {
		fmt.Fprintf(&b, "; %d file(s) not searched (over %d files, over %d KiB, or binary)", skipped, SearchMaxFiles, SearchMaxFileBytes>>10)
	}
	b.WriteString(".")
	return b.String(), nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
