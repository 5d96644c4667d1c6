package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/redact"
)

// maxResponseBytes bounds how much of an answer is read.
const maxResponseBytes = 32 << 20

// attemptState travels in the request context from Client.attempt to the
// wire doer: what to send, and whether anything was sent.
type attemptState struct {
	injectZeroTemperature bool // splice "temperature":0 into the body
	sent                  bool // the doer was called (go-openai validation passed)
	// reasoning holds, per choice, a "reasoning" text field (Ollama, vLLM
	// from 0.11) that go-openai does not decode; the client moves it to
	// ReasoningContent.
	reasoning []string
}

type attemptKey struct{}

// wireDoer is the go-openai HTTPDoer for one endpoint. It sends the request
// and classifies every answer that is not a well-formed 2xx JSON body into
// an *Error, so go-openai only ever decodes good answers and the status,
// content type and body are judged in one place.
type wireDoer struct {
	ep     *endpoint
	client *http.Client
}

func (w *wireDoer) Do(req *http.Request) (*http.Response, error) {
	st, _ := req.Context().Value(attemptKey{}).(*attemptState)
	if st != nil {
		st.sent = true
		if st.injectZeroTemperature && req.Body != nil {
			if err := spliceZeroTemperature(req); err != nil {
				return nil, &Error{Endpoint: w.ep.Name, Kind: KindInvalidRequest, Msg: redactKey(fmt.Sprintf("request not sent to %s: %v", w.ep.label, err), w.ep.APIKey), Err: redactCause(err)}
			}
		}
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if len(body) > maxResponseBytes {
		return nil, w.fail(resp.StatusCode, KindInvalidResponse, fmt.Sprintf("invalid response from %s: answer larger than %d MiB", w.ep.label, maxResponseBytes>>20))
	}
	if e := w.classify(resp, body); e != nil {
		return nil, e
	}
	body, err = normalizeCompletion(body)
	if err != nil {
		return nil, w.fail(resp.StatusCode, KindInvalidResponse, fmt.Sprintf("invalid response from %s: a chat completion in a shape no OpenAI-compatible server sends: %v", w.ep.label, err))
	}
	if st != nil {
		st.reasoning = reasoningFields(body)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// spliceZeroTemperature adds "temperature":0 to a JSON object body that has
// no temperature key (go-openai omits a zero temperature).
func spliceZeroTemperature(req *http.Request) error {
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return fmt.Errorf("reading request body: %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return fmt.Errorf("request body is not a JSON object: %w", err)
	}
	if _, ok := top["temperature"]; !ok {
		trimmed := bytes.TrimLeft(body, " \t\r\n")
		rest := bytes.TrimLeft(trimmed[1:], " \t\r\n") // after '{'
		sep := ","
		if len(rest) > 0 && rest[0] == '}' {
			sep = ""
		}
		body = append([]byte(`{"temperature":0`+sep), rest...)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}

func (w *wireDoer) fail(status int, kind, msg string) *Error {
	return &Error{Endpoint: w.ep.Name, Status: status, Kind: kind, Msg: redactKey(msg, w.ep.APIKey)}
}

// classify judges an HTTP answer; nil means a 2xx JSON body for go-openai.
func (w *wireDoer) classify(resp *http.Response, body []byte) *Error {
	code := resp.StatusCode
	label := w.ep.label
	if isHTML(resp.Header.Get("Content-Type"), body) {
		return w.fail(code, KindHTML, fmt.Sprintf(
			"%s answered an HTML page instead of JSON (HTTP %d%s): a proxy or gateway error page, or LLM_BASE_URL points at a web site",
			label, code, htmlTitle(body)))
	}
	detail := serverMessage(body)
	switch {
	case code >= 200 && code < 300:
		if !json.Valid(body) {
			return w.fail(code, KindInvalidResponse, fmt.Sprintf("invalid response from %s: HTTP %d body is not JSON: %s", label, code, snippet(body)))
		}
		if msg, ok := embeddedError(body); ok {
			return w.fail(code, KindInvalidResponse, fmt.Sprintf("invalid response from %s: HTTP %d carries an error body ({\"error\": …}) instead of a chat completion: %s", label, code, msg))
		}
		return nil
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return w.fail(code, KindAuth, fmt.Sprintf("authentication failed at %s: check %s (HTTP %d: %s)", label, envName(w.ep.index, "API_KEY"), code, detail))
	case code == http.StatusNotFound:
		return w.fail(code, KindNotFound, fmt.Sprintf("model or path not found at %s: check %s (should end in /v1) and %s (HTTP 404: %s)", label, envName(w.ep.index, "BASE_URL"), modelEnv(w.ep.index), detail))
	case code == http.StatusTooManyRequests:
		e := w.fail(code, KindRateLimited, fmt.Sprintf("rate limited by %s (HTTP 429: %s)", label, detail))
		e.RetryAfter = retryAfter(resp.Header, time.Now())
		return e
	case code == http.StatusRequestTimeout:
		return w.fail(code, KindTimeout, fmt.Sprintf("%s timed out upstream (HTTP 408: %s)", label, detail))
	case code >= 500:
		e := w.fail(code, KindHTTP5xx, fmt.Sprintf("server error from %s (HTTP %d: %s)", label, code, detail))
		if code == http.StatusServiceUnavailable {
			e.RetryAfter = retryAfter(resp.Header, time.Now())
		}
		return e
	case code >= 400:
		return w.fail(code, KindHTTP4xx, fmt.Sprintf("request rejected by %s (HTTP %d: %s)", label, code, detail))
	default:
		return w.fail(code, KindInvalidResponse, fmt.Sprintf("invalid response from %s: unexpected HTTP %d (%s)", label, code, detail))
	}
}

// isHTML: the body starts with '<', or the content type says HTML and the
// body is not JSON after all (a mislabelled JSON answer is still usable).
func isHTML(contentType string, body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n\ufeff")
	if len(t) > 0 && t[0] == '<' {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "text/html" || mt == "application/xhtml+xml") && !json.Valid(body)
}

var titleRE = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
var tagRE = regexp.MustCompile(`(?s)<[^>]*>`)

// htmlTitle gives `, "502 Bad Gateway"` from the page's title, or its first
// words of text.
func htmlTitle(body []byte) string {
	var text string
	if m := titleRE.FindSubmatch(body); m != nil {
		text = string(m[1])
	} else {
		text = tagRE.ReplaceAllString(string(body), " ")
	}
	text = oneLine(text, 80)
	if text == "" {
		return ""
	}
	return fmt.Sprintf(", %q", text)
}

// serverMessage extracts the error message of an OpenAI ({"error":{"message"}}),
// Ollama ({"error":"..."}) or generic ({"message"}) error body.
func serverMessage(body []byte) string {
	if msg, ok := embeddedError(body); ok {
		return msg
	}
	var generic struct {
		Message string `json:"message"`
		Detail  string `json:"detail"`
	}
	if json.Unmarshal(body, &generic) == nil {
		if generic.Message != "" {
			return oneLine(generic.Message, 300)
		}
		if generic.Detail != "" {
			return oneLine(generic.Detail, 300)
		}
	}
	return snippet(body)
}

// embeddedError finds a non-empty top-level "error" in a JSON body.
func embeddedError(body []byte) (string, bool) {
	var top struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &top) != nil || len(top.Error) == 0 || string(top.Error) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(top.Error, &s) == nil {
		return oneLine(s, 300), s != ""
	}
	var obj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	}
	if json.Unmarshal(top.Error, &obj) == nil {
		if obj.Message != "" {
			return oneLine(obj.Message, 300), true
		}
		return snippet(top.Error), true
	}
	return "", false
}

func snippet(body []byte) string {
	s := oneLine(string(body), 200)
	if s == "" {
		return "empty body"
	}
	return s
}

func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > limit {
		s = string(r[:limit]) + "…"
	}
	return s
}

// redactKey is every error text's one redaction: the API key a server
// echoed back, then what redact.String finds (the URL's userinfo and
// secret query parameters that net/http quotes in its errors, the
// process's secret settings). An *Error's Msg always passed it (docs/MANUAL.md,
// "Redaction").
func redactKey(s, key string) string {
	if len(key) >= 4 {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	s, _ = redact.String(s)
	return s
}

// redactCause redacts the URL a *url.Error quotes in place, so that the
// cause an *Error wraps (errors.Unwrap, %+v) says no more than its Msg.
func redactCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact.URL(ue.URL)
	}
	return err
}

