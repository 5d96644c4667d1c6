// Package logging is the one logger set-up of both binaries: JSON lines on
// w (stderr), an ISO 8601 "ts", at level, every line redacted (pkg/redact:
// a secret in an error message is not logged).
package logging

import (
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kubecrew/kubecrew/pkg/redact"
)

// New returns the JSON logger writing to w at level.
func New(w io.Writer, level zapcore.Level) *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(redact.NewWriter(w))), level))
}

// Level parses debug|info|warn|error; anything else is info (the
// binaries' configuration has refused it already).
func Level(s string) zapcore.Level {
	l, err := zapcore.ParseLevel(s)
	if err != nil {
		return zapcore.InfoLevel
	}
	return l
}
