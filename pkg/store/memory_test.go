package store

import (
	"testing"
	"time"
)

func TestMemoryContract(t *testing.T) {
	t.Parallel()
	runContract(t, func(t *testing.T, now func() time.Time) fullStore { return NewMemory(now) })
}
