// Package upgradetest builds the previous version of the fleet's binaries
// from this repository's own history, for the side-by-side upgrade tests
// (docs/ARCHITECTURE.md, "Upgrades"). The previous version is the commit
// pinned in hack/upgrade/previous; each binary is built once per commit
// into ~/.cache/kubecrew/upgrade/<commit>/ and reused by later runs.
package upgradetest

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// PinFile is where the previous version's commit is pinned, relative to the
// repository's root.
const PinFile = "hack/upgrade/previous"

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Root returns the repository's root (git rev-parse from dir). Outside a
// git checkout it skips, or fails with CI=true.
func Root(t testing.TB, dir string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		need(t, fmt.Sprintf("not a git checkout (%v): the upgrade test builds the previous version from the repository's history", err))
	}
	return strings.TrimSpace(string(out))
}

// Previous reads the pinned commit: the first line of PinFile that is not
// blank or a # comment, a full 40-hex commit id.
func Previous(root string) (string, error) {
	f, err := os.Open(filepath.Join(root, PinFile))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !commitRE.MatchString(line) {
			return "", fmt.Errorf("%s:%d: want a full 40-hex commit id, got %q", PinFile, n, line)
		}
		return line, nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: no commit pinned", PinFile)
}

// FromEnv names the environment variable that overrides the pinned
// commit for one run (a full commit id).
const FromEnv = "KUBECREW_UPGRADE_FROM"

// Commit is the previous version to test against: FromEnv if set, else
// the pinned commit.
func Commit(root string) (string, error) {
	if c := os.Getenv(FromEnv); c != "" {
		if !commitRE.MatchString(c) {
			return "", fmt.Errorf("%s: want a full 40-hex commit id, got %q", FromEnv, c)
		}
		return c, nil
	}
	return Previous(root)
}

// need skips the test with why, or fails it under CI=true, where every tier
// is mandatory.
func need(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// Build returns the binary of the Go main package pkgDir (relative to the
// repository's root, e.g. "services/core") as of commit, building it on
// the first call for that commit. A checkout without the commit (a shallow
// clone) skips the test, or fails it under CI=true naming the fix.
func Build(t testing.TB, root, commit, pkgDir string) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".cache", "kubecrew", "upgrade", commit)
	bin := filepath.Join(dir, strings.ReplaceAll(pkgDir, "/", "_"))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		need(t, fmt.Sprintf("commit %s (%s) is not in this checkout, a shallow clone? Run `git fetch --unshallow` (CI: check out with fetch-depth: 0)", commit, PinFile))
	}
	src := t.TempDir()
	if err := extract(root, commit, src); err != nil {
		t.Fatalf("git archive %s: %v", commit, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.CreateTemp(dir, ".build-*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	start := time.Now()
	// -trimpath makes the build independent of the temporary directory's
	// name, so Go's build cache serves the packages that did not change.
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-X github.com/kubecrew/kubecrew/pkg/buildinfo.Version="+commit[:12], "-o", tmp.Name(), ".")
	cmd.Dir = filepath.Join(src, pkgDir)
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(src, "go.work"), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s at %s: %v\n%s", pkgDir, commit, err, out)
	}
	// Rename is atomic: a concurrent build of the same commit replaces it
	// with the same binary.
	if err := os.Rename(tmp.Name(), bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s at %s in %s (cached in %s)", pkgDir, commit[:12], time.Since(start).Round(time.Millisecond), bin)
	return bin
}

// extract writes the tree of commit into dst (git archive, read as tar).
func extract(root, commit, dst string) error {
	cmd := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	terr := untar(out, dst)
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%w: %s", err, stderr.String())
	}
	return terr
}

func untar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("archive entry %q leaves the tree", h.Name)
		}
		p := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
		}
	}
}
