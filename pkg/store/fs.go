package store

import (
	"fmt"
	"io/fs"
)

func fsSub(fsys fs.FS, dir string) (fs.FS, error) {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("postgres: embedded migrations: %w", err)
	}
	return sub, nil
}
