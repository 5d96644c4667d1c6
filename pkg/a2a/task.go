package a2a

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// canceledText is what the run engine records as the error of a run stopped
// by tasks/cancel (engine.ErrCanceled); pkg cannot import the engine.
const canceledText = "run canceled by request"

// KeyRunStatus is the task metadata key holding the run's own status
// (completed|partial|failed|running): "partial" has no A2A state of its own.
const KeyRunStatus = "kubecrew/run_status"

// StateOf maps a run status to a task state: running → working; completed
// and partial → completed (partial is said in the data part and metadata);
// failed → failed, or canceled when the run was stopped by request.
func StateOf(status, errText string) sdk.TaskState {
	switch status {
	case api.StatusRunning:
		return sdk.TaskStateWorking
	case api.StatusCompleted, api.StatusPartial:
		return sdk.TaskStateCompleted
	case api.StatusFailed:
		if strings.Contains(errText, canceledText) {
			return sdk.TaskStateCanceled
		}
		return sdk.TaskStateFailed
	}
	return sdk.TaskStateUnknown
}

// ResultData is the data part of a result artifact.
type ResultData struct {
	RunID      string          `json:"run_id"`
	Agent      string          `json:"agent"`
	Status     string          `json:"status"`
	Verdict    string          `json:"verdict,omitempty"`
	Findings   []api.Finding   `json:"findings"`
	Error      string          `json:"error,omitempty"`
	Delegation *api.Delegation `json:"delegation,omitempty"`
}

func (d ResultData) toMap() map[string]any {
	if d.Findings == nil {
		d.Findings = []api.Finding{}
	}
	var out map[string]any
	raw, _ := json.Marshal(d)
	_ = json.Unmarshal(raw, &out)
	return out
}

// ResultArtifact is a finished run as an artifact: the answer as a text
// part, the findings (and status, verdict, error) as a data part.
func ResultArtifact(res api.RunResult) *sdk.Artifact {
	return &sdk.Artifact{
		ID:   sdk.ArtifactID(res.RunID + "-result"),
		Name: "result",
		Parts: sdk.ContentParts{
			sdk.TextPart{Text: res.Answer},
			sdk.DataPart{Data: ResultData{RunID: res.RunID, Agent: res.Agent, Status: res.Status, Verdict: res.Verdict,
				Findings: res.Findings, Error: res.Error, Delegation: res.Delegation}.toMap()},
		},
	}
}

// statusMessage is the agent's last word on a task: the answer, or why it
// failed.
func statusMessage(res api.RunResult, contextID string) *sdk.Message {
	text := res.Answer
	if res.Error != "" && (res.Status == api.StatusFailed || text == "") {
		text = res.Error
	}
	if text == "" {
		return nil
	}
	return &sdk.Message{ID: res.RunID + "-status", Role: sdk.MessageRoleAgent, TaskID: sdk.TaskID(res.RunID),
		ContextID: contextID, Parts: sdk.ContentParts{sdk.TextPart{Text: text}}}
}

// TaskFromResult is a run as a task (task id = run id). A running run
// gives a working task without artifacts.
func TaskFromResult(res api.RunResult, contextID string) *sdk.Task {
	state := StateOf(res.Status, res.Error)
	t := &sdk.Task{
		ID: sdk.TaskID(res.RunID), ContextID: contextID,
		Status:   sdk.TaskStatus{State: state},
		Metadata: map[string]any{KeyRunStatus: res.Status},
	}
	if res.FinishedAt != nil {
		at := *res.FinishedAt
		t.Status.Timestamp = &at
	} else if !res.StartedAt.IsZero() {
		at := res.StartedAt
		t.Status.Timestamp = &at
	}
	if state.Terminal() {
		t.Artifacts = []*sdk.Artifact{ResultArtifact(res)}
		t.Status.Message = statusMessage(res, contextID)
	}
	return t
}

// WorkingTask is a task whose run has started.
func WorkingTask(runID, contextID string, started time.Time, history ...*sdk.Message) *sdk.Task {
	at := started
	return &sdk.Task{
		ID: sdk.TaskID(runID), ContextID: contextID, History: history,
		Status:   sdk.TaskStatus{State: sdk.TaskStateWorking, Timestamp: &at},
		Metadata: map[string]any{KeyRunStatus: api.StatusRunning},
	}
}

// Reply is what the callee answered, read back from a task.
type Reply struct {
	TaskID   string
	State    sdk.TaskState
	Agent    string
	Status   string // the callee's run status
	Answer   string
	Verdict  string
	Findings []api.Finding
	Error    string
}

// ReplyFromTask reads a task: the answer from the artifacts' text parts
// (else the status message), the rest from the data part.
func ReplyFromTask(t *sdk.Task) (Reply, error) {
	if t == nil {
		return Reply{}, fmt.Errorf("no task in the answer")
	}
	r := Reply{TaskID: string(t.ID), State: t.Status.State}
	var texts []string
	for _, a := range t.Artifacts {
		if a == nil {
			continue
		}
		for _, p := range a.Parts {
			switch part := p.(type) {
			case sdk.TextPart:
				texts = append(texts, part.Text)
			case sdk.DataPart:
				if err := r.readData(part.Data); err != nil {
					return Reply{}, err
				}
			}
		}
	}
	r.Answer = strings.TrimSpace(strings.Join(texts, "\n\n"))
	if r.Answer == "" && t.Status.Message != nil && r.Error == "" {
		r.Answer = strings.TrimSpace(MessageText(t.Status.Message))
	}
	if r.Status == "" {
		if s, ok := t.Metadata[KeyRunStatus].(string); ok {
			r.Status = s
		}
	}
	if r.Error == "" && (t.Status.State == sdk.TaskStateFailed || t.Status.State == sdk.TaskStateRejected) && t.Status.Message != nil {
		r.Error = MessageText(t.Status.Message)
	}
	return r, nil
}

func (r *Reply) readData(d map[string]any) error {
	if _, ok := d["run_id"]; !ok {
		return nil // not our result part
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	var rd ResultData
	if err := json.Unmarshal(raw, &rd); err != nil {
		return fmt.Errorf("result data part: %w", err)
	}
	r.Agent, r.Status, r.Verdict, r.Findings, r.Error = rd.Agent, rd.Status, rd.Verdict, rd.Findings, rd.Error
	return nil
}

// MessageText joins a message's text parts.
func MessageText(m *sdk.Message) string {
	if m == nil {
		return ""
	}
	var texts []string
	for _, p := range m.Parts {
		if tp, ok := p.(sdk.TextPart); ok {
			texts = append(texts, tp.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}

// Summary is one line per finding, most useful first, for a tool's answer.
func Summary(fs []api.Finding) string {
	if len(fs) == 0 {
		return "no findings"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d finding(s):", len(fs))
	for _, f := range fs {
		fmt.Fprintf(&b, "\n- [%s] %s %s/%s", f.Severity, f.Kind, f.Namespace, f.Name)
		if f.Container != "" {
			fmt.Fprintf(&b, " (container %s)", f.Container)
		}
		fmt.Fprintf(&b, ": %s", f.Reason)
		if f.Detail != "" {
			fmt.Fprintf(&b, " — %s", f.Detail)
		}
	}
	return b.String()
}
