package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/zap"
)

// Client calls an ordered list of OpenAI-compatible endpoints. It is safe for
// concurrent use.
type Client struct {
	eps         []*route
	timeout     time.Duration
	retries     int
	temperature float32
	maxTokens   int
	log         *zap.Logger
	observe     func(endpoint, outcome string, d time.Duration)
	now         func() time.Time
	wait        func(ctx context.Context, d time.Duration) error
}

// route is one endpoint with its go-openai client.
type route struct {
	endpoint
	api *openai.Client
	// noTemperature is set once the endpoint rejected the temperature
	// parameter; later calls omit it.
	noTemperature atomic.Bool
	// format is the strictest structured-output level the endpoint has not
	// refused (format.go); 0 until it refuses one.
	format atomic.Int32
	// capField is how the answer cap is sent to the endpoint (maxtokens.go).
	capField atomic.Int32
}

// Response is a chat completion and how it was obtained.
type Response struct {
	openai.ChatCompletionResponse
	Endpoint string // name of the endpoint that answered
	Attempts int    // HTTP requests this call made, the answering one included
}

// New validates cfg and builds a Client. It needs at least one endpoint with
// a base URL and a model.
func New(cfg Config) (*Client, error) {
	eps, retries, timeout, err := validate(cfg)
	if err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	c := &Client{
		timeout:     timeout,
		retries:     retries,
		temperature: cfg.Temperature,
		maxTokens:   cfg.MaxCompletionTokens,
		log:         log,
		observe:     cfg.Observe,
		now:         time.Now,
		wait:        sleepCtx,
	}
	for i := range eps {
		r := &route{endpoint: eps[i]}
		r.capField.Store(int32(initialCapField(r.Model)))
		oc := openai.DefaultConfig(r.APIKey)
		oc.BaseURL = r.BaseURL
		oc.HTTPClient = &wireDoer{ep: &r.endpoint, client: hc}
		r.api = openai.NewClientWithConfig(oc)
		c.eps = append(c.eps, r)
	}
	return c, nil
}

// Model is the primary endpoint's model name.
func (c *Client) Model() string { return c.eps[0].Model }

// Endpoints returns the validated endpoints in order (keys included: do not
// log them raw; Endpoint's String and zap encoding redact the key).
func (c *Client) Endpoints() []Endpoint {
	out := make([]Endpoint, len(c.eps))
	for i, r := range c.eps {
		out[i] = r.Endpoint
	}
	return out
}

// Timeout is the per-attempt timeout in effect.
func (c *Client) Timeout() time.Duration { return c.timeout }

// MaxCallDuration is the longest one Chat call can take when every request
// hangs: (endpoints + retries) × Timeout. A Retry-After wait stays inside
// it: the rate-limited attempt and its wait together take at most one
// Timeout. Callers use it to check at start that their own deadlines are
// longer.
func (c *Client) MaxCallDuration() time.Duration {
	return time.Duration(len(c.eps)+c.retries) * c.timeout
}

