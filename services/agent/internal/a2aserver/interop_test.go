package a2aserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// bearer is how an SDK user adds a token: a call interceptor.
type bearer string

func (b bearer) Before(ctx context.Context, req *a2aclient.Request) (context.Context, error) {
	req.Meta["Authorization"] = []string{"Bearer " + string(b)}
	return ctx, nil
}
func (bearer) After(context.Context, *a2aclient.Response) error { return nil }

// sdkClient resolves the node's card with the SDK's resolver and builds the
// SDK's client from it, as any A2A user would.
func sdkClient(t *testing.T, n *node, token string, cfg a2aclient.Config) (*a2aclient.Client, *sdk.AgentCard) {
	t.Helper()
	card, err := agentcard.DefaultResolver.Resolve(context.Background(), n.url)
	if err != nil {
		t.Fatal(err)
	}
	opts := []a2aclient.FactoryOption{a2aclient.WithConfig(cfg)}
	if token != "" {
		opts = append(opts, a2aclient.WithInterceptors(bearer(token)))
	}
	c, err := a2aclient.NewFromCard(context.Background(), card, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, card
}

func userMessage(text string) *sdk.MessageSendParams {
	return &sdk.MessageSendParams{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.TextPart{Text: text})}
}

func artifactText(t *testing.T, task *sdk.Task) (string, map[string]any) {
	t.Helper()
	if len(task.Artifacts) != 1 {
		t.Fatalf("task has %d artifacts: %+v", len(task.Artifacts), task)
	}
	var text string
	var data map[string]any
	for _, p := range task.Artifacts[0].Parts {
		switch part := p.(type) {
		case sdk.TextPart:
			text = part.Text
		case sdk.DataPart:
			data = part.Data
		}
	}
	return text, data
}

func TestSDKClientInterop(t *testing.T) {
	t.Parallel()
	const token = "interop-token"
	nodes := startFleet(t, fleetOpts{token: token}, map[string]engine.Playbook{"sol": engine.PlaybookFunc(echo)})
	sol := nodes["k8s-engineer"]
	ctx := context.Background()
	client, card := sdkClient(t, sol, token, a2aclient.Config{})

	// The card.
	if card.URL != sol.url+"/invoke" || card.PreferredTransport != sdk.TransportProtocolJSONRPC || card.ProtocolVersion != "0.3.0" ||
		!card.Capabilities.Streaming || card.Name != "Sol" || !strings.Contains(card.Description, "fleet's actor") {
		t.Errorf("card = %+v", card)
	}
	if len(card.Skills) == 0 || card.Skills[0].Description == "" {
		t.Errorf("card skills = %+v", card.Skills)
	}
	if _, ok := card.SecuritySchemes[a2a.BearerScheme]; !ok {
		t.Errorf("card does not declare the bearer scheme: %+v", card.SecuritySchemes)
	}

	// message/send, blocking.
	res, err := client.SendMessage(ctx, userMessage("report a finding please"))
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*sdk.Task)
	if !ok {
		t.Fatalf("message/send returned %T", res)
	}
	if task.Status.State != sdk.TaskStateCompleted {
		t.Fatalf("state = %s", task.Status.State)
	}
	text, data := artifactText(t, task)
	if text != "echo: report a finding please" || data["run_id"] != string(task.ID) || data["status"] != "completed" {
		t.Errorf("artifact = %q %v", text, data)
	}
	if fs, _ := data["findings"].([]any); len(fs) != 1 {
		t.Errorf("findings in the data part = %v", data["findings"])
	}
	if rec, err := sol.store.GetRun(ctx, string(task.ID)); err != nil || rec.WorkflowType != "a2a-ask" || rec.SocialDepth != 0 {
		t.Errorf("task id is not the run id of an a2a-ask run at depth 0: %+v %v", rec, err)
	}

	// tasks/get finds it.
	got, err := client.GetTask(ctx, &sdk.TaskQueryParams{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != task.ID || got.Status.State != sdk.TaskStateCompleted || got.ContextID != task.ContextID {
		t.Errorf("tasks/get = %+v", got)
	}
	if text, _ := artifactText(t, got); text != "echo: report a finding please" {
		t.Errorf("tasks/get answer = %q", text)
	}

	// tasks/cancel on a finished task: -32002.
	_, err = client.CancelTask(ctx, &sdk.TaskIDParams{ID: task.ID})
	if !errors.Is(err, sdk.ErrTaskNotCancelable) || !strings.Contains(err.Error(), "finished task cannot be canceled") {
		t.Errorf("tasks/cancel on a finished task: %v", err)
	}
	// Unknown task: -32001 for both.
	if _, err := client.GetTask(ctx, &sdk.TaskQueryParams{ID: "no-such-task"}); !errors.Is(err, sdk.ErrTaskNotFound) {
		t.Errorf("tasks/get unknown: %v", err)
	}
	if _, err := client.CancelTask(ctx, &sdk.TaskIDParams{ID: "no-such-task"}); !errors.Is(err, sdk.ErrTaskNotFound) {
		t.Errorf("tasks/cancel unknown: %v", err)
	}

	// message/stream: task, working, artifact, completed (final).
	var kinds []string
	var streamed sdk.TaskID
	for ev, err := range client.SendStreamingMessage(ctx, userMessage("stream me")) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *sdk.Task:
			kinds = append(kinds, "task:"+string(e.Status.State))
			streamed = e.ID
		case *sdk.TaskStatusUpdateEvent:
			k := "status:" + string(e.Status.State)
			if e.Final {
				k += ":final"
			}
			kinds = append(kinds, k)
		case *sdk.TaskArtifactUpdateEvent:
			kinds = append(kinds, "artifact")
			if e.TaskID != streamed || len(e.Artifact.Parts) != 2 {
				t.Errorf("artifact event = %+v", e)
			}
			if tp, _ := e.Artifact.Parts[0].(sdk.TextPart); tp.Text != "echo: stream me" {
				t.Errorf("streamed answer = %+v", e.Artifact.Parts[0])
			}
		default:
			kinds = append(kinds, "other")
		}
	}
	if want := "task:working status:working artifact status:completed:final"; strings.Join(kinds, " ") != want {
		t.Errorf("stream = %v, want %s", kinds, want)
	}
	if got, err := client.GetTask(ctx, &sdk.TaskQueryParams{ID: streamed}); err != nil || got.Status.State != sdk.TaskStateCompleted {
		t.Errorf("tasks/get after stream: %+v %v", got, err)
	}

	// Every message is in the audit log.
	es := findEntry(sol.settled(t), a2a.DirectionReceived)
	if len(es) != 2 {
		t.Fatalf("received entries = %+v", es)
	}
	for _, e := range es {
		if e.Outcome != a2a.OutcomeCompleted || e.Caller != "" || e.Depth != 0 || e.CalleeRunID == "" || e.FinishedAt == nil {
			t.Errorf("audit entry = %+v", e)
		}
	}
}

