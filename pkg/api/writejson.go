package api

import (
	"encoding/json"
	"net/http"

	"github.com/kubecrew/kubecrew/pkg/redact"
)

// WriteJSON writes v as the JSON answer with status code: the one JSON
// writer of both services. HTML characters are not escaped (the bodies are
// JSON, not HTML); a write error means the client went away.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// WriteError writes the error answer {"error": msg} with status code. An
// error text quotes what failed (a URL, a setting), so msg passes the one
// redaction first (docs/MANUAL.md, "Redaction").
func WriteError(w http.ResponseWriter, code int, msg string) {
	msg, _ = redact.String(msg)
	WriteJSON(w, code, ErrorBody{Error: msg})
}
