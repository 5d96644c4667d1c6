package manifests

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/manifests/image"
)

// distrolessNonroot is the Dockerfile's final base, and what it gives the
// binaries that the engine-less image must give them too.
const distrolessNonroot = "gcr.io/distroless/static-debian12:nonroot"

var baseProvides = []string{image.CACerts, "/etc/passwd", "/etc/group", "/tmp", image.Home}

// TestImageMatchesDockerfile compares, statically, the Dockerfile's final
// stage with what cmd/image builds: the binaries and where they go, the
// user, the entrypoint, the ports, the source label, and a base that
// provides what the image's base layer does.
func TestImageMatchesDockerfile(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ins, err := ParseDockerfile(b)
	if err != nil {
		t.Fatal(err)
	}
	_, bins, err := CheckDockerfile(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range image.Binaries {
		want = append(want, filepath.Join(image.BinDir, name))
	}
	var got []string
	for b := range bins {
		got = append(got, b)
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("the Dockerfile ships %v, cmd/image ships %v", got, want)
	}
	last := ins[len(ins)-1].Stage
	final := map[string][]string{}
	for _, in := range ins {
		if in.Stage == last {
			final[in.Cmd] = append(final[in.Cmd], in.Args)
		}
	}
	src := image.Options{Source: "https://github.com/kubecrew/kubecrew"}.Labels()["org.opencontainers.image.source"]
	for _, tc := range []struct{ what, got, want string }{
		{"FROM", strings.Join(final["FROM"], ";"), distrolessNonroot},
		{"USER", strings.Join(final["USER"], ";"), image.User},
		{"ENTRYPOINT", strings.Join(final["ENTRYPOINT"], ";"), fmt.Sprintf("[%q]", image.Entrypoint)},
		{"EXPOSE", strings.Join(final["EXPOSE"], ";"), "8000 8080"},
	} {
		if tc.got != tc.want {
			t.Errorf("Dockerfile %s %q, the engine-less image has %q", tc.what, tc.got, tc.want)
		}
	}
	if l := strings.Join(final["LABEL"], " "); !strings.Contains(l, `org.opencontainers.image.source="`+src+`"`) {
		t.Errorf("Dockerfile LABEL %s lacks org.opencontainers.image.source=%q", l, src)
	}
	for _, p := range image.Ports {
		if !strings.Contains(" "+strings.Join(final["EXPOSE"], " ")+" ", " "+strings.TrimSuffix(p, "/tcp")+" ") {
			t.Errorf("Dockerfile does not EXPOSE %s", p)
		}
	}
}

var (
	imageOnce sync.Once
	imageDir  string // removed by TestMain: the binaries, layout, tarball and rootfs (~300 MB)
	imageRoot string
	imageErr  error
)

// TestMain removes what imageRootfs built once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if imageDir != "" {
		_ = os.RemoveAll(imageDir)
	}
	os.Exit(code)
}

// imageRootfs builds the image for this machine's platform from the static
// binaries ($KUBECREW_AGENT_BIN/$KUBECREW_CORE_BIN, which
// hack/manifests-check.sh builds with CGO_ENABLED=0, or a build here), writes
// the OCI tarball, reads it back and unpacks the image's layers: once per
// test run.
func imageRootfs(t testing.TB) string {
	t.Helper()
	imageOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubecrew-image-test-")
		if err != nil {
			imageErr = err
			return
		}
		imageDir = dir
		p := image.Platform{OS: "linux", Arch: runtime.GOARCH}
		bins := func(image.Platform) (map[string]string, error) {
			a, c := os.Getenv("KUBECREW_AGENT_BIN"), os.Getenv("KUBECREW_CORE_BIN")
			if a != "" && c != "" {
				return map[string]string{"agent": a, "core": c}, nil
			}
			return image.GoBuild(context.Background(), repoRoot, p, "test", filepath.Join(dir, "bin"))
		}
		idx, err := image.Build(image.Options{Version: "test", Source: "https://github.com/kubecrew/kubecrew",
			CACerts: "/etc/ssl/certs/ca-certificates.crt", Platforms: []image.Platform{p}, Binaries: bins,
			Compression: gzip.BestSpeed})
		if err != nil {
			imageErr = err
			return
		}
		if err := image.WriteLayout(filepath.Join(dir, "oci"), idx, "test"); err != nil {
			imageErr = err
			return
		}
		tarPath := filepath.Join(dir, "kubecrew.oci.tar")
		if err := image.WriteTarball(filepath.Join(dir, "oci"), tarPath); err != nil {
			imageErr = err
			return
		}
		back, err := image.ReadTarball(tarPath, filepath.Join(dir, "read"))
		if err != nil {
			imageErr = err
			return
		}
		img, err := image.PlatformImage(back, p)
		if err != nil {
			imageErr = err
			return
		}
		imageRoot = filepath.Join(dir, "rootfs")
		imageErr = image.Unpack(img, imageRoot)
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageRoot
}

