package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// WriteLayout writes idx as the one entry of an OCI image layout in dir
// (replacing what was there), named ref (org.opencontainers.image.ref.name).
// `crane push DIR REGISTRY/REPO:TAG` pushes it whole.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	opts := []layout.Option{}
	if ref != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
	}
	if err := p.AppendIndex(idx, opts...); err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return nil
}

// WriteTarball tars an OCI layout directory into an OCI archive (what
// `skopeo copy oci-archive:…` and `docker load` read).
func WriteTarball(layoutDir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(layoutDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == layoutDir {
			return err
		}
		rel, err := filepath.Rel(layoutDir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name, h.Uname, h.Gname, h.Uid, h.Gid = filepath.ToSlash(rel), "", "", 0, 0
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("OCI tarball %s: %w", out, err)
	}
	return nil
}

// ReadTarball opens an OCI archive written by WriteTarball: it unpacks it
// into dir and returns the index its layout holds.
func ReadTarball(archive, dir string) (v1.ImageIndex, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := untar(f, dir, false); err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	m, err := outer.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("%s: want one image index in the layout, got %d entries", archive, len(m.Manifests))
	}
	return outer.ImageIndex(m.Manifests[0].Digest)
}

// Platform returns the image of idx for p.
func PlatformImage(idx v1.ImageIndex, p Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Arch {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("no %s image in the index", p)
}

// Unpack applies img's layers in order into dir (a root filesystem), the
// way a container runtime would, without one.
func Unpack(img v1.Image, dir string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	return untar(rc, dir, true)
}

func untar(r io.Reader, dir string, keepModes bool) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if name == "." {
			continue
		}
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("entry %q leaves the directory", h.Name)
		}
		target := filepath.Join(dir, name)
		mode := fs.FileMode(h.Mode).Perm()
		if !keepModes {
			mode = 0o755
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode|0o600)
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
		default:
			return fmt.Errorf("entry %q: type %c is not expected in kubecrew's image", h.Name, h.Typeflag)
		}
	}
}

// GoBuild cross-compiles the static agent and core for p into outDir (the
// Dockerfile's build: CGO_ENABLED=0, -trimpath, the version stamped) and
// returns their paths. root is the repository (go.work).
func GoBuild(ctx context.Context, root string, p Platform, version, outDir string) (map[string]string, error) {
	out := map[string]string{}
	outDir, err := filepath.Abs(outDir) // go build runs in services/<name>
	if err != nil {
		return nil, err
	}
	for _, name := range Binaries {
		bin := filepath.Join(outDir, p.OS+"-"+p.Arch, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
			"-ldflags", "-s -w -X github.com/kubecrew/kubecrew/pkg/buildinfo.Version="+version, "-o", bin, ".")
		cmd.Dir = filepath.Join(root, "services", name)
		// The repository's go.work builds them, whatever GOWORK the caller has.
		var env []string
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "GOWORK=") {
				env = append(env, e)
			}
		}
		cmd.Env = append(env, "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, "GOFLAGS=-buildvcs=false")
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build services/%s for %s: %w\n%s", name, p, err, b)
		}
		out[name] = bin
	}
	return out, nil
}
