package persona

import (
	"errors"
	"regexp"
	"strings"
)

// EnvVar is one agent.env setting and where it was written.
type EnvVar struct {
	Key   string
	Value string
	File  string
	Line  int
}

var envKeyRE = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// ParseEnv reads agent.env: one KEY=VALUE per line; blank lines and lines
// starting with # are skipped; spaces around KEY and VALUE are trimmed; a
// value in matching single or double quotes is taken verbatim without them;
// in an unquoted value, " #" starts a comment. Keys are upper case. A key set
// twice is an error (which one wins would be a guess). file is used in
// messages. All bad lines are reported together.
func ParseEnv(file string, data []byte) ([]EnvVar, error) {
	var (
		out   []EnvVar
		errs  []error
		first = map[string]int{}
	)
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		line := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		if i == 0 {
			line = strings.TrimPrefix(line, "\ufeff")
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || !envKeyRE.MatchString(key) {
			errs = append(errs, fileErr(file, n, "expected KEY=VALUE (KEY in upper case), got %q", clip(line, 60)))
			continue
		}
		value, err := envValue(strings.TrimSpace(value))
		if err != "" {
			errs = append(errs, fileErr(file, n, "%s: %s", key, err))
			continue
		}
		if prev, dup := first[key]; dup {
			errs = append(errs, fileErr(file, n, "%s is already set on line %d", key, prev))
			continue
		}
		first[key] = n
		out = append(out, EnvVar{Key: key, Value: value, File: file, Line: n})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// envValue unquotes v or strips its trailing comment; a non-empty problem
// string means v is malformed.
func envValue(v string) (string, string) {
	if v == "" {
		return "", ""
	}
	if q := v[0]; q == '"' || q == '\'' {
		end := strings.IndexByte(v[1:], q)
		if end < 0 {
			return "", "unterminated " + string(q) + " quote"
		}
		rest := strings.TrimSpace(v[end+2:])
		if rest != "" && !strings.HasPrefix(rest, "#") {
			return "", "unexpected text after the closing quote: " + rest
		}
		return v[1 : end+1], ""
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	if i := strings.Index(v, "\t#"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v, ""
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
