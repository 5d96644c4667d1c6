package upgradetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a service binary (the core or an agent, of either version)
// running as a process of its own.
type Process struct {
	Name   string // which version, in messages
	Cmd    *exec.Cmd
	Addr   string
	Exited chan struct{} // closed once it has exited
	mu     sync.Mutex
	stderr bytes.Buffer
}

// Stderr is what the process has logged so far.
func (p *Process) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Start runs the binary at path with LISTEN_ADDR=127.0.0.1:0, HOME and env
// (later entries win), and learns its address from the JSON log line whose
// msg is listening ("core listening", "agent listening"). It is killed at
// the test's cleanup.
func Start(t testing.TB, path string, env []string, listening string) *Process {
	t.Helper()
	cmd := &exec.Cmd{Path: path, Args: []string{path}, Env: append([]string{"LISTEN_ADDR=127.0.0.1:0", "HOME=" + os.Getenv("HOME")}, env...)}
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd, Exited: make(chan struct{})}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.Exited
	})
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if strings.Contains(line, `"msg":"`+listening+`"`) {
				var l struct{ Addr string }
				if json.Unmarshal([]byte(line), &l) == nil && l.Addr != "" {
					addrs <- l.Addr
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
		_ = cmd.Wait()
		close(p.Exited)
	}()
	select {
	case p.Addr = <-addrs:
	case <-p.Exited:
		t.Fatalf("%s exited before %q:\n%s", path, listening, p.Stderr())
	case <-time.After(time.Minute):
		t.Fatalf("%s: no %q within a minute:\n%s", path, listening, p.Stderr())
	}
	return p
}

// Stop sends SIGTERM and fails the test unless the process exits 0
// within a minute.
func (p *Process) Stop(t testing.TB) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited:
	case <-time.After(time.Minute):
		t.Fatalf("the %s process did not stop on SIGTERM:\n%s", p.Name, p.Stderr())
	}
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the %s process exited %d after SIGTERM:\n%s", p.Name, code, p.Stderr())
	}
}
