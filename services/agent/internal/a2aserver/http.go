package a2aserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/a2aproject/a2a-go/a2asrv"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/agent/internal/server"
)

// InvokeHandler is POST /invoke: the SDK's JSON-RPC transport over our
// handler, behind a body bound (the SDK reads whatever it is sent).
func (s *Service) InvokeHandler() http.Handler {
	rpc := a2asrv.NewJSONRPCHandler(handler{s})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, server.MaxBodyBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				writeRPCError(w, http.StatusRequestEntityTooLarge, -32600, "Invalid Request",
					fmt.Sprintf("request body larger than %d bytes", server.MaxBodyBytes))
				return
			}
			writeRPCError(w, http.StatusBadRequest, -32700, "Parse error", "reading the request body: "+err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		// The SDK writes JSON without a content type; message/stream sets
		// text/event-stream over this.
		w.Header().Set("Content-Type", "application/json")
		rpc.ServeHTTP(w, r)
	})
}

// writeRPCError answers a JSON-RPC error the SDK never saw (id null: the
// request was not read).
func writeRPCError(w http.ResponseWriter, status, code int, msg, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": msg, "data": map[string]string{"error": detail}},
	})
}

// serveCard is GET /.well-known/agent-card.json (open, like /health).
func (s *Service) serveCard(w http.ResponseWriter, r *http.Request) {
	url := s.o.PublicURL
	if url == "" {
		url = a2a.RequestBaseURL(r) + a2a.InvokePath
	}
	skills := make([]a2a.SkillInfo, 0, len(s.o.Persona.Skills))
	for _, sk := range s.o.Persona.Skills {
		skills = append(skills, a2a.SkillInfo{Name: sk.Name, Description: sk.Description})
	}
	card := a2a.Card(a2a.CardInfo{
		Name: s.cardName(), Slug: s.self.Slug, Description: s.cardDescription(), URL: url,
		Version: s.o.Version, Skills: skills, Bearer: s.o.Token != "",
	})
	server.WriteJSON(w, http.StatusOK, card)
}

// serveLog is GET /a2a/log?limit=&cursor=: this agent's audit entries,
// newest first.
func (s *Service) serveLog(w http.ResponseWriter, r *http.Request) {
	p, ok := server.ParsePage(w, r)
	if !ok {
		return
	}
	es, next, err := s.o.Store.ListA2A(r.Context(), s.self.Slug, p)
	if errors.Is(err, store.ErrInvalid) {
		server.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err != nil {
		s.log.Warn("reading the a2a log", zap.Error(err))
		server.WriteError(w, http.StatusInternalServerError, "reading the A2A log: "+err.Error())
		return
	}
	server.WriteJSON(w, http.StatusOK, a2a.AuditPageOf(es, next))
}
