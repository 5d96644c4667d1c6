package store

import (
	"bufio"
	"context"
	"github.com/kubecrew/kubecrew/pkg/store/pgtest"
	"os"
	"os/exec"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"
)

const migrateHelperEnv = "KUBECREW_STORE_MIGRATE_URL"

// TestMigrateHelperProcess is the child of TestTwoProcessesMigrateOneEmptyDatabase:
// it waits for the parent's go (stdin closed), then opens the store.
func TestMigrateHelperProcess(t *testing.T) {
	u := os.Getenv(migrateHelperEnv)
	if u == "" {
		t.Skip("helper process for TestTwoProcessesMigrateOneEmptyDatabase")
	}
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	p, err := OpenPostgres(context.Background(), u, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	defer p.Close()
	if err := p.CreateRun(context.Background(), Run{ID: "from-" + os.Getenv("KUBECREW_STORE_CHILD"), Agent: "noor"}); err != nil {
		t.Fatalf("CreateRun after migrating: %v", err)
	}
}

func TestTwoProcessesMigrateOneEmptyDatabase(t *testing.T) {
	t.Parallel()
	u := pgtest.Schema(t, "kc")
	type child struct {
		cmd   *exec.Cmd
		stdin interface{ Close() error }
		out   *lockedBuf
	}
	var children []child
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMigrateHelperProcess$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), migrateHelperEnv+"="+u, "KUBECREW_STORE_CHILD="+string(rune('a'+i)))
		out := &lockedBuf{}
		cmd.Stdout, cmd.Stderr = out, out
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, child{cmd, stdin, out})
	}
	for _, c := range children { // both go at once
		c.stdin.Close()
	}
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("process %d did not start: %v\n%s", i, err, c.out.String())
		}
	}
	p := direct(t, u)
	for _, id := range []string{"from-a", "from-b"} {
		if _, err := p.GetRun(context.Background(), id); err != nil {
			t.Errorf("run %s: %v", id, err)
		}
	}
}

func TestConcurrentOpenInOneProcess(t *testing.T) {
	t.Parallel()
	u := pgtest.Schema(t, "kc")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			p, err := OpenPostgres(context.Background(), u, zaptest.NewLogger(t))
			if err == nil {
				p.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("OpenPostgres %d: %v", i, err)
		}
	}
}

type lockedBuf struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
