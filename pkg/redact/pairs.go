package redact

import (
	"strings"
)

// findPairs finds the value of every name=value or name: value pair
// whose name looks secret (SecretName): "password=hunter2", `"token": "…"`,
// "AccountKey=…;" in an Azure connection string, "DB_PASSWORD=…" in env
// output. A quoted value is replaced inside its quotes; an unquoted one up
// to the next space or separator.
func findPairs(s, lower string) []span {
	var out []span
	for i := 0; i < len(s); {
		j := strings.IndexAny(s[i:], "=:")
		if j < 0 {
			break
		}
		sep := i + j
		i = sep + 1
		ns, ne := nameBefore(s[:sep])
		if ne <= ns || !mayBeSecretName(lower[ns:ne]) || !SecretName(s[ns:ne]) {
			continue
		}
		vs, ve := valueAfter(s, sep+1)
		if ve <= vs {
			continue
		}
		i = ve
		if !isMarker(s[vs:ve]) {
			out = append(out, span{vs, ve, KindPair})
		}
	}
	return out
}

// nameBefore returns the bounds of the name that ends just before a separator: a run of
// letters, digits, '_', '-', '.', possibly closed by a quote and followed by
// spaces ("password", `"password"`, "password ").
func nameBefore(s string) (start, end int) {
	end = len(s)
	lo := max(0, end-256)
	for end > lo && (s[end-1] == ' ' || s[end-1] == '\t') {
		end--
	}
	if end > 0 && (s[end-1] == '"' || s[end-1] == '\'') {
		end--
	}
	start = end
	for start > lo && nameByte(s[start-1]) {
		start--
	}
	if end-start > 128 {
		return 0, 0
	}
	return start, end
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// mayBeSecretName (given the lower-cased name) is a cheap filter before SecretName: the name holds a
// fragment every secret-looking name has.
func mayBeSecretName(name string) bool {
	for _, f := range []string{"pass", "pwd", "secret", "token", "credential", "key", "conn", "signature"} {
		if strings.Contains(name, f) {
			return true
		}
	}
	return false
}

// valueAfter returns the bounds of the value that starts after a separator
// at i: spaces skipped; a quoted value to its closing quote (backslash
// escapes honoured, never past the line); an unquoted one to the next
// space or separator.
func valueAfter(s string, i int) (int, int) {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) {
		return i, i
	}
	if q := s[i]; q == '"' || q == '\'' {
		start := i + 1
		for k := start; k < len(s); k++ {
			switch s[k] {
			case '\\':
				k++
			case q:
				return start, k
			case '\n', '\r':
				return start, k
			}
		}
		return start, len(s)
	}
	start := i
	for i < len(s) && !valueEnd(s[i]) {
		i++
	}
	return start, i
}

func valueEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ';', '&', '"', '\'', '}', ')', '<', '>', '\\':
		return true
	}
	return false
}