var listenAddr = regexp.MustCompile(`"msg":"(agent|core) listening".*?"addr":"([^"]+)"`)

// TestImageBoots boots both binaries straight from the unpacked layers (no
// engine: they are static) on a port of their own choosing, read from their
// listening log line, and asks /health.
func TestImageBoots(t *testing.T) {
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
		t.Skipf("no system CA bundle: %v", err)
	}
	root := imageRootfs(t)
	for _, p := range baseProvides {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("the image lacks %s, which the Dockerfile's base provides", p)
		}
	}
	for _, tc := range []struct {
		bin string
		env []string
	}{
		{"agent", []string{"AGENT_PERSONA=platform-sre"}},
		{"core", nil},
	} {
		t.Run(tc.bin, func(t *testing.T) {
			d := bootFromImage(t, root, tc.bin, tc.env)
			t.Logf("%s from the image's layers: /health 200 after %s", tc.bin, d.Round(time.Millisecond))
		})
	}
}

// bootFromImage runs rootfs's /usr/local/bin/<bin> with only env (and the
// image's CA bundle) and returns how long /health took to answer 200.
func bootFromImage(t testing.TB, root, bin string, env []string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, image.BinDir, bin))
	cmd.Dir = root
	cmd.Env = append([]string{"LISTEN_ADDR=127.0.0.1:0", "AUTH_TOKEN=" + bootToken, "HOME=" + filepath.Join(root, image.Home),
		"TMPDIR=" + t.TempDir(), "SSL_CERT_FILE=" + filepath.Join(root, image.CACerts)}, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("exec %s from the image: %v", bin, err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	addr := make(chan string, 1)
	var logTail []string
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			mu.Lock()
			logTail = append(logTail, sc.Text())
			mu.Unlock()
			if m := listenAddr.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[2]:
				default:
				}
			}
		}
		close(addr)
	}()
	var a string
	select {
	case v, ok := <-addr:
		if !ok {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s exited before listening:\n%s", bin, strings.Join(logTail, "\n"))
		}
		a = v
	case <-time.After(60 * time.Second): // the startupProbe budget
		t.Fatalf("%s did not listen within 60 s", bin)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get("http://" + a + "/health")
		if err == nil {
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /health not 200 within 60 s (last: %v)", bin, err)
		}
		time.Sleep(10 * time.Millisecond) // polling /health, with a deadline
	}
}

// BenchmarkBootFromImage: the start time of each binary run from the
// image's unpacked layers, to /health 200 (hack/bench.sh reports it).
func BenchmarkBootFromImage(b *testing.B) {
	for _, bin := range []string{"agent", "core"} {
		b.Run(bin, func(b *testing.B) {
			root := imageRootfs(b)
			var env []string
			if bin == "agent" {
				env = []string{"AGENT_PERSONA=platform-sre"}
			}
			var total time.Duration
			for b.Loop() {
				total += bootFromImage(b, root, bin, env)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/boot")
		})
	}
}
