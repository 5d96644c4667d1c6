package api

import "fmt"

// FileError is a problem at a line of a file the operator wrote (a persona
// file, PULSE.md, a routes file): "file:line: msg", or "file: msg" when
// the problem is the whole file (Line 0). Every such refusal in the
// repository is this one type.
type FileError struct {
	File string
	Line int
	Msg  string
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}