// temperatureRejected reports whether a 400 is about the temperature
// parameter ("Unsupported value: 'temperature' does not support 0 with this
// model", "temperature is not supported").
func temperatureRejected(e *Error) bool {
	return e.Status == http.StatusBadRequest && strings.Contains(strings.ToLower(e.Msg), "temperature")
}

// retryAfter reads the wait a 429 or 503 asks for: retry-after-ms (Azure
// OpenAI, milliseconds) wins over Retry-After (RFC 9110: seconds or an
// HTTP date). Zero when neither is there or parses.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return seconds(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if !(s > 0) { // also NaN
			return 0
		}
		return seconds(s)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// seconds converts s > 0 to a Duration, at most a year (a larger float
// would overflow).
func seconds(s float64) time.Duration {
	const year = 365 * 24 * time.Hour
	if s >= year.Seconds() {
		return year
	}
	return time.Duration(s * float64(time.Second))
}

// reasoningFields returns each choice's message.reasoning when it is a
// string (nil when no choice has one).
func reasoningFields(body []byte) []string {
	var v struct {
		Choices []struct {
			Message struct {
				Reasoning json.RawMessage `json:"reasoning"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var out []string
	found := false
	for _, c := range v.Choices {
		var s string
		if len(c.Message.Reasoning) > 0 && json.Unmarshal(c.Message.Reasoning, &s) == nil && s != "" {
			found = true
		}
		out = append(out, s)
	}
	if !found {
		return nil
	}
	return out
}
