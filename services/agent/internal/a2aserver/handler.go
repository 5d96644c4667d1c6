package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/safetext"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
	"github.com/kubecrew/kubecrew/services/agent/internal/server"
)

// handler implements the SDK's transport-agnostic RequestHandler on the run
// engine. The SDK's default handler is not used: it mints its own task ids
// and keeps tasks in its own store, while here a task IS a run — the task id
// is the run id, tasks/get reads the agent's store after the run is gone
// from memory, and tasks/cancel cancels the run.
type handler struct{ s *Service }

var _ a2asrv.RequestHandler = handler{}

// cancelWait bounds how long tasks/cancel waits for the run to stop.
const cancelWait = 10 * time.Second

// accepted is a message that became a run.
type accepted struct {
	run        *engine.Run
	discussion string
	msg        *sdk.Message
}

// accept validates a message, applies the depth and cycle rules, records it
// in the audit log and starts its run. Every refusal is recorded too.
func (h handler) accept(ctx context.Context, params *sdk.MessageSendParams) (*accepted, error) {
	s := h.s
	if params == nil || params.Message == nil {
		return nil, codeErr(sdk.ErrInvalidParams, errors.New("params.message is required"))
	}
	msg := params.Message
	if params.Config != nil && params.Config.PushConfig != nil {
		return nil, codeErr(sdk.ErrPushNotificationNotSupported, errors.New("this agent does not send push notifications; use message/stream or tasks/get"))
	}
	eng := s.eng
	now := s.o.Now().UTC()
	entry := store.A2AEntry{
		ID: receivedID(msg.ID, s.o.NewID), Agent: s.self.Slug, Direction: a2a.DirectionReceived,
		Callee: s.self.Slug, At: now,
		Text: rawText(msg), // what was said, even when it cannot be run
	}
	refuse := func(verb string, cause error, code error) error {
		if entry.Outcome == "" {
			entry.Outcome = a2a.OutcomeRefused
		}
		entry.Error, entry.FinishedAt = cause.Error(), &now
		s.recordReceived(ctx, &entry)
		s.metrics.Messages.WithLabelValues(a2a.DirectionReceived, verb, entry.Outcome).Inc()
		s.log.Info("a2a message refused", zap.String("caller", entry.Caller), zap.String("verb", verb),
			zap.Int("depth", entry.Depth), zap.String("message_id", msg.ID), zap.Error(cause))
		return codeErr(code, cause)
	}

	meta, err := a2a.ParseMeta(msg.Metadata)
	if err != nil {
		return nil, refuse("invalid", err, sdk.ErrInvalidParams)
	}
	entry.Verb, entry.Caller, entry.TraceID, entry.CallerRunID = string(meta.Verb), meta.Caller, meta.TraceID, meta.CallerRunID
	in, err := a2a.ParseMessage(msg)
	if err != nil {
		return nil, refuse(entry.Verb, err, sdk.ErrInvalidParams)
	}
	entry.Text = in.Text
	if in.Finding != nil {
		entry.Data, _ = json.Marshal(map[string]any{a2a.DataKeyFinding: in.Finding})
	}
	if msg.TaskID != "" {
		return nil, refuse(entry.Verb, fmt.Errorf("every message starts a new task; this agent does not continue task %s", msg.TaskID), sdk.ErrUnsupportedOperation)
	}
	depth, err := a2a.CheckReceive(meta, s.o.MaxDepth)
	entry.Depth = depth
	if err != nil {
		return nil, refuse(entry.Verb, err, sdk.ErrInvalidRequest)
	}
	discussion, err := s.discussionOf(meta, msg)
	entry.DiscussionID = discussion
	if err != nil {
		return nil, refuse(entry.Verb, err, sdk.ErrInvalidRequest)
	}
	if entry.TraceID == "" {
		entry.TraceID = discussion
	}
	s.traces.Set(discussion, entry.TraceID) // before Start: the run may send at once
	run, err := eng.Start(ctx, runRequest(meta, in, depth, discussion))
	if err != nil {
		s.traces.Drop(discussion)
		if busy := (*api.BusyError)(nil); errors.As(err, &busy) {
			entry.Outcome = a2a.OutcomeBusy
		}
		return nil, refuse(entry.Verb, err, startErrCode(err))
	}
	entry.Outcome, entry.CalleeRunID = a2a.OutcomeAccepted, run.ID
	s.recordReceived(ctx, &entry)
	s.metrics.Messages.WithLabelValues(a2a.DirectionReceived, entry.Verb, a2a.OutcomeAccepted).Inc()
	run.Event(ctx, "a2a_received", map[string]any{
		"audit_id": entry.ID, "message_id": msg.ID, "verb": entry.Verb, "caller": entry.Caller,
		"caller_run_id": entry.CallerRunID, "depth": depth, "discussion_id": discussion, "trace_id": entry.TraceID,
	})
	s.log.Info("a2a message accepted", zap.String("caller", entry.Caller), zap.String("verb", entry.Verb),
		zap.Int("depth", depth), zap.String("run_id", run.ID), zap.String("discussion_id", discussion))
	s.settling.Add(1)
	go s.settle(run, entry)
	return &accepted{run: run, discussion: discussion, msg: msg}, nil
}

