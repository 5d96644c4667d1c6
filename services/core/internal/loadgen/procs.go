package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times (100 on
// every Linux the fleet runs on).
const clockTicks = 100

// CPU returns the CPU time (utime+stime) pid has used, from
// /proc/<pid>/stat.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')' in %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	st, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// Proc is a server the benchmark started.
type Proc struct {
	Name   string
	URL    string
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// Pid is the server's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Output is what the server logged.
func (p *Proc) Output() string { return p.out.String() }

// Stop ends the server (SIGTERM, then SIGKILL after 20s) and waits.
func (p *Proc) Stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() < 1<<20 {
		s.b.Write(p)
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(name, bin string, args, env []string) (*Proc, io.Reader, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	pr, pw := io.Pipe()
	p := &Proc{Name: name, cmd: cmd, out: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(p.exited)
	}()
	return p, io.TeeReader(pr, p.out), nil
}

// StartCore starts the core binary on 127.0.0.1:0 with env (KEY=value)
// and learns its address from its "core listening" log line.
func StartCore(ctx context.Context, name, bin string, env []string) (*Proc, error) {
	env = append([]string{"LISTEN_ADDR=127.0.0.1:0", "HOME=" + os.Getenv("HOME")}, env...)
	p, r, err := start(name, bin, nil, env)
	if err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "core listening" {
				select {
				case addr <- l.Addr:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		p.URL = "http://" + a
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited before listening:\n%s", name, p.Output())
	case <-ctx.Done():
		p.Stop()
		return nil, fmt.Errorf("%s not listening: %w\n%s", name, ctx.Err(), p.Output())
	}
}

// alertmanagerConfig routes every alert to a receiver that notifies
// nobody: what is measured is Alertmanager taking alerts in.
const alertmanagerConfig = `route:
  receiver: "null"
  group_by: [alertname, namespace]
  group_wait: 30s
  group_interval: 5m
  repeat_interval: 4h
receivers:
  - name: "null"
`

// StartAlertmanager starts Alertmanager in dir. It cannot bind port 0 and
// say which port it got, so a free port is picked; when another process
// takes it first, Alertmanager exits and is started on a fresh one.
func StartAlertmanager(ctx context.Context, bin, dir string) (*Proc, error) {
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(alertmanagerConfig), 0o600); err != nil {
		return nil, err
	}
	for attempt := 1; attempt <= 5; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		p, r, err := start("alertmanager", bin, []string{"--config.file=" + cfg, "--storage.path=" + filepath.Join(dir, "data"),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--cluster.listen-address=", "--log.level=warn"}, os.Environ())
		if err != nil {
			return nil, err
		}
		go func() { _, _ = io.Copy(io.Discard, r) }()
		p.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
		ok, err := waitReady(ctx, p)
		if ok {
			return p, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("alertmanager: its port was taken 5 times in a row")
}

// waitReady polls /-/ready: ok, or not ok without error when the port was
// taken.
func waitReady(ctx context.Context, p *Proc) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		select {
		case <-p.exited:
			if strings.Contains(p.Output(), "address already in use") {
				return false, nil
			}
			return false, fmt.Errorf("alertmanager exited before it was ready:\n%s", p.Output())
		case <-ctx.Done():
			p.Stop()
			return false, fmt.Errorf("alertmanager not ready: %w\n%s", ctx.Err(), p.Output())
		case <-time.After(50 * time.Millisecond):
		}
		if resp, err := http.Get(p.URL + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true, nil
			}
		}
	}
}
