package store

import (
	"strings"
	"unicode/utf8"
)

// MaxMemoryBytes caps one agent memory file.
const MaxMemoryBytes = 64 << 10

// maxMemoryName caps the <name> part of /memories/<name>.md.
const maxMemoryName = 128

// ValidateMemoryPath checks an agent memory path: /memories/<name>.md where
// name matches [a-z0-9][a-z0-9._-]* and holds no "..". Both stores and the
// memory_read/memory_write tools call it, so a path the tool accepts is a
// path the store accepts.
func ValidateMemoryPath(path string) error {
	const prefix, suffix = "/memories/", ".md"
	if !strings.HasPrefix(path, prefix) || !strings.HasSuffix(path, suffix) || len(path) <= len(prefix)+len(suffix) {
		return invalidf("memory path %q must look like /memories/<name>.md", path)
	}
	name := path[len(prefix) : len(path)-len(suffix)]
	if len(name) > maxMemoryName {
		return invalidf("memory path %q: name longer than %d characters", path, maxMemoryName)
	}
	if strings.Contains(name, "..") {
		return invalidf("memory path %q must not contain \"..\"", path)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if i > 0 {
			ok = ok || c == '.' || c == '_' || c == '-'
		}
		if !ok {
			return invalidf("memory path %q: name must match [a-z0-9][a-z0-9._-]* (bad character %q at %d)", path, c, i)
		}
	}
	return nil
}

// ValidateMemoryContent checks a memory file's content: valid UTF-8, no NUL
// bytes, at most MaxMemoryBytes.
func ValidateMemoryContent(content string) error {
	if len(content) > MaxMemoryBytes {
		return invalidf("memory content is %d bytes, the limit is %d", len(content), MaxMemoryBytes)
	}
	if !utf8.ValidString(content) {
		return invalidf("memory content is not valid UTF-8")
	}
	if strings.IndexByte(content, 0) >= 0 {
		return invalidf("memory content contains a NUL byte")
	}
	return nil
}

func validateMemoryFile(f MemoryFile) error {
	if err := required("agent", f.Agent); err != nil {
		return err
	}
	if err := ValidateMemoryPath(f.Path); err != nil {
		return err
	}
	return ValidateMemoryContent(f.Content)
}
