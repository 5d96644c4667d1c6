package pgtest

import (
	"fmt"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
)

// Cluster is a throwaway PostgreSQL cluster a test starts itself (initdb,
// pg_ctl from the machine's PostgreSQL binaries), listening on a unix
// socket only: no TCP port to pick or race for, and stopping it never
// touches the machine's main cluster. Tests stop and start it to play a
// real database outage.
type Cluster struct {
	t       testing.TB
	bin     string
	data    string
	sock    string
	log     string
	asUser  string // run the binaries as this user (initdb refuses root)
	mu      sync.Mutex
	running bool
}

// binDir finds the newest /usr/lib/postgresql/<version>/bin holding initdb.
func binDir() string {
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(ms, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(ms[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(ms[j]))))
		return vi > vj
	})
	if len(ms) == 0 {
		return ""
	}
	return filepath.Dir(ms[0])
}

// StartCluster initialises and starts a cluster in a temporary directory,
// stopped and removed at cleanup. Without PostgreSQL's server binaries it
// skips (fails with CI=true).
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := binDir()
	if bin == "" {
		msg := "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// A short path: a unix socket's path is limited to 107 bytes.
	dir, err := os.MkdirTemp("", "kcpg")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin, data: filepath.Join(dir, "data"), sock: dir, log: filepath.Join(dir, "postgres.log")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, and initdb refuses root: no postgres user to run it as: %v", err)
		}
		c.asUser = "postgres"
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		c.mu.Lock()
		running := c.running
		c.mu.Unlock()
		if running {
			_ = c.pgctl("stop", "-m", "immediate", "-w")
		}
		if t.Failed() {
			if b, err := os.ReadFile(c.log); err == nil {
				t.Logf("throwaway postgres log:\n%s", b)
			}
		}
		_ = os.RemoveAll(dir)
	})
	if out, err := c.cmd("initdb", "-D", c.data, "-A", "trust", "-U", "kubecrew", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.Start()
	return c
}

func (c *Cluster) cmd(name string, args ...string) *osexec.Cmd {
	path := filepath.Join(c.bin, name)
	if c.asUser != "" {
		return osexec.Command("runuser", append([]string{"-u", c.asUser, "--", path}, args...)...)
	}
	return osexec.Command(path, args...)
}

func (c *Cluster) pgctl(args ...string) error {
	args = append([]string{"-D", c.data, "-l", c.log}, args...)
	if out, err := c.cmd("pg_ctl", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl %v: %w\n%s", args, err, out)
	}
	return nil
}

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start() {
	c.t.Helper()
	opts := fmt.Sprintf("-c listen_addresses='' -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off", c.sock)
	if err := c.pgctl("start", "-w", "-t", "60", "-o", opts); err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.running = true
	c.mu.Unlock()
}

// Stop stops the server (fast shutdown: sessions are cut, as in a real
// outage) and waits until it is down.
func (c *Cluster) Stop() {
	c.t.Helper()
	if err := c.pgctl("stop", "-m", "fast", "-w"); err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.running = false
	c.mu.Unlock()
}

// URL is the cluster's database URL (over its unix socket).
func (c *Cluster) URL() string {
	return "postgres://kubecrew@/postgres?host=" + c.sock + "&sslmode=disable"
}
