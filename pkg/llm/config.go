package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// DefaultTimeout is the per-attempt timeout when Config.Timeout is zero.
const DefaultTimeout = 300 * time.Second

// Endpoint is one OpenAI-compatible API: a base URL ending in /v1, a key, and
// the model to ask there. Its key is redacted when formatted or logged.
type Endpoint struct {
	Name    string // e.g. "primary", "fallback"; defaulted from the position
	BaseURL string // e.g. https://api.openai.com/v1, http://ollama:11434/v1
	APIKey  string `json:"-"` // sent as "Authorization: Bearer <key>"; may be empty
	Model   string
}

// String prints the endpoint without its key.
func (e Endpoint) String() string {
	return fmt.Sprintf("%s (%s, model %s, api key %s)", e.Name, redactURL(e.BaseURL), e.Model, keyState(e.APIKey))
}

// GoString keeps %#v from printing the key.
func (e Endpoint) GoString() string { return "llm.Endpoint{" + e.String() + "}" }

// MarshalJSON keeps JSON output (a config dump, /info) free of the key and
// of any password in the URL.
func (e Endpoint) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name    string `json:"name"`
		BaseURL string `json:"base_url"`
		Model   string `json:"model"`
		APIKey  string `json:"api_key"`
	}{e.Name, redactURL(e.BaseURL), e.Model, keyState(e.APIKey)})
}

// MarshalLogObject keeps zap.Any from printing the key.
func (e Endpoint) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("name", e.Name)
	enc.AddString("base_url", redactURL(e.BaseURL))
	enc.AddString("model", e.Model)
	enc.AddString("api_key", keyState(e.APIKey))
	return nil
}

func keyState(k string) string {
	if k == "" {
		return "unset"
	}
	return "set"
}

// Config configures a Client.
type Config struct {
	// Endpoints in order: the primary first, then fallbacks. An entry with
	// neither BaseURL nor Model (an unset fallback) is skipped; one with only
	// one of them is an error.
	Endpoints []Endpoint
	// Timeout bounds each attempt (LLM_TIMEOUT); a hang then fails over.
	// Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is the number of extra requests one call may make beyond
	// trying each endpoint once: 0 means the default, 1 (max_retries=1);
	// a negative value means none. Above 1 is rejected: retrying a
	// saturated gateway multiplies latency without adding resilience.
	MaxRetries int
	// Temperature sent when the request's Temperature is zero. Default 0.
	Temperature float32
	// MaxCompletionTokens caps each answer (AGENT_MAX_COMPLETION_TOKENS):
	// sent as max_tokens, or as max_completion_tokens where the endpoint
	// asks for it (maxtokens.go). Zero sends neither; a request that sets
	// its own keeps it.
	MaxCompletionTokens int
	// HTTPClient is optional; do not set its Timeout (Config.Timeout is per
	// attempt and applied through the context).
	HTTPClient *http.Client
	// Logger is optional (no-op when nil).
	Logger *zap.Logger
	// Observe, optional, is called once per attempt with the endpoint name,
	// the outcome (OutcomeOK or a Kind constant) and the attempt's duration.
	Observe func(endpoint, outcome string, d time.Duration)
}

// endpoint is a validated Endpoint with its own go-openai client.
type endpoint struct {
	Endpoint
	index int
	label string // name, redacted URL and model, for messages
}

func validate(cfg Config) ([]endpoint, int, time.Duration, error) {
	var eps []endpoint
	var problems []error
	seen := map[string]bool{}
	for i, e := range cfg.Endpoints {
		e.BaseURL = strings.TrimSpace(e.BaseURL)
		e.Model = strings.TrimSpace(e.Model)
		if e.BaseURL == "" && e.Model == "" {
			continue // an unset fallback
		}
		pos := len(eps)
		if e.Name == "" {
			e.Name = defaultName(pos)
		}
		switch {
		case seen[e.Name]:
			problems = append(problems, fmt.Errorf("endpoint %d: duplicate name %q", i, e.Name))
		case e.BaseURL == "":
			problems = append(problems, fmt.Errorf("endpoint %s: model %q is set but the base URL is empty (set %s)", e.Name, e.Model, envName(pos, "BASE_URL")))
		case e.Model == "":
			problems = append(problems, fmt.Errorf("endpoint %s: base URL %s is set but the model is empty (set %s)", e.Name, redactURL(e.BaseURL), modelEnv(pos)))
		case strings.EqualFold(e.Model, "none"):
			problems = append(problems, fmt.Errorf("endpoint %s: model \"none\" means deterministic mode: do not build a model client", e.Name))
		default:
			if err := checkURL(e.BaseURL); err != nil {
				problems = append(problems, fmt.Errorf("endpoint %s: %w (set %s)", e.Name, err, envName(pos, "BASE_URL")))
			}
		}
		seen[e.Name] = true
		eps = append(eps, endpoint{
			Endpoint: e,
			index:    pos,
			label:    fmt.Sprintf("%s (%s, model %s)", e.Name, redactURL(e.BaseURL), e.Model),
		})
	}
	if len(eps) == 0 && len(problems) == 0 {
		problems = append(problems, errors.New("no endpoint: set LLM_BASE_URL and AGENT_MODEL"))
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = 1
	case retries < 0:
		retries = 0
	case retries > 1:
		problems = append(problems, fmt.Errorf("max retries %d: at most 1 is allowed (a retry of a saturated gateway adds latency, not resilience; fallbacks are the resilience)", retries))
	}
	timeout := cfg.Timeout
	switch {
	case timeout == 0:
		timeout = DefaultTimeout
	case timeout < 0:
		problems = append(problems, fmt.Errorf("timeout %s: must be positive (LLM_TIMEOUT)", timeout))
	}
	if cfg.HTTPClient != nil && cfg.HTTPClient.Timeout > 0 && cfg.HTTPClient.Timeout < timeout {
		problems = append(problems, fmt.Errorf("HTTP client timeout %s is shorter than the per-attempt timeout %s: leave it zero", cfg.HTTPClient.Timeout, timeout))
	}
	if len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.Error()
		}
		return nil, 0, 0, fmt.Errorf("llm config: %s", strings.Join(msgs, "; "))
	}
	return eps, retries, timeout, nil
}

func defaultName(pos int) string {
	switch pos {
	case 0:
		return "primary"
	case 1:
		return "fallback"
	}
	return fmt.Sprintf("fallback-%d", pos)
}

// envName names the environment variable that configures a field of the
// endpoint at position pos (primary: LLM_*, first fallback: LLM_FALLBACK_*).
func envName(pos int, field string) string {
	if pos == 0 {
		return "LLM_" + field
	}
	return "LLM_FALLBACK_" + field
}

func modelEnv(pos int) string {
	if pos == 0 {
		return "AGENT_MODEL"
	}
	return "LLM_FALLBACK_MODEL"
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the raw URL, which may hold a password
		}
		return fmt.Errorf("base URL is not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("base URL %s: scheme must be http or https", redactURL(raw))
	}
	if u.Host == "" {
		return fmt.Errorf("base URL %s: no host", redactURL(raw))
	}
	return nil
}

// redactURL drops a password in the URL's user info and any query string
// (some gateways take a key there).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	if u.RawQuery != "" {
		u.RawQuery = "redacted"
	}
	return u.Redacted()
}