func TestSDKClientNonBlockingAndCancel(t *testing.T) {
	t.Parallel()
	nodes := startFleet(t, fleetOpts{}, map[string]engine.Playbook{"vera": engine.PlaybookFunc(waitForCancel)})
	vera := nodes["code-reviewer"]
	ctx := context.Background()
	client, _ := sdkClient(t, vera, "", a2aclient.Config{Polling: true}) // Polling = configuration.blocking false

	res, err := client.SendMessage(ctx, userMessage("review PR 4 when you can"))
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*sdk.Task)
	if task.Status.State != sdk.TaskStateWorking {
		t.Fatalf("non-blocking send: state %s", task.Status.State)
	}
	if got, err := client.GetTask(ctx, &sdk.TaskQueryParams{ID: task.ID}); err != nil || got.Status.State != sdk.TaskStateWorking {
		t.Fatalf("tasks/get while running: %+v %v", got, err)
	}
	canceled, err := client.CancelTask(ctx, &sdk.TaskIDParams{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if canceled.Status.State != sdk.TaskStateCanceled {
		t.Fatalf("tasks/cancel: state %s", canceled.Status.State)
	}
	if _, err := client.CancelTask(ctx, &sdk.TaskIDParams{ID: task.ID}); !errors.Is(err, sdk.ErrTaskNotCancelable) {
		t.Fatalf("second cancel: %v", err)
	}
	if got, err := client.GetTask(ctx, &sdk.TaskQueryParams{ID: task.ID}); err != nil || got.Status.State != sdk.TaskStateCanceled {
		t.Fatalf("tasks/get after cancel: %+v %v", got, err)
	}
	es := findEntry(vera.settled(t), a2a.DirectionReceived)
	if len(es) != 1 || es[0].Outcome != a2a.OutcomeCanceled || es[0].Text != "review PR 4 when you can" {
		t.Fatalf("audit = %+v", es)
	}

	// Resubscribing to a finished task yields it and its final status.
	var states []string
	for ev, err := range client.ResubscribeToTask(ctx, &sdk.TaskIDParams{ID: task.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *sdk.Task:
			states = append(states, "task:"+string(e.Status.State))
		case *sdk.TaskStatusUpdateEvent:
			states = append(states, "status:"+string(e.Status.State))
		}
	}
	if strings.Join(states, " ") != "task:canceled status:canceled" {
		t.Errorf("resubscribe = %v", states)
	}
}
