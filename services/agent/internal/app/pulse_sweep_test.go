package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// discord records the webhook posts it receives; fail makes it answer 500.
type discord struct {
	mu    sync.Mutex
	posts []map[string]any
	fail  bool
}

func (d *discord) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	d.posts = append(d.posts, m)
	w.WriteHeader(http.StatusNoContent)
}

func (d *discord) count() int { d.mu.Lock(); defer d.mu.Unlock(); return len(d.posts) }

// POST /pulse runs Noor's real sweep against the fixture cluster and posts
// to Discord once, under her name and colour; an identical tick posts
// nothing; a failed delivery is retried on the next tick.
func TestPulseRunsNoorsSweepOnTheFixturesAndPostsOnce(t *testing.T) {
	// A private API server: the sweep covers every namespace, and two ticks
	// must see the same cluster for the second to stay quiet, which other
	// tests' objects on the shared server would not allow.
	env := kubetest.Private(t, "pulse-sweep")
	ns := fmt.Sprintf("kc-pulse-%d", rand.IntN(1_000_000))
	if err := env.LoadFixtures(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	hook := &discord{fail: true}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	a := start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": env.Kubeconfig,
		"DISCORD_WEBHOOK_URL": srv.URL + "/api/webhooks/1/secret", "PULSE_ENABLED": "false"})

	tick := func() map[string]any {
		code, body := do(t, "POST", a.url+"/pulse?task=0", "")
		if code != 200 {
			t.Fatalf("POST /pulse = %d %s", code, body)
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		return m
	}
	first := tick()
	if hook.count() != 0 {
		t.Fatalf("a failing webhook recorded a post")
	}
	if b, _ := json.Marshal(first); !strings.Contains(string(b), ns+"-deployment-oomkill") {
		t.Errorf("the sweep did not find the fixtures: %s", b)
	}
	hook.mu.Lock()
	hook.fail = false
	hook.mu.Unlock()
	tick() // retried: the failed delivery set no stamp
	if hook.count() != 1 {
		t.Fatalf("posts after the retry = %d, want 1", hook.count())
	}
	tick() // identical state, identical body: quiet
	if hook.count() != 1 {
		t.Fatalf("an identical tick posted again (%d posts)", hook.count())
	}
	post := hook.posts[0]
	if post["username"] != "Noor" {
		t.Errorf("username = %v, want Noor", post["username"])
	}
	embeds, _ := post["embeds"].([]any)
	if len(embeds) == 0 {
		t.Fatalf("no embed: %v", post)
	}
	e := embeds[0].(map[string]any)
	if c, _ := e["color"].(float64); int(c) != 0x5865F2 {
		t.Errorf("colour = %v, want Noor's 0x5865F2", e["color"])
	}
	desc, _ := e["description"].(string)
	// every fixture is at 0/1 available, so critical: the body opens with a
	// critical line of the fixtures.
	if !strings.Contains(desc, ns+"/Deployment/") || !strings.HasPrefix(strings.TrimSpace(desc), "🔴") {
		t.Errorf("report body (most severe first, with the fixtures):\n%s", desc)
	}
	// The post went out on the second tick: the first had already seen
	// every finding, so each says since when it is open.
	if !strings.Contains(desc, "OOMKilled") || !strings.Contains(desc, "· still open since ") || strings.Contains(desc, "· new") {
		t.Errorf("report body does not say the findings are still open since the first sweep:\n%s", desc)
	}

	// Someone fixes oomkill in the cluster: the next sweep resolves it,
	// and its report says so; the other fixtures stay open.
	fixWorkload(t, env.Clientset, ns, "oomkill")
	tick()
	if hook.count() != 2 {
		t.Fatalf("posts after the fix = %d, want 2", hook.count())
	}
	second, _ := hook.posts[1]["embeds"].([]any)
	desc2, _ := second[0].(map[string]any)["description"].(string)
	title2, _ := second[0].(map[string]any)["title"].(string)
	if !strings.Contains(desc2, "✅ resolved — "+ns+"/Deployment/oomkill — OOMKilled · resolved (open since ") ||
		strings.Contains(desc2, "🔴 "+ns+"/Deployment/oomkill") || !strings.Contains(title2, "1 resolved") {
		t.Errorf("the report after the fix does not say oomkill was resolved:\n%s\n%s", title2, desc2)
	}
	code, body := do(t, "GET", a.url+"/findings/lifecycle?state=resolved&namespace="+ns, "")
	var lives struct {
		Items []struct {
			Key, State string
			ResolvedAt *string `json:"resolved_at"`
		}
	}
	if code != 200 || json.Unmarshal(body, &lives) != nil || len(lives.Items) != 1 ||
		lives.Items[0].Key != ns+"-deployment-oomkill-app-oomkilled" || lives.Items[0].ResolvedAt == nil {
		t.Errorf("GET /findings/lifecycle?state=resolved = %d %s, want oomkill alone", code, body)
	}
	code, body = do(t, "GET", a.url+"/findings/lifecycle?namespace="+ns+"&severity=critical", "")
	if code != 200 || strings.Contains(string(body), "oomkill") || !strings.Contains(string(body), `"state":"open"`) {
		t.Errorf("GET /findings/lifecycle (open) = %d %s, want the other fixtures open, not oomkill", code, body)
	}
	if code, body := do(t, "GET", a.url+"/findings/lifecycle?state=closed", ""); code != 400 || !strings.Contains(string(body), `"error"`) {
		t.Errorf("a bad state = %d %s, want 400 with an error", code, body)
	}

	// The morning digest (Noor's PULSE.md, task 2) is built from that
	// lifecycle without a model and posted once a day.
	digest := func() map[string]any {
		code, body := do(t, "POST", a.url+"/pulse?task=2", "")
		if code != 200 || !strings.Contains(string(body), "Morning digest") {
			t.Fatalf("POST /pulse?task=2 = %d %s, want the morning digest", code, body)
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		return m
	}
	digest()
	if hook.count() != 3 {
		t.Fatalf("posts after the digest = %d, want 3", hook.count())
	}
	d, _ := hook.posts[2]["embeds"].([]any)
	ddesc, _ := d[0].(map[string]any)["description"].(string)
	dtitle, _ := d[0].(map[string]any)["title"].(string)
	if !strings.HasPrefix(dtitle, "Morning digest — ") || !strings.Contains(ddesc, "Resolved (1):") ||
		!strings.Contains(ddesc, ns+"/Deployment/oomkill (app) — OOMKilled") || !strings.Contains(ddesc, ns+"/Deployment/crashloop") {
		t.Errorf("digest post:\n%s\n%s", dtitle, ddesc)
	}
	digest()
	if hook.count() != 3 {
		t.Errorf("a second digest the same day posted (%d posts)", hook.count())
	}
}

// fixWorkload makes a fixture Deployment healthy the way a fix would leave
// it: its pods running and ready (restart count and last termination kept,
// as the kubelet keeps them), the Deployment fully available.
func fixWorkload(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := t.Context()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, name+"-") {
			continue
		}
		p.Status.Phase = corev1.PodRunning
		for i := range p.Status.ContainerStatuses {
			c := &p.Status.ContainerStatuses[i]
			c.Ready, c.Started = true, ptr(true)
			c.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := *d.Spec.Replicas
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas, d.Status.UnavailableReplicas = n, n, n, n, 0
	d.Status.ObservedGeneration = d.Generation
	d.Status.Conditions = []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", LastUpdateTime: now, LastTransitionTime: now},
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: now, LastTransitionTime: now},
	}
	if _, err := cs.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
