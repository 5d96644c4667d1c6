package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkStartToReady builds the agent binary, then starts it b.N times
// and measures the time from exec to the first 200 from /ready, and the
// process's resident memory once ready (reported as rss_MB).
func BenchmarkStartToReady(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "agent")
	if out, err := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	var totalRSS int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "AGENT_PERSONA=noor", "LISTEN_ADDR="+addr, "KUBECONFIG=", "LOG_LEVEL=error", "AUTH_DISABLED=true",
			"READY_REQUIRE=store,model") // no cluster here: boot time, not the API server
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		url := "http://" + addr + "/ready"
		for {
			resp, err := http.Get(url)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Since(start) > 10*time.Second {
				_ = cmd.Process.Kill()
				b.Fatal("agent not ready after 10s")
			}
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		totalRSS += rssKB(b, cmd.Process.Pid)
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		b.StartTimer()
	}
	b.ReportMetric(float64(totalRSS)/float64(b.N)/1024, "rss_MB")
}

func rssKB(b *testing.B, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
