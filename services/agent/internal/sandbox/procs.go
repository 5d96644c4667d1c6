package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one child process of the fleet, in its own process group so a
// terminal Ctrl-C reaches the sandbox alone, which then stops children in
// order, and so stopping it takes whatever it spawned too.
type Proc struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error // valid after done
}

// Supervisor starts and stops the fleet's processes.
type Supervisor struct {
	mu     sync.Mutex
	procs  []*Proc
	exited chan *Proc // a child that ended on its own
	closed bool
}

// NewSupervisor returns an empty Supervisor.
func NewSupervisor() *Supervisor { return &Supervisor{exited: make(chan *Proc, 16)} }

// Pdeathsig fires when the OS thread that forked the child exits, not the
// process (golang/go#27505), so every child is forked from one goroutine
// locked to its thread for the life of the program.
var forker = make(chan func())

func init() {
	go func() {
		runtime.LockOSThread() // never unlocked: this thread lives as long as the process
		for f := range forker {
			f()
		}
	}()
}

// startLocked runs cmd.Start on the forker thread.
func startLocked(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	forker <- func() { errc <- cmd.Start() }
	return <-errc
}

// Start runs path with env (the whole environment), output to logPath.
func (s *Supervisor) Start(name, path string, env []string, logPath string) (*Proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("supervisor stopped")
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	// Pdeathsig: if the sandbox itself is killed with SIGKILL the children
	// still get SIGTERM from the kernel instead of lingering.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := startLocked(cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, path, err)
	}
	p := &Proc{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	s.procs = append(s.procs, p)
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if !closed {
			select {
			case s.exited <- p:
			default:
			}
		}
	}()
	return p, nil
}

// PID is the process id (and process group id).
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited delivers a child that ended while the fleet was meant to run.
func (s *Supervisor) Exited() <-chan *Proc { return s.exited }

// PIDs lists the children's process ids.
func (s *Supervisor) PIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, 0, len(s.procs))
	for _, p := range s.procs {
		out = append(out, p.PID())
	}
	return out
}

// Stop sends SIGTERM to every child's process group, waits up to grace for
// them to end (agents let running runs finish), then SIGKILLs the rest.
// ctx ending early (a second Ctrl-C) skips the wait.
func (s *Supervisor) Stop(ctx context.Context, grace time.Duration) {
	s.mu.Lock()
	s.closed = true
	procs := append([]*Proc(nil), s.procs...)
	s.mu.Unlock()
	for _, p := range procs {
		_ = syscall.Kill(-p.PID(), syscall.SIGTERM)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
wait:
	for _, p := range procs {
		select {
		case <-p.done:
		case <-timer.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	for _, p := range procs {
		// the whole group: a child may have started its own children
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	}
	for _, p := range procs {
		<-p.done
	}
}

// Reset stops every child as Stop does, forgets them, and opens the
// Supervisor again for a fresh start (a fleet started again on new ports).
// The children it stops are not reported on Exited.
func (s *Supervisor) Reset(ctx context.Context, grace time.Duration) {
	s.Stop(ctx, grace)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = nil
	for {
		select {
		case <-s.exited:
			continue
		default:
		}
		break
	}
	s.closed = false
}

// tail returns the last n lines of a log file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
