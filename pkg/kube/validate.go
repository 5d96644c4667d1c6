package kube

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// nameRE is the only shape a name or namespace slot accepts (RFC 1123
// subdomain, lower case). Anything else never reaches the API.
var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

const maxNameLen = 253

// reasonRE bounds an event reason slot: CamelCase words, as the API writes them.
var reasonRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// validName checks a required name-like slot.
func validName(field, v string) error {
	if v == "" {
		return fmt.Errorf("%s is required", field)
	}
	return validOptionalName(field, v)
}

// validOptionalName checks a slot that may be empty.
func validOptionalName(field, v string) error {
	if v == "" {
		return nil
	}
	if len(v) > maxNameLen || !nameRE.MatchString(v) {
		return fmt.Errorf("invalid %s %q: must match %s and be at most %d characters",
			field, safetext.Clean(v, 80), nameRE.String(), maxNameLen)
	}
	return nil
}

// parseSelector validates a label selector with the API's own parser and
// returns its canonical form, so only a parsed selector reaches the server.
func parseSelector(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if len(s) > 512 {
		return "", errors.New("invalid label_selector: longer than 512 characters")
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return "", fmt.Errorf("invalid label_selector %q: %s", safetext.Clean(s, 80), safetext.Clean(err.Error(), 200))
	}
	return sel.String(), nil
}

// parseSince parses a window such as "30m", "2h" or "1d" (days allowed),
// bounded to [1m, 7d]; empty gives def.
func parseSince(s string, def time.Duration) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	var d time.Duration
	var err error
	if strings.HasSuffix(s, "d") {
		var n int
		if _, serr := fmt.Sscanf(s, "%dd", &n); serr != nil || fmt.Sprintf("%dd", n) != s {
			return 0, fmt.Errorf("invalid since %q: use a duration like 30m, 2h or 1d", safetext.Clean(s, 40))
		}
		d = time.Duration(n) * 24 * time.Hour
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("invalid since %q: use a duration like 30m, 2h or 1d", safetext.Clean(s, 40))
	}
	if d < time.Minute || d > 7*24*time.Hour {
		return 0, fmt.Errorf("invalid since %q: must be between 1m and 7d", safetext.Clean(s, 40))
	}
	return d, nil
}

// bound clamps a requested count: 0 gives def, above max gives max.
func bound(n, def, max int) (int, error) {
	switch {
	case n < 0:
		return 0, fmt.Errorf("a count cannot be negative (%d)", n)
	case n == 0:
		return def, nil
	case n > max:
		return max, nil
	}
	return n, nil
}
