package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeChildEnv makes the test binary play a fleet member: it binds
// LISTEN_ADDR and answers /ready, or exits saying why it could not bind.
const fakeChildEnv = "KUBECREW_SANDBOX_FAKE_CHILD"

func fakeChild() {
	l, err := net.Listen("tcp", os.Getenv("LISTEN_ADDR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ready":true}`)
	}))
	os.Exit(1)
}

// fakeBinDir holds "agent" and "core" links to this test binary.
func fakeBinDir(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []string{"agent", "core"} {
		if err := os.Symlink(self, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A port taken between choosing it and binding it (another program on the
// machine) starts the fleet again on fresh ports; a port the user chose is
// never changed.
func TestStartFleetOnFreePortsRetriesATakenPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().(*net.TCPAddr).Port

	picks := 0
	choosePorts = func(core, agent int) (int, int, error) {
		picks++
		c, a, err := ChoosePorts(core, agent)
		if picks == 1 && core == 0 {
			c = taken // the first pick collides, as a racing program would make it
		}
		return c, a, err
	}
	t.Cleanup(func() { choosePorts = ChoosePorts })

	cfg := FleetConfig{BinDir: fakeBinDir(t), LogDir: t.TempDir(), Host: "127.0.0.1",
		Environ: append(os.Environ(), fakeChildEnv+"=1")}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	sup := NewSupervisor()
	defer sup.Stop(context.Background(), 5*time.Second)
	var out bytes.Buffer
	f, err := StartFleetOnFreePorts(ctx, cfg, sup, &out)
	if err != nil {
		t.Fatalf("start: %v\n%s", err, out.String())
	}
	if picks != 2 || strings.Contains(f.Core, fmt.Sprint(":", taken)) {
		t.Fatalf("picks = %d, core %s; want a second pick away from the taken port %d", picks, f.Core, taken)
	}
	if !strings.Contains(out.String(), "starting the fleet again on fresh ports") {
		t.Errorf("output does not say why it started again:\n%s", out.String())
	}
	if code, err := GetJSON(ctx, f.Core+"/ready", new(map[string]any)); err != nil || code != http.StatusOK {
		t.Fatalf("core /ready = %d, %v", code, err)
	}
	select {
	case p := <-sup.Exited():
		t.Fatalf("%s of the first attempt reported as exited after the restart", p.Name)
	default:
	}
	sup.Stop(context.Background(), 5*time.Second)

	// the user's own port: refused with what to do, not moved
	cfg.CorePort = taken
	cfg.AgentPort = 0
	_, err = StartFleetOnFreePorts(ctx, cfg, NewSupervisor(), &out)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d is taken", taken)) {
		t.Fatalf("a taken port the user chose: err = %v, want it refused", err)
	}
}
