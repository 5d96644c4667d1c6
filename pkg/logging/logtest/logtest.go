// Package logtest holds a log sink tests read: what the binaries' logger
// (logging.New) wrote, redaction included.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer safe for concurrent writes, read with String.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