// discussionOf is the discussion a received message belongs to: the one
// its metadata or context names, or a new one. A discussion one of this
// agent's runs is still in is a cycle, refused.
func (s *Service) discussionOf(meta a2a.Meta, msg *sdk.Message) (string, error) {
	discussion := meta.DiscussionID
	if discussion == "" {
		discussion = msg.ContextID
	}
	if discussion == "" {
		return s.o.NewID(), nil
	}
	if r, ok := s.eng.RunningDiscussion(discussion); ok {
		return discussion, a2a.CycleError(s.self.Slug, discussion, r.ID)
	}
	if r, ok := s.eng.Get(discussion); ok && !r.Finished() {
		// The discussion was started by this very run (a root run's id is
		// its discussion id).
		return discussion, a2a.CycleError(s.self.Slug, discussion, r.ID)
	}
	return discussion, nil
}

// runRequest is the run a received message asks for: an ask, or a
// delegation carrying its finding (the task said for it when the message
// has no text) and its data parts as context.
func runRequest(meta a2a.Meta, in a2a.Incoming, depth int, discussion string) api.RunRequest {
	req := api.RunRequest{
		Task: in.Text, WorkflowType: api.WorkflowA2AAsk, Caller: meta.Caller,
		SocialDepth: depth, DiscussionID: discussion, BudgetMS: meta.BudgetMS,
	}
	if meta.Verb == a2a.VerbDelegate {
		req.WorkflowType = api.WorkflowA2ADelegate
	}
	if in.Finding != nil {
		raw, _ := json.Marshal(in.Finding)
		req.Context = map[string]string{"finding": string(raw)}
		if req.Task == "" {
			f := in.Finding
			req.Task = fmt.Sprintf("Act on the delegated finding %s: %s on %s %s/%s.", f.Key, f.Reason, f.Kind, f.Namespace, f.Name)
		}
	}
	for k, v := range in.Data {
		raw, _ := json.Marshal(v)
		if req.Context == nil {
			req.Context = map[string]string{}
		}
		if len(k) <= 100 && k != "" {
			req.Context[k] = string(raw)
		}
	}
	return req
}

// startErrCode is the A2A error code of a run that could not start: the
// request's fault, the agent shutting down, or an internal error.
func startErrCode(err error) error {
	var ve *engine.ValidationError
	var busy *api.BusyError
	switch {
	case errors.As(err, &ve):
		return sdk.ErrInvalidParams
	case errors.As(err, &busy):
		// At capacity: the server error's text starts "busy: "
		// (api.ParseBusy); the caller treats it as busy, not failed.
		return sdk.ErrServerError
	case errors.Is(err, engine.ErrShuttingDown):
		return sdk.ErrServerError
	}
	return sdk.ErrInternalError
}

