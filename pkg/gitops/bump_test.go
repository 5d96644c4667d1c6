package gitops

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the golden file:\n--- want\n%s\n--- got\n%s", name, want, got)
	}
}

// changedLines returns the lines that differ between a and b, which must
// have the same number of lines.
func changedLines(t *testing.T, a, b []byte) (oldL, newL []string) {
	t.Helper()
	al := strings.SplitAfter(string(a), "\n")
	bl := strings.SplitAfter(string(b), "\n")
	if len(al) != len(bl) {
		t.Fatalf("line count changed: %d → %d", len(al), len(bl))
	}
	for i := range al {
		if al[i] != bl[i] {
			oldL = append(oldL, al[i])
			newL = append(newL, bl[i])
		}
	}
	return oldL, newL
}

func TestBumpMemory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, kind, workload, container string
		factor                                float64
		old, new                              string
		oldLine, newLine                      string // the one changed line
	}{
		{"block style with comments", "block.yaml", "Deployment", "api", "api", 0, "256Mi", "384Mi",
			"              memory: 256Mi   # keep in step with GOMEMLIMIT below\n", "              memory: 384Mi   # keep in step with GOMEMLIMIT below\n"},
		{"flow mapping", "flow.yaml", "Deployment", "oomkill", "app", 0, "32Mi", "48Mi",
			"        resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 100m, memory: 32Mi}}\n",
			"        resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 100m, memory: 48Mi}}\n"},
		{"second document of three", "multidoc.yaml", "Deployment", "worker", "worker", 0, "512Mi", "768Mi",
			"              memory: 512Mi\n", "              memory: 768Mi\n"},
		{"kind in lower case", "multidoc.yaml", "deployment", "worker-canary", "worker", 1.25, "512Mi", "640Mi",
			"              memory: 512Mi\n", "              memory: 640Mi\n"},
		{"second of two containers", "twocontainers.yaml", "StatefulSet", "db", "exporter", 0, "1Gi", "1536Mi",
			"              memory: 1Gi\n", "              memory: 1536Mi\n"},
		{"init container", "twocontainers.yaml", "StatefulSet", "db", "init-perms", 0, "64Mi", "96Mi",
			"              memory: 64Mi\n", "              memory: 96Mi\n"},
		{"factor 2 gives whole Gi", "twocontainers.yaml", "StatefulSet", "db", "postgres", 2, "1Gi", "2Gi",
			"              memory: 1Gi\n", "              memory: 2Gi\n"},
		{"block scalar and commented value nearby", "blockscalar.yaml", "CronJob", "cache-warmer", "warmer", 0, "256Mi", "384Mi",
			"                  memory: 256Mi\n", "                  memory: 384Mi\n"},
		{"double quoted", "quoted.yaml", "DaemonSet", "node-agent", "agent", 0, "256Mi", "384Mi",
			"              memory: \"256Mi\"\n", "              memory: \"384Mi\"\n"},
		{"single quoted decimal unit", "quoted.yaml", "DaemonSet", "node-agent", "sidecar", 0, "100M", "144Mi",
			"              memory: '100M'\n", "              memory: '144Mi'\n"},
		{"plain bytes", "anchors.yaml", "Deployment", "anchored", "m", 0, "134217728", "192Mi",
			"              memory: 134217728\n", "              memory: 192Mi\n"},
		{"oomkill fixture", "oomkill.yaml", "Deployment", "oomkill", "app", 0, "32Mi", "48Mi",
			"              memory: 32Mi\n", "              memory: 48Mi\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := readTestdata(t, filepath.Join("bump", tc.file))
			out, old, nv, err := BumpMemory(src, tc.kind, tc.workload, tc.container, tc.factor)
			if err != nil {
				t.Fatalf("BumpMemory: %v", err)
			}
			if old != tc.old || nv != tc.new {
				t.Errorf("old, new = %q, %q; want %q, %q", old, nv, tc.old, tc.new)
			}
			ol, nl := changedLines(t, src, out)
			if len(ol) != 1 || ol[0] != tc.oldLine || nl[0] != tc.newLine {
				t.Errorf("changed lines:\n-%q\n+%q\nwant exactly\n-%q\n+%q", ol, nl, tc.oldLine, tc.newLine)
			}
			golden(t, filepath.Join("bump", strings.ReplaceAll(tc.name, " ", "_")+".golden"), out)
		})
	}
}

func TestBumpMemoryLineEndings(t *testing.T) {
	t.Parallel()
	src := readTestdata(t, "bump/block.yaml")
	variants := map[string][]byte{
		"crlf":        bytes.ReplaceAll(src, []byte("\n"), []byte("\r\n")),
		"bom":         append([]byte("\uFEFF"), src...),
		"unicode":     bytes.Replace(src, []byte("# api: the public"), []byte("# api — «the» public ☃"), 1),
		"no final LF": bytes.TrimRight(src, "\n"),
	}
	for name, in := range variants {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, _, _, err := BumpMemory(in, "Deployment", "api", "api", 0)
			if err != nil {
				t.Fatal(err)
			}
			want := bytes.Replace(in, []byte("memory: 256Mi   #"), []byte("memory: 384Mi   #"), 1)
			if !bytes.Equal(out, want) {
				t.Errorf("got\n%q\nwant\n%q", out, want)
			}
		})
	}
}