// Chat sends req to the primary endpoint and fails over in order. The
// request's Model is set per endpoint; a zero Temperature means
// Config.Temperature, which is sent explicitly even when it is 0.
func (c *Client) Chat(ctx context.Context, req openai.ChatCompletionRequest) (*Response, error) {
	if req.Stream {
		return nil, &Error{Endpoint: c.eps[0].Name, Kind: KindInvalidRequest, Msg: "streaming is not supported by llm.Client.Chat"}
	}
	if req.Temperature == 0 {
		req.Temperature = c.temperature
	}
	var failures []*Error
	retries := c.retries
	attempts := 0
	for i := 0; i < len(c.eps); i++ {
		r := c.eps[i]
		for {
			attempts++
			began := c.now()
			resp, fail := c.attempt(ctx, r, req)
			if fail == nil {
				return &Response{ChatCompletionResponse: resp, Endpoint: r.Name, Attempts: attempts}, nil
			}
			failures = append(failures, fail)
			last := i == len(c.eps)-1
			if next, ok := c.nextFormat(r, req, fail); ok {
				// Not a retry: a format refusal happens at most twice per endpoint, ever (format.go).
				c.log.Warn("endpoint refuses the structured-output format; sending again with the next one",
					zap.String("endpoint", r.Name), zap.String("model", r.Model), zap.Int("status", fail.Status),
					zap.String("format", formatName(next)), zap.String("error", fail.Msg))
				r.format.Store(int32(next))
				continue
			}
			if next, ok := c.nextCapField(r, req, fail); ok {
				// Not a retry either: at most twice per endpoint, ever (maxtokens.go).
				c.log.Warn("endpoint refuses how the answer cap was sent; sending again with the next field",
					zap.String("endpoint", r.Name), zap.String("model", r.Model), zap.Int("status", fail.Status),
					zap.String("field", capFieldName(next)), zap.String("error", fail.Msg))
				r.capField.Store(int32(next))
				continue
			}
			if retries > 0 && fail.RetryAfter > 0 && (fail.Kind == KindRateLimited || fail.Kind == KindHTTP5xx) {
				if why := c.waitable(ctx, fail.RetryAfter, c.now().Sub(began)); why != "" {
					fail.Msg += " (Retry-After " + fail.RetryAfter.String() + " not waited: " + why + ")"
				} else {
					retries--
					c.log.Warn("rate limited; waiting as Retry-After asks, then sending again",
						zap.String("endpoint", r.Name), zap.Duration("retry_after", fail.RetryAfter), zap.Int("status", fail.Status))
					if err := c.wait(ctx, fail.RetryAfter); err != nil {
						failures = append(failures, &Error{Endpoint: r.Name, Kind: KindCanceled,
							Msg: fmt.Sprintf("call canceled while waiting %s for %s (Retry-After): %v", fail.RetryAfter, r.label, context.Cause(ctx)), Err: context.Cause(ctx)})
						return nil, joinFailures(failures)
					}
					continue
				}
			}
			switch {
			case retries > 0 && fail.Kind == KindHTTP4xx && temperatureRejected(fail) && !r.noTemperature.Load():
				retries--
				r.noTemperature.Store(true)
				c.log.Warn("endpoint rejects the temperature parameter; sending again without it",
					zap.String("endpoint", r.Name), zap.String("model", r.Model), zap.Int("status", fail.Status))
				continue
			case retries > 0 && last && fail.Kind == KindConnection:
				retries--
				c.log.Warn("connection error at the last endpoint; retrying once",
					zap.String("endpoint", r.Name), zap.Error(fail))
				continue
			case !fail.Failover():
				return nil, joinFailures(failures)
			case !last:
				c.log.Warn("failing over",
					zap.String("from", r.Name), zap.String("to", c.eps[i+1].Name),
					zap.String("outcome", fail.Kind), zap.Int("status", fail.Status), zap.Error(fail))
			}
			break
		}
	}
	return nil, joinFailures(failures)
}

// nextFormat reports the structured-output level to try after fail, when
// fail is r refusing the format of req and a looser level is left.
func (c *Client) nextFormat(r *route, req openai.ChatCompletionRequest, fail *Error) (int, bool) {
	if req.ResponseFormat == nil || !formatRejected(fail) {
		return 0, false
	}
	level := max(formatLevel(req.ResponseFormat), int(r.format.Load()))
	if level >= formatNone {
		return 0, false
	}
	return level + 1, true
}