// settle records the outcome of a received message's run when it ends,
// whether or not anyone is still waiting for it.
func (s *Service) settle(run *engine.Run, entry store.A2AEntry) {
	defer s.settling.Done()
	<-run.Done()
	defer s.traces.Drop(entry.DiscussionID)
	res := run.Result()
	fin := s.o.Now().UTC()
	entry.Outcome = outcomeOfRun(res)
	entry.Answer, entry.Error, entry.FinishedAt = res.Answer, res.Error, &fin
	if err := s.o.Store.UpdateA2A(context.Background(), entry); err != nil {
		s.log.Warn("a2a audit entry not updated", zap.String("id", entry.ID), zap.Error(err))
	}
}

func outcomeOfRun(res api.RunResult) string {
	switch a2a.StateOf(res.Status, res.Error) {
	case sdk.TaskStateCompleted:
		if res.Status == api.StatusPartial {
			return a2a.OutcomePartial
		}
		return a2a.OutcomeCompleted
	case sdk.TaskStateCanceled:
		return a2a.OutcomeCanceled
	}
	return a2a.OutcomeFailed
}

// rawText is the text parts of a message that could not be parsed, cleaned
// and bounded, for the audit log.
func rawText(msg *sdk.Message) string {
	var texts []string
	for _, p := range msg.Parts {
		if tp, ok := p.(sdk.TextPart); ok {
			texts = append(texts, tp.Text)
		}
	}
	return safetext.CleanBlock(strings.Join(texts, "\n\n"), a2a.MaxTextChars)
}

// receivedID is the audit id of a received message: the message id with a
// suffix, so the sender's and the receiver's entries share a stem.
func receivedID(messageID string, newID func() string) string {
	if messageID == "" || len(messageID) > 200 {
		messageID = newID()
	}
	return messageID + ":" + a2a.DirectionReceived
}

// recordReceived stores a received entry; a duplicate message id (a client
// re-sending the same message) gets a fresh id rather than no record.
func (s *Service) recordReceived(ctx context.Context, e *store.A2AEntry) {
	err := s.o.Store.RecordA2A(context.WithoutCancel(ctx), *e)
	if errors.Is(err, store.ErrConflict) {
		e.ID = s.o.NewID() + ":" + a2a.DirectionReceived
		err = s.o.Store.RecordA2A(context.WithoutCancel(ctx), *e)
	}
	if err != nil {
		s.log.Warn("a2a audit entry not recorded", zap.String("id", e.ID), zap.Error(err))
	}
}

// codedError carries a JSON-RPC error code (one of the SDK's sentinel
// errors, matched with errors.Is) while its text is only the cause: the
// code's own name is already the JSON-RPC error message, so data.error says
// what went wrong without repeating it.
type codedError struct{ code, cause error }

func (e *codedError) Error() string   { return e.cause.Error() }
func (e *codedError) Unwrap() []error { return []error{e.code, e.cause} }

func codeErr(code, cause error) error { return &codedError{code: code, cause: cause} }

func blocking(p *sdk.MessageSendParams) bool {
	return p.Config == nil || p.Config.Blocking == nil || *p.Config.Blocking
}

// OnSendMessage handles message/send: blocking waits for the run and
// returns the finished task; non-blocking returns the working task.
func (h handler) OnSendMessage(ctx context.Context, params *sdk.MessageSendParams) (sdk.SendMessageResult, error) {
	acc, err := h.accept(ctx, params)
	if err != nil {
		return nil, err
	}
	if !blocking(params) {
		return a2a.WorkingTask(acc.run.ID, acc.discussion, acc.run.Started, acc.msg), nil
	}
	res, err := acc.run.Wait(ctx)
	if err != nil {
		// The caller stopped waiting: its run ends too, and its outcome is
		// recorded (docs/ARCHITECTURE.md, "The time budget").
		acc.run.CancelFor("the A2A caller stopped waiting for the answer")
		return nil, codeErr(sdk.ErrInternalError, fmt.Errorf("client left before the run finished: %w", err))
	}
	t := a2a.TaskFromResult(res, acc.discussion)
	t.History = []*sdk.Message{acc.msg}
	return t, nil
}

