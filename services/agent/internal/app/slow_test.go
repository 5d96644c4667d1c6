package app_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/api/apitest"
	"github.com/kubecrew/kubecrew/services/agent/internal/app"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
)

// TestSlowClientsAreCut (docs/MANUAL.md, "Authentication"): the agent's server
// cuts a client that dribbles its headers or its body, one that sits idle
// between requests, and refuses headers past the limit; the timeouts are
// shortened here, the defaults are api.DefaultTimeouts. Issue #31: the
// agent had no read timeout, and 2,000 connections sending a body one
// byte every 5s without a token were all open after 100s.
func TestSlowClientsAreCut(t *testing.T) {
	short := api.Timeouts{ReadHeader: 300 * time.Millisecond, Read: 500 * time.Millisecond, Write: 2 * time.Second,
		Idle: 300 * time.Millisecond, MaxHeaderBytes: 4 << 10}
	cfg, err := config.Load(envOf(map[string]string{"AGENT_PERSONA": "ada", "AGENT_TOOLS": "load_skill", "AUTH_TOKEN": "slow-test-token"}), app.LoadPersona)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, app.Options{Timeouts: &short})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	addr := ln.Addr().String()
	const within = 10 * time.Second // far past every timeout above
	for _, tc := range []struct {
		name string
		d    apitest.Dribble
		want string // in what the server answered before closing ("" any)
	}{
		{"headers dribbled", apitest.Dribble{Prefix: "GET /health HTTP/1.1\r\nHost: a\r\n", Drip: "X-Slow: aaaaaaaa\r\n", Every: 50 * time.Millisecond}, ""},
		{"body dribbled without a token", apitest.Dribble{Prefix: "POST /run HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", Drip: " ", Every: 50 * time.Millisecond}, "401"},
		{"body dribbled with the token", apitest.Dribble{Prefix: "POST /run HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer slow-test-token\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", Drip: " ", Every: 50 * time.Millisecond}, ""},
		{"MCP body dribbled", apitest.Dribble{Prefix: "POST /mcp HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer slow-test-token\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{", Drip: " ", Every: 50 * time.Millisecond}, ""},
		{"idle after a request", apitest.Dribble{Prefix: "GET /health HTTP/1.1\r\nHost: a\r\n\r\n"}, "200 OK"},
		{"headers past the limit", apitest.Dribble{Prefix: "GET /health HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n"}, "431"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := apitest.AssertCut(t, addr, tc.d, within)
			if !strings.Contains(got, tc.want) {
				t.Errorf("answer before the cut = %.200q, want %q in it", got, tc.want)
			}
		})
	}
}
