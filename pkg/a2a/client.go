package a2a

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// DefaultCallTimeout is A2A_CALL_TIMEOUT's default: below the run timeout,
// above a model call.
const DefaultCallTimeout = 540 * time.Second

// AuditLog is where the client records what it sends (the store).
type AuditLog interface {
	RecordA2A(ctx context.Context, e store.A2AEntry) error
	UpdateA2A(ctx context.Context, e store.A2AEntry) error
}

// ClientOptions are the client's dependencies.
type ClientOptions struct {
	Self  persona.Info
	Peers *Peers
	// Token is sent as "Authorization: Bearer <token>" when set (AUTH_TOKEN).
	Token string
	// HTTP sends the requests. Nil: a pooled client without a client-wide
	// timeout — every call is bounded by its context instead (the SDK's own
	// default of 3 minutes would cut a 540 s delegation short).
	HTTP *http.Client
	// Audit records every message sent. Required: an unlogged instruction
	// is what this package exists to prevent.
	Audit    AuditLog
	MaxDepth int
	// Timeout bounds a blocking call (A2A_CALL_TIMEOUT).
	Timeout time.Duration
	Now     func() time.Time
	Log     *zap.Logger
	// Observe is told the outcome and duration of every call (metrics).
	Observe func(verb Verb, outcome string, d time.Duration)
}

// Client sends A2A messages to the fleet's agents.
type Client struct {
	o ClientOptions
}

// NewClient checks the options and fills defaults.
func NewClient(o ClientOptions) (*Client, error) {
	if o.Peers == nil {
		return nil, errors.New("a2a client: peers are required")
	}
	if o.Audit == nil {
		return nil, errors.New("a2a client: an audit log is required")
	}
	if o.Self.Slug == "" {
		return nil, errors.New("a2a client: the sender's identity is required")
	}
	if o.HTTP == nil {
		o.HTTP = DefaultHTTPClient()
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultCallTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Observe == nil {
		o.Observe = func(Verb, string, time.Duration) {}
	}
	return &Client{o: o}, nil
}

// DefaultHTTPClient keeps connections to peers alive and bounds connecting,
// but not the whole call.
func DefaultHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: tr}
}

// Call is one message to send.
type Call struct {
	// To is a slug or a persona name.
	To   string
	Verb Verb
	Text string
	// Finding travels as the data part {"finding": …} (delegate).
	Finding *api.Finding
	// RunDepth is the sending run's social depth; the message goes out at
	// RunDepth+1.
	RunDepth     int
	DiscussionID string
	TraceID      string
	CallerRunID  string
}

// Result is what came of a call.
type Result struct {
	Peer      Peer
	MessageID string
	AuditID   string
	Depth     int
	Outcome   string
	Reply
}

// CallError is a call that did not produce an answer: refused (depth,
// cycle, invalid), unreachable, or timed out.
type CallError struct {
	To      string
	Outcome string
	Err     error
}

