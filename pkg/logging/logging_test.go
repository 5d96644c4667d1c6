package logging

import (
	"bytes"
	"encoding/json"
	"testing"

	"go.uber.org/zap/zapcore"
)

func TestJSONLinesAtLevel(t *testing.T) {
	var b bytes.Buffer
	log := New(&b, Level("warn"))
	log.Info("hidden")
	log.Warn("shown")
	var line map[string]any
	if err := json.Unmarshal(b.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", b.String(), err)
	}
	if line["msg"] != "shown" || line["level"] != "warn" || line["ts"] == nil {
		t.Errorf("line = %v", line)
	}
	if Level("nonsense") != zapcore.InfoLevel || Level("debug") != zapcore.DebugLevel {
		t.Error("Level")
	}
}
