package main

import (
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kubecrew/kubecrew/pkg/buildinfo"
	"github.com/kubecrew/kubecrew/pkg/redact"
)

const usage = `agent — one kubecrew agent; AGENT_PERSONA picks the persona (noor, sol, vera, dax, ada or the slug).
Usage: agent [--help | --version]. The configuration is the environment: built-in default < the persona's
agent.env < the process environment (GET /info shows each value and where it came from).`

func version() string { return buildinfo.Version + " (" + buildinfo.Revision() + ")" }

// NewLogger returns a JSON zap logger writing to w at level.
func NewLogger(w io.Writer, level string) *zap.Logger {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		lvl = zapcore.InfoLevel
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(redact.NewWriter(w)), lvl)
	return zap.New(core)
}