// OnSendMessageStream handles message/stream: the task, a working status,
// the result artifact, then the final status.
func (h handler) OnSendMessageStream(ctx context.Context, params *sdk.MessageSendParams) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		acc, err := h.accept(ctx, params)
		if err != nil {
			yield(nil, err)
			return
		}
		task := a2a.WorkingTask(acc.run.ID, acc.discussion, acc.run.Started, acc.msg)
		if !yield(task, nil) {
			return
		}
		working := sdk.NewStatusUpdateEvent(task, sdk.TaskStateWorking, nil)
		if !yield(working, nil) {
			return
		}
		h.streamResult(ctx, acc.run, acc.discussion, true, yield)
	}
}

// streamResult waits for run and yields its artifact and final status.
// When the client leaves first, the run is canceled if this stream was its
// sender's (owner), not a resubscriber's.
func (h handler) streamResult(ctx context.Context, run *engine.Run, discussion string, owner bool, yield func(sdk.Event, error) bool) {
	res, err := run.Wait(ctx)
	if err != nil {
		if owner {
			run.CancelFor("the A2A caller stopped reading the stream")
		}
		return
	}
	t := a2a.TaskFromResult(res, discussion)
	art := &sdk.TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Artifact: fitStream(a2a.ResultArtifact(res)), LastChunk: true}
	if !yield(art, nil) {
		return
	}
	st := t.Status
	if st.State == sdk.TaskStateCompleted {
		st.Message = nil // the answer is in the artifact
	}
	yield(&sdk.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: st, Final: true, Metadata: t.Metadata}, nil)
}

// maxStreamEvent keeps one SSE event under the SDK client's line limit
// (bufio.Scanner, 64 KiB).
const maxStreamEvent = 60000

// fitStream cuts the answer of an artifact too large for one SSE line, and
// says so; tasks/get returns it whole.
func fitStream(a *sdk.Artifact) *sdk.Artifact {
	raw, _ := json.Marshal(a)
	if len(raw) <= maxStreamEvent {
		return a
	}
	over := len(raw) - maxStreamEvent + 200
	out := *a
	out.Parts = append(sdk.ContentParts(nil), a.Parts...)
	for i, p := range out.Parts {
		tp, ok := p.(sdk.TextPart)
		if !ok {
			continue
		}
		keep := max(len(tp.Text)-over, 0)
		for keep > 0 && keep < len(tp.Text) && (tp.Text[keep]&0xC0) == 0x80 {
			keep-- // do not split a UTF-8 sequence
		}
		tp.Text = tp.Text[:keep] + "\n… (answer cut to fit the stream; tasks/get returns it whole)"
		out.Parts[i] = tp
		out.Metadata = map[string]any{"kubecrew/truncated": true}
		break
	}
	return &out
}

// OnResubscribeToTask streams a task again: its current state, then, for a
// run in flight, its result.
func (h handler) OnResubscribeToTask(ctx context.Context, params *sdk.TaskIDParams) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		if params == nil || params.ID == "" {
			yield(nil, codeErr(sdk.ErrInvalidParams, errors.New("id is required")))
			return
		}
		if run, ok := h.s.eng.Get(string(params.ID)); ok {
			discussion := run.Req.DiscussionID
			if !yield(a2a.WorkingTask(run.ID, contextOf(discussion, run.ID), run.Started), nil) {
				return
			}
			h.streamResult(ctx, run, contextOf(discussion, run.ID), false, yield)
			return
		}
		t, err := h.OnGetTask(ctx, &sdk.TaskQueryParams{ID: params.ID})
		if err != nil {
			yield(nil, err)
			return
		}
		if !yield(t, nil) {
			return
		}
		yield(&sdk.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status, Final: true, Metadata: t.Metadata}, nil)
	}
}

