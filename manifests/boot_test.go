package manifests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The boot test starts the real binaries with the environment a rendered pod
// would get (ConfigMap values, literal env, the downward-API namespace, the
// routes file from its ConfigMap) and asks them /health, /ready and /info.
// It catches what no schema check can: a ConfigMap value the binary refuses
// (LOG_LEVEL=DEBUG, a malformed routes file), a persona setting shadowed by
// the manifest (verified on the binary's own /info), a slow boot.
//
// Binaries: $KUBECREW_AGENT_BIN and $KUBECREW_CORE_BIN.

// binaries returns the agent and core binaries the boot test runs:
// $KUBECREW_AGENT_BIN and $KUBECREW_CORE_BIN (hack/manifests-check.sh builds
// them). Without them the test skips, or fails when CI=true.
func binaries(t *testing.T) map[string]string {
	t.Helper()
	bins := map[string]string{}
	for _, b := range []string{"agent", "core"} {
		v := "KUBECREW_" + strings.ToUpper(b) + "_BIN"
		p := os.Getenv(v)
		if p == "" {
			msg := "boot test: set KUBECREW_AGENT_BIN and KUBECREW_CORE_BIN (hack/manifests-check.sh does)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		bins[b] = p
	}
	return bins
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// bootToken stands for the AUTH_TOKEN a pod reads from its Secret.
const bootToken = "boot-t0ken"

// podEnv is the environment the kubelet would give the container, without
// Secrets (every reference but AUTH_TOKEN's is optional outside prod;
// absent = unset).
func podEnv(t *testing.T, r *Render, d *Deployment, dir string) []string {
	t.Helper()
	ctr := d.Spec.Template.Spec.Containers[0]
	var env []string
	for k, v := range effectiveEnv(r, ctr) {
		switch {
		case v.from == "Secret" && k == "AUTH_TOKEN":
			env = append(env, k+"="+bootToken) // required: no service starts without it
		case v.from == "Secret":
			continue
		case strings.HasPrefix(v.from, "fieldRef metadata.namespace"):
			env = append(env, k+"="+d.Metadata.Namespace)
		case k == "ROUTES_FILE":
			// the file comes from a ConfigMap volume: write it where the
			// binary can read it
			data, ok := configMapFile(r, d.Spec.Template.Spec, ctr, v.value)
			if !ok {
				t.Fatalf("%s: ROUTES_FILE %s is not in a mounted ConfigMap", d.Ref(), v.value)
			}
			p := filepath.Join(dir, "routes.yaml")
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			env = append(env, k+"="+p)
		default:
			env = append(env, k+"="+v.value)
		}
	}
	return env
}

type bootResult struct {
	ready      int
	info       map[string]any
	bootMillis int64
}

// boot starts bin with env, waits for /health and reads /ready and /info.
func boot(t *testing.T, bin string, env []string, wantInfo bool) bootResult {
	t.Helper()
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	// Only the pod's environment (plus PATH/HOME, which a container has).
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Env = append(cmd.Env, fmt.Sprintf("LISTEN_ADDR=127.0.0.1:%d", port))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cancel()
		<-exited
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{Timeout: 2 * time.Second}
	// The manifests give a boot 60 s (startupProbe 2 s × 30); a machine
	// shared by parallel builds gets the same budget here.
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("exited before /health answered (%v):\n%s", err, lastLines(stderr.String(), 5))
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health not 200 within the startupProbe budget (60 s):\n%s", lastLines(stderr.String(), 5))
		}
	}
	res := bootResult{bootMillis: time.Since(start).Milliseconds()}
	resp, err := client.Get(base + "/ready")
	if err != nil {
		t.Fatalf("/ready: %v", err)
	}
	resp.Body.Close()
	res.ready = resp.StatusCode
	if wantInfo {
		req, _ := http.NewRequest(http.MethodGet, base+"/info", nil)
		req.Header.Set("Authorization", "Bearer "+bootToken)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("/info: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/info: %s", resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(&res.info); err != nil {
			t.Fatalf("/info: %v", err)
		}
	}
	return res
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestRenderedPodsBoot boots every Deployment of every overlay on the real
// binaries.
func TestRenderedPodsBoot(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the boot test builds and starts the binaries")
	}
	bins := binaries(t)
	// Agents with cluster tools need a kubeconfig outside a cluster: the
	// shared test API server when there is one, else one that points nowhere
	// (start-up must not need the cluster).
	kubeconfig := os.Getenv("KUBECREW_TEST_KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
		const nowhere = "apiVersion: v1\nkind: Config\nclusters:\n- name: none\n  cluster: {server: 'https://127.0.0.1:1'}\nusers:\n- name: none\n  user: {token: none}\ncontexts:\n- name: none\n  context: {cluster: none, user: none}\ncurrent-context: none\n"
		if err := os.WriteFile(kubeconfig, []byte(nowhere), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tg := range targets(t) {
		if tg.component != "" {
			continue // same Deployments as the base, one env var apart
		}
		r := render(t, tg)
		for i := range r.Deployments {
			d := &r.Deployments[i]
			t.Run(strings.ReplaceAll(tg.name, "/", "_")+"/"+d.Metadata.Name, func(t *testing.T) {
				t.Parallel()
				isAgent := d.Spec.Template.Metadata.Labels[Component] == "agent"
				bin := bins["core"]
				env := podEnv(t, r, d, t.TempDir())
				if isAgent {
					bin = bins["agent"]
					env = append(env, "KUBECONFIG="+kubeconfig)
				}
				res := boot(t, bin, env, isAgent)
				t.Logf("/health after %d ms, /ready %d", res.bootMillis, res.ready)
				if res.ready != http.StatusOK && res.ready != http.StatusServiceUnavailable {
					t.Errorf("/ready answered %d, want 200 or 503", res.ready)
				}
				if !isAgent {
					if res.ready != http.StatusOK {
						t.Errorf("core /ready %d with the in-memory store, want 200", res.ready)
					}
					return
				}
				checkInfo(t, r, d, res.info)
			})
		}
	}
}

// checkInfo: the binary's own account of where each setting came from.
func checkInfo(t *testing.T, r *Render, d *Deployment, info map[string]any) {
	t.Helper()
	settings, _ := info["settings"].(map[string]any)
	if settings == nil {
		t.Fatalf("/info has no settings: %v", info)
	}
	setting := func(name string) (value, source string) {
		s, _ := settings[name].(map[string]any)
		value, _ = s["value"].(string)
		source, _ = s["source"].(string)
		return value, source
	}
	// Tools and iterations come from the persona files, not the manifest.
	for _, k := range []string{"AGENT_TOOLS", "AGENT_MAX_ITERATIONS"} {
		if _, src := setting(k); src == "env" {
			t.Errorf("%s: the binary reports %s from the environment: the manifest shadows the persona file", d.Ref(), k)
		}
	}
	env := effectiveEnv(r, d.Spec.Template.Spec.Containers[0])
	for _, k := range []string{"LOG_LEVEL", "AGENT_NAMESPACE", "PEER_URL_TEMPLATE"} {
		want := env[k].value
		if k == "AGENT_NAMESPACE" {
			want = d.Metadata.Namespace
		}
		if got, src := setting(k); got != want || src != "env" {
			t.Errorf("%s: /info %s = %q (%s), want %q from env", d.Ref(), k, got, src, want)
		}
	}
	agent, _ := info["agent"].(map[string]any)
	if slug, _ := agent["slug"].(string); "agent-"+slug != d.Metadata.Name {
		t.Errorf("%s: /info says slug %q", d.Ref(), slug)
	}
}