func TestBumpMemoryRefusals(t *testing.T) {
	t.Parallel()
	dup := append(readTestdata(t, "bump/block.yaml"), []byte("---\n")...)
	dup = append(dup, readTestdata(t, "bump/block.yaml")...)
	tests := []struct {
		name, file string
		src        []byte
		kind, wl   string
		container  string
		factor     float64
		notFound   bool   // ErrNotFound, else ErrRefused unless plain
		plain      bool   // neither sentinel: bad input
		msg        string // substring of the error
	}{
		{name: "missing workload", file: "block.yaml", kind: "Deployment", wl: "web", container: "api", notFound: true, msg: `no Deployment named "web"`},
		{name: "right name wrong kind", file: "block.yaml", kind: "StatefulSet", wl: "api", container: "api", notFound: true, msg: "no StatefulSet"},
		{name: "missing container", file: "twocontainers.yaml", kind: "StatefulSet", wl: "db", container: "pgbouncer", notFound: true, msg: "containers: postgres, exporter, init-perms"},
		{name: "limits without memory", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "f", notFound: true, msg: "adding a limit is a different change"},
		{name: "empty memory", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "g", notFound: true, msg: "empty"},
		{name: "no resources", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "n", notFound: true, msg: "no resources"},
		{name: "anchored value", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "a", msg: "anchor"},
		{name: "alias value", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "b", msg: "alias"},
		{name: "anchored limits shared by another container", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "c", msg: "did not re-parse"},
		{name: "limits is an alias", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "d", msg: "alias"},
		{name: "merge key", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "e", msg: "merge key"},
		{name: "tagged scalar", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "h", msg: "tag"},
		{name: "escaped scalar", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "i", msg: "not the literal value"},
		{name: "multi-line plain scalar", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "j", msg: "unparseable"},
		{name: "absurd value", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "k", msg: "unparseable"},
		{name: "too small for Mi steps", file: "anchors.yaml", kind: "Deployment", wl: "anchored", container: "l", msg: "too small to bump"},
		{name: "factor above 2", file: "block.yaml", kind: "Deployment", wl: "api", container: "api", factor: 2.5, msg: "at most 2×"},
		{name: "factor of 1", file: "block.yaml", kind: "Deployment", wl: "api", container: "api", factor: 1, msg: "not a raise"},
		{name: "factor below 1", file: "block.yaml", kind: "Deployment", wl: "api", container: "api", factor: 0.5, msg: "not a raise"},
		{name: "factor NaN", file: "block.yaml", kind: "Deployment", wl: "api", container: "api", factor: math.NaN(), msg: "not a finite"},
		{name: "unsupported kind", file: "block.yaml", kind: "Service", wl: "api", container: "api", msg: "no pod template"},
		{name: "same workload twice", src: dup, kind: "Deployment", wl: "api", container: "api", msg: "refusing to guess"},
		{name: "not yaml", src: []byte("kind: [\n"), kind: "Deployment", wl: "api", container: "api", plain: true, msg: "does not parse"},
		{name: "empty file", src: []byte{}, kind: "Deployment", wl: "api", container: "api", plain: true, msg: "empty"},
		{name: "no container name", file: "block.yaml", kind: "Deployment", wl: "api", plain: true, msg: "required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := tc.src
			if tc.file != "" {
				src = readTestdata(t, filepath.Join("bump", tc.file))
			}
			out, _, _, err := BumpMemory(src, tc.kind, tc.wl, tc.container, tc.factor)
			if err == nil {
				t.Fatalf("edit accepted; want a refusal:\n%s", out)
			}
			if out != nil {
				t.Errorf("a refusal returned output")
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
			switch {
			case tc.plain:
				if errors.Is(err, ErrNotFound) || errors.Is(err, ErrRefused) {
					t.Errorf("bad input wrapped a sentinel: %v", err)
				}
			case tc.notFound:
				if !errors.Is(err, ErrNotFound) {
					t.Errorf("want ErrNotFound, got %v", err)
				}
			default:
				if !errors.Is(err, ErrRefused) {
					t.Errorf("want ErrRefused, got %v", err)
				}
			}
		})
	}
}

func TestBumpedQuantity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		old    string
		factor float64
		want   string
		err    string
	}{
		{"32Mi", 1.5, "48Mi", ""},
		{"256Mi", 1.5, "384Mi", ""},
		{"1Gi", 1.5, "1536Mi", ""},
		{"2Gi", 1.5, "3Gi", ""},
		{"1.5Gi", 2, "3Gi", ""},
		{"100M", 1.5, "144Mi", ""}, // 150e6 B = 143.05Mi, rounded up
		{"1G", 2, "1907Mi", ""},    // 2e9 B = 1907.35Mi: 1908Mi would pass 2×
		{"1G", 1.5, "1431Mi", ""},
		{"1023Pi", 1.5, "", "unparseable"},
		{"1048576Gi", 1.5, "", "larger than 1Pi"},
		{"512Ki", 1.5, "1Mi", ""},       // 768Ki → 1Mi is 2× exactly: allowed
		{"500Ki", 1.5, "", "too small"}, // 1Mi would be 2.05×
		{"1e9", 1.5, "1431Mi", ""},
		{"3Ti", 1.5, "4608Gi", ""},
		{"1T", 1.1, "1049042Mi", ""},
		{"33Mi", 1.5, "50Mi", ""}, // 49.5 → 50
		{"256mi", 1.5, "", "unparseable"},
		{"256m", 1.5, "", "unparseable"},
		{"-1Gi", 1.5, "", "unparseable"},
		{".5Gi", 1.5, "", "unparseable"},
		{"1e3Mi", 1.5, "", "unparseable"},
		{"0", 1.5, "", "positive"},
		{"1Pi", 1.5, "", "unparseable"},
		{"256Mi", 2.0000001, "", "at most"},
	}
	for _, tc := range tests {
		got, err := bumpedQuantity(tc.old, tc.factor)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("bumpedQuantity(%q, %v) = %q, %v; want error containing %q", tc.old, tc.factor, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("bumpedQuantity(%q, %v) = %q, %v; want %q", tc.old, tc.factor, got, err, tc.want)
		}
	}
}