func contextOf(discussion, runID string) string {
	if discussion != "" {
		return discussion
	}
	return runID
}

// OnGetTask handles tasks/get: a run in flight, else the stored run.
func (h handler) OnGetTask(ctx context.Context, q *sdk.TaskQueryParams) (*sdk.Task, error) {
	if q == nil || q.ID == "" {
		return nil, codeErr(sdk.ErrInvalidParams, errors.New("id is required"))
	}
	id := string(q.ID)
	if run, ok := h.s.eng.Get(id); ok {
		ctxID := contextOf(run.Req.DiscussionID, run.ID)
		if run.Finished() {
			return a2a.TaskFromResult(run.Result(), ctxID), nil
		}
		return a2a.WorkingTask(run.ID, ctxID, run.Started), nil
	}
	rec, err := h.s.o.Store.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, codeErr(sdk.ErrTaskNotFound, fmt.Errorf("no task %q on %s", id, h.s.self.Slug))
	}
	if err != nil {
		return nil, codeErr(sdk.ErrInternalError, fmt.Errorf("reading task %q: %w", id, err))
	}
	return a2a.TaskFromResult(server.ResultOf(rec), contextOf(rec.DiscussionID, rec.ID)), nil
}

// OnCancelTask handles tasks/cancel: a run in flight is cancelled and
// finishes as canceled; a finished task cannot be canceled (-32002).
func (h handler) OnCancelTask(ctx context.Context, p *sdk.TaskIDParams) (*sdk.Task, error) {
	if p == nil || p.ID == "" {
		return nil, codeErr(sdk.ErrInvalidParams, errors.New("id is required"))
	}
	id := string(p.ID)
	if run, ok := h.s.eng.Get(id); ok && !run.Finished() {
		run.Cancel()
		wctx, cancel := context.WithTimeoutCause(ctx, cancelWait, fmt.Errorf("run %s did not stop within %s", id, cancelWait))
		defer cancel()
		res, err := run.Wait(wctx)
		if err != nil {
			return nil, codeErr(sdk.ErrInternalError, err)
		}
		h.s.log.Info("a2a task canceled", zap.String("run_id", id))
		return a2a.TaskFromResult(res, contextOf(run.Req.DiscussionID, run.ID)), nil
	}
	t, err := h.OnGetTask(ctx, &sdk.TaskQueryParams{ID: p.ID})
	if err != nil {
		return nil, err
	}
	if t.Status.State.Terminal() {
		return nil, codeErr(sdk.ErrTaskNotCancelable, fmt.Errorf("task %s is %s; a finished task cannot be canceled", id, t.Status.State))
	}
	// Recorded as running but not in this process: it died with an earlier
	// process and nothing is left to cancel.
	return nil, codeErr(sdk.ErrTaskNotCancelable, fmt.Errorf("task %s is not running in this agent process (it was interrupted by a restart)", id))
}

var errNoPush = codeErr(sdk.ErrPushNotificationNotSupported, errors.New("this agent does not send push notifications"))

func (handler) OnGetTaskPushConfig(context.Context, *sdk.GetTaskPushConfigParams) (*sdk.TaskPushConfig, error) {
	return nil, errNoPush
}

func (handler) OnListTaskPushConfig(context.Context, *sdk.ListTaskPushConfigParams) ([]*sdk.TaskPushConfig, error) {
	return nil, errNoPush
}

func (handler) OnSetTaskPushConfig(context.Context, *sdk.TaskPushConfig) (*sdk.TaskPushConfig, error) {
	return nil, errNoPush
}

func (handler) OnDeleteTaskPushConfig(context.Context, *sdk.DeleteTaskPushConfigParams) error {
	return errNoPush
}

func (handler) OnGetExtendedAgentCard(context.Context) (*sdk.AgentCard, error) {
	return nil, sdk.ErrAuthenticatedExtendedCardNotConfigured
}