func (e *CallError) Error() string {
	if e.Outcome == OutcomeBusy {
		return fmt.Sprintf("%s is %s; nothing was started", e.To, e.Err)
	}
	if e.Outcome == OutcomeRefused {
		return fmt.Sprintf("%s refused the message: %s", e.To, strings.TrimPrefix(e.Err.Error(), "refused: "))
	}
	return fmt.Sprintf("message to %s failed: %v", e.To, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// Send resolves the peer, applies the depth rule, records the message in
// the audit log, sends it and records the outcome. Ask and delegate wait for
// the callee's run (bounded by the call timeout); notify returns once the
// callee has accepted the message.
func (c *Client) Send(ctx context.Context, call Call) (Result, error) {
	start := c.o.Now()
	if call.Verb == "" {
		call.Verb = VerbAsk
	}
	if _, err := ParseVerb(string(call.Verb)); err != nil {
		return Result{}, err
	}
	peer, err := c.o.Peers.Resolve(call.To)
	if err != nil {
		return Result{}, err
	}
	text := strings.TrimSpace(call.Text)
	if text == "" && call.Finding == nil {
		return Result{}, errors.New("the message is empty: say what you want")
	}
	if n := len([]rune(text)); n > MaxTextChars {
		return Result{}, fmt.Errorf("the message is %d characters; the limit is %d", n, MaxTextChars)
	}
	if call.Finding != nil {
		f, err := NormalizeFinding(*call.Finding)
		if err != nil {
			return Result{}, err
		}
		call.Finding = &f
	}
	depth := OutgoingDepth(call.RunDepth)
	var noTime error
	meta := Meta{Verb: call.Verb, Depth: depth, HasDepth: true, Caller: c.o.Self.Slug,
		DiscussionID: call.DiscussionID, TraceID: call.TraceID, CallerRunID: call.CallerRunID}
	if call.Verb != VerbNotify {
		// A blocking call waits at most A2A_CALL_TIMEOUT and the calling
		// run's time left; the callee gets that less the margin its answer
		// needs (docs/ARCHITECTURE.md, "The time budget").
		b, _ := api.BudgetOf(ctx, time.Now(), c.o.Timeout)
		meta.BudgetMS = api.Millis(b)
		if b < api.MinBudget {
			noTime = fmt.Errorf("not sent: the calling run has %s left, too little for %s to answer", max(b, 0).Round(time.Millisecond), peer.Slug)
		}
	}
	msg := NewMessage(text, call.Finding, meta)
	res := Result{Peer: peer, MessageID: msg.ID, AuditID: msg.ID + ":" + DirectionSent, Depth: depth}

	entry := store.A2AEntry{
		ID: res.AuditID, Agent: c.o.Self.Slug, Direction: DirectionSent, Verb: string(call.Verb),
		Caller: c.o.Self.Slug, Callee: peer.Slug, Depth: depth, DiscussionID: call.DiscussionID,
		TraceID: call.TraceID, Text: text, Data: findingData(call.Finding), Outcome: OutcomePending,
		CallerRunID: call.CallerRunID, At: start.UTC(),
	}
	log := c.o.Log.With(zap.String("to", peer.Slug), zap.String("verb", string(call.Verb)),
		zap.Int("depth", depth), zap.String("message_id", msg.ID), zap.String("discussion_id", call.DiscussionID))

	if err := cmp.Or(CheckSend(depth, c.o.MaxDepth), noTime); err != nil {
		entry.Outcome, entry.Error = OutcomeRefused, err.Error()
		now := c.o.Now().UTC()
		entry.FinishedAt = &now
		c.record(ctx, log, entry)
		c.o.Observe(call.Verb, OutcomeRefused, 0)
		log.Warn("a2a message refused before sending", zap.Error(err))
		res.Outcome = OutcomeRefused
		return res, err
	}
	c.record(ctx, log, entry)

	res.Reply, res.Outcome, err = c.send(ctx, peer, call.Verb, msg)
	end := c.o.Now().UTC()
	upd := entry
	upd.Outcome, upd.CalleeRunID, upd.Answer, upd.FinishedAt = res.Outcome, res.TaskID, res.Answer, &end
	switch {
	case err != nil:
		upd.Error = err.Error()
	case res.Error != "":
		upd.Error = res.Error
	}
	if res.Outcome == OutcomeAccepted {
		upd.FinishedAt = nil // the callee is still working
	}
	if uerr := c.o.Audit.UpdateA2A(context.WithoutCancel(ctx), upd); uerr != nil {
		log.Warn("a2a audit entry not updated", zap.Error(uerr))
	}
	c.o.Observe(call.Verb, res.Outcome, end.Sub(start))
	if err != nil {
		log.Warn("a2a call failed", zap.String("outcome", res.Outcome), zap.String("peer_url", peer.BaseURL), zap.Error(err))
		return res, &CallError{To: peer.Slug, Outcome: res.Outcome, Err: err}
	}
	if res.Outcome == OutcomeFailed || res.Outcome == OutcomeCanceled {
		log.Warn("a2a call answered: the peer's run did not succeed", zap.String("outcome", res.Outcome),
			zap.String("task_id", res.TaskID), zap.String("error", res.Error))
	}
	log.Debug("a2a message answered", zap.String("outcome", res.Outcome), zap.String("task_id", res.TaskID),
		zap.String("text", text), zap.String("answer", res.Answer), zap.Duration("duration", end.Sub(start)))
	return res, nil
}

func (c *Client) record(ctx context.Context, log *zap.Logger, e store.A2AEntry) {
	if err := c.o.Audit.RecordA2A(context.WithoutCancel(ctx), e); err != nil {
		log.Warn("a2a audit entry not recorded", zap.Error(err))
	}
}

func findingData(f *api.Finding) json.RawMessage {
	if f == nil {
		return nil
	}
	raw, _ := json.Marshal(map[string]any{DataKeyFinding: f})
	return raw
}

// send talks to the peer with the SDK client over JSON-RPC. The endpoint is
// the configured peer's /invoke, not the url of its card: only configured
// addresses are reachable.
func (c *Client) send(ctx context.Context, peer Peer, verb Verb, msg *sdk.Message) (Reply, string, error) {
	blocking := verb != VerbNotify
	ctx, cancel := context.WithTimeoutCause(ctx, c.o.Timeout,
		fmt.Errorf("no answer from %s within A2A_CALL_TIMEOUT (%s)", peer.Slug, c.o.Timeout))
	defer cancel()
	opts := []a2aclient.FactoryOption{
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithJSONRPCTransport(c.o.HTTP),
		a2aclient.WithConfig(a2aclient.Config{Polling: !blocking}),
	}
	if c.o.Token != "" {
		opts = append(opts, a2aclient.WithInterceptors(bearer(c.o.Token)))
	}
	cl, err := a2aclient.NewFromEndpoints(ctx, []sdk.AgentInterface{{URL: peer.InvokeURL(), Transport: sdk.TransportProtocolJSONRPC}}, opts...)
	if err != nil {
		return Reply{}, OutcomeFailed, fmt.Errorf("a2a client for %s: %w", peer.InvokeURL(), err)
	}
	defer func() { _ = cl.Destroy() }()
	out, err := cl.SendMessage(ctx, &sdk.MessageSendParams{Message: msg})
	if err != nil {
		err = remoteError(err)
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", cause, err)
		}
		if errors.Is(err, sdk.ErrInvalidRequest) && strings.Contains(err.Error(), "refused: ") {
			return Reply{}, OutcomeRefused, err
		}
		if busy, ok := api.ParseBusy(err.Error()); ok && errors.Is(err, sdk.ErrServerError) {
			return Reply{}, OutcomeBusy, busy
		}
		if strings.Contains(err.Error(), "401") {
			err = fmt.Errorf("%w (the peer wants a bearer token: check AUTH_TOKEN on both agents)", err)
		}
		return Reply{}, OutcomeFailed, err
	}
	switch r := out.(type) {
	case *sdk.Task:
		rep, err := ReplyFromTask(r)
		if err != nil {
			return Reply{}, OutcomeFailed, fmt.Errorf("answer from %s: %w", peer.Slug, err)
		}
		return rep, outcomeOf(rep), nil
	case *sdk.Message:
		return Reply{State: sdk.TaskStateCompleted, Agent: peer.Slug, Answer: MessageText(r)}, OutcomeCompleted, nil
	}
	return Reply{}, OutcomeFailed, fmt.Errorf("answer from %s is a %T, not a task or message", peer.Slug, out)
}

func outcomeOf(r Reply) string {
	switch r.State {
	case sdk.TaskStateCompleted:
		if r.Status == api.StatusPartial {
			return OutcomePartial
		}
		return OutcomeCompleted
	case sdk.TaskStateFailed:
		return OutcomeFailed
	case sdk.TaskStateCanceled:
		return OutcomeCanceled
	case sdk.TaskStateRejected:
		return OutcomeRefused
	case sdk.TaskStateSubmitted, sdk.TaskStateWorking:
		return OutcomeAccepted
	}
	return OutcomeFailed
}

// jsonrpcErrors are the SDK's JSON-RPC error sentinels; the SDK client
// appends the code's name to the peer's message ("<message>: invalid
// request"), which remoteError keeps matchable but drops from the text.
var jsonrpcErrors = []error{
	sdk.ErrParseError, sdk.ErrInvalidRequest, sdk.ErrMethodNotFound, sdk.ErrInvalidParams, sdk.ErrInternalError,
	sdk.ErrServerError, sdk.ErrTaskNotFound, sdk.ErrTaskNotCancelable, sdk.ErrPushNotificationNotSupported,
	sdk.ErrUnsupportedOperation, sdk.ErrUnsupportedContentType, sdk.ErrInvalidAgentResponse,
}

type peerError struct {
	msg  string
	code error
}

func (e *peerError) Error() string { return e.msg }
func (e *peerError) Unwrap() error { return e.code }

func remoteError(err error) error {
	for _, code := range jsonrpcErrors {
		if !errors.Is(err, code) {
			continue
		}
		msg, ok := strings.CutSuffix(err.Error(), ": "+code.Error())
		if !ok || msg == "" {
			return err
		}
		return &peerError{msg: msg, code: code}
	}
	return err
}

// bearer adds the token to every request.
type bearer string

func (b bearer) Before(ctx context.Context, req *a2aclient.Request) (context.Context, error) {
	if req.Meta == nil {
		req.Meta = a2aclient.CallMeta{}
	}
	req.Meta["Authorization"] = []string{"Bearer " + string(b)}
	return ctx, nil
}

func (bearer) After(context.Context, *a2aclient.Response) error { return nil }