// waitable says why a Retry-After wait of d after an attempt that took
// spent is not waited ("" when it is): the attempt and the wait together
// stay within the per-call timeout (LLM_TIMEOUT; a longer wait is a hang by
// another name, and MaxCallDuration holds), and the wait takes at most half
// of what is left of the caller's deadline, so the answer after it still
// has time to arrive.
func (c *Client) waitable(ctx context.Context, d, spent time.Duration) string {
	if d+spent > c.timeout {
		return fmt.Sprintf("longer than the per-call timeout %s (LLM_TIMEOUT)", c.timeout)
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := dl.Sub(c.now()); d > left/2 {
			return fmt.Sprintf("more than half of the %s left of the caller's deadline", left.Round(time.Millisecond))
		}
	}
	return ""
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// timeoutCause is the cause of an attempt's own deadline.
type timeoutCause struct {
	endpoint string
	timeout  time.Duration
}

func (t *timeoutCause) Error() string {
	return fmt.Sprintf("llm endpoint %s did not answer within %s (LLM_TIMEOUT)", t.endpoint, t.timeout)
}

// attempt makes one request to one endpoint under its own timeout.
func (c *Client) attempt(ctx context.Context, r *route, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, *Error) {
	start := c.now()
	cause := &timeoutCause{endpoint: r.Name, timeout: c.timeout}
	actx, cancel := context.WithTimeoutCause(ctx, c.timeout, cause)
	defer cancel()

	req.Model = r.Model
	if lvl := int(r.format.Load()); req.ResponseFormat != nil && lvl > formatLevel(req.ResponseFormat) {
		req = downgradeFormat(req, lvl)
	}
	req = c.withCap(r, req)
	st := &attemptState{}
	if r.noTemperature.Load() {
		req.Temperature = 0 // omitted by go-openai, not spliced
	} else {
		st.injectZeroTemperature = req.Temperature == 0
	}
	actx = context.WithValue(actx, attemptKey{}, st)

	resp, err := r.api.CreateChatCompletion(actx, req)
	fail := c.classify(ctx, actx, cause, r, st, resp, err)
	if fail == nil {
		for i, text := range st.reasoning {
			if i < len(resp.Choices) && resp.Choices[i].Message.ReasoningContent == "" {
				resp.Choices[i].Message.ReasoningContent = text
			}
		}
	}
	d := c.now().Sub(start)

	outcome := OutcomeOK
	if fail != nil {
		outcome = fail.Kind
	}
	if c.observe != nil {
		c.observe(r.Name, outcome, d)
	}
	if fail == nil {
		c.log.Debug("chat completion", zap.String("endpoint", r.Name), zap.String("model", r.Model),
			zap.Duration("duration", d), zap.Int("prompt_tokens", resp.Usage.PromptTokens),
			zap.Int("completion_tokens", resp.Usage.CompletionTokens))
	}
	return resp, fail
}

// classify turns the result of one attempt into nil (a usable answer) or an
// *Error naming the endpoint.
func (c *Client) classify(ctx, actx context.Context, cause error, r *route, st *attemptState,
	resp openai.ChatCompletionResponse, err error) *Error {
	mk := func(kind, msg string, cause error) *Error {
		return &Error{Endpoint: r.Name, Kind: kind, Msg: redactKey(msg, r.APIKey), Err: redactCause(cause)}
	}
	if err == nil {
		if len(resp.Choices) == 0 {
			return mk(KindInvalidResponse, fmt.Sprintf("invalid response from %s: no choices in the answer (an empty \"choices\" list: the server or a gateway before it dropped the model's answer, e.g. a content filter)", r.label), nil)
		}
		return nil
	}
	if ctx.Err() != nil {
		return mk(KindCanceled, fmt.Sprintf("call canceled before %s answered: %v", r.label, context.Cause(ctx)), context.Cause(ctx))
	}
	if actx.Err() != nil && errors.Is(context.Cause(actx), cause) {
		return mk(KindTimeout, fmt.Sprintf("no answer from %s within %s (LLM_TIMEOUT)", r.label, c.timeout), cause)
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if !st.sent {
		return mk(KindInvalidRequest, fmt.Sprintf("request not sent to %s: %v", r.label, err), err)
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
		return mk(KindInvalidResponse, fmt.Sprintf("invalid response from %s: not a chat completion: %v", r.label, err), err)
	}
	return mk(KindConnection, fmt.Sprintf("cannot reach %s: %v", r.label, err), err)
}
