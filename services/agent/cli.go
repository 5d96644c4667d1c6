package main

import (
	"io"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/buildinfo"
	"github.com/kubecrew/kubecrew/pkg/logging"
)

const usage = `agent — one kubecrew agent; AGENT_PERSONA picks the persona (noor, sol, vera, dax, ada or the slug).
Usage: agent [--help | --version]. The configuration is the environment: built-in default < the persona's
agent.env < the process environment (GET /info shows each value and where it came from).`

func version() string { return buildinfo.Version + " (" + buildinfo.Revision() + ")" }

// NewLogger returns the JSON logger writing to w at level.
func NewLogger(w io.Writer, level string) *zap.Logger { return logging.New(w, logging.Level(level)) }
