package readiness

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestPublic: a caller without a token learns which dependency fails and
// each one's state in a word, never the error (it names hosts, users and
// databases), nor the details.
func TestPublic(t *testing.T) {
	checks := []Check{
		{Name: "store", Required: true, Probe: func(context.Context) Result {
			return Result{State: "postgres", Err: errors.New("dial tcp 10.1.2.3:5432: user=kcuser database=kcdb: refused")}
		}},
		{Name: "model", Required: false, Probe: func(context.Context) Result {
			return Result{State: "degraded: http://llm.internal:11434 slow", Detail: map[string]string{"endpoint": "http://llm.internal:11434"}}
		}},
	}
	code, body := Evaluate(context.Background(), checks)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("code %d", code)
	}
	pub := Public(body)
	raw, _ := json.Marshal(pub)
	for _, leak := range []string{"10.1.2.3", "kcuser", "kcdb", "llm.internal", "details"} {
		if strings.Contains(string(raw), leak) {
			t.Errorf("the public answer shows %q: %s", leak, raw)
		}
	}
	if pub["store"] != "unusable" || pub["model"] != "degraded" || pub["ready"] != false ||
		!strings.Contains(string(raw), `"failing":[{"dependency":"store","error":"unusable"}]`) || !strings.Contains(pub["error"].(string), "store unusable") {
		t.Errorf("public answer %s", raw)
	}
	if _, ok := Evaluate(context.Background(), checks[1:]); Public(ok)["error"] != nil {
		t.Error("a ready answer gains an error")
	}
}
