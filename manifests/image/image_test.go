package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// placeholders writes stand-in binaries (their contents name the platform)
// so the index's assembly is tested without cross-compiling; the boot test
// (manifests/image_boot_test.go) runs real ones.
func placeholders(t *testing.T) func(Platform) (map[string]string, error) {
	dir := t.TempDir()
	return func(p Platform) (map[string]string, error) {
		out := map[string]string{}
		for _, b := range Binaries {
			f := filepath.Join(dir, p.Arch+"-"+b)
			if err := os.WriteFile(f, []byte(b+" for "+p.String()), 0o755); err != nil {
				return nil, err
			}
			out[b] = f
		}
		return out, nil
	}
}

func testCerts(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(f, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestBuildIndex(t *testing.T) {
	t.Parallel()
	amd, arm := Platform{"linux", "amd64"}, Platform{"linux", "arm64"}
	o := Options{Version: "v1.2.3", Source: "https://github.com/kubecrew/kubecrew", CACerts: testCerts(t),
		Platforms: []Platform{amd, arm}, Binaries: placeholders(t)}
	idx, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || len(m.Manifests) != 2 {
		t.Fatalf("index %s with %d manifests, want an OCI index of 2", m.MediaType, len(m.Manifests))
	}
	if m.Annotations["org.opencontainers.image.version"] != "v1.2.3" {
		t.Errorf("index annotations %v lack the version", m.Annotations)
	}
	var baseLayers []v1.Hash
	for _, p := range []Platform{amd, arm} {
		img, err := PlatformImage(idx, p)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != p.OS || cf.Architecture != p.Arch {
			t.Errorf("%s: config says %s/%s", p, cf.OS, cf.Architecture)
		}
		if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != "/usr/local/bin/agent" {
			t.Errorf("%s: user %q entrypoint %v", p, cf.Config.User, cf.Config.Entrypoint)
		}
		for k, want := range map[string]string{"org.opencontainers.image.version": "v1.2.3", "org.opencontainers.image.source": o.Source} {
			if cf.Config.Labels[k] != want {
				t.Errorf("%s: label %s = %q, want %q", p, k, cf.Config.Labels[k], want)
			}
		}
		mf, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if mf.MediaType != types.OCIManifestSchema1 || mf.Config.MediaType != types.OCIConfigJSON || len(mf.Layers) != 2 {
			t.Fatalf("%s: manifest %s config %s, %d layers", p, mf.MediaType, mf.Config.MediaType, len(mf.Layers))
		}
		baseLayers = append(baseLayers, mf.Layers[0].Digest)
		files := flatten(t, img)
		if got := files["usr/local/bin/core"]; got.data != "core for "+p.String() || got.mode != 0o755 {
			t.Errorf("%s: /usr/local/bin/core = %q mode %o", p, got.data, got.mode)
		}
		if got := files["etc/passwd"]; !strings.Contains(got.data, "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd %q has no nonroot user 65532", p, got.data)
		}
		if got := files["etc/ssl/certs/ca-certificates.crt"]; !strings.Contains(got.data, "BEGIN CERTIFICATE") {
			t.Errorf("%s: no CA certificates", p)
		}
		if got := files["tmp"]; got.mode != 0o1777 {
			t.Errorf("%s: /tmp mode %o, want 1777", p, got.mode)
		}
	}
	if baseLayers[0] != baseLayers[1] {
		t.Errorf("the base layer differs between platforms (%s, %s): registries would store it twice", baseLayers[0], baseLayers[1])
	}
	// Reproducible: the same inputs give the same digest.
	again, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := idx.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of the same inputs: %s and %s", d1, d2)
	}
}

type entry struct {
	data string
	mode int64
}

func flatten(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]entry{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if _, err := io.Copy(&b, tr); err != nil {
				t.Fatal(err)
			}
			out[strings.TrimSuffix(h.Name, "/")] = entry{data: b.String(), mode: h.Mode}
		}
		rc.Close()
	}
	return out
}

func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	ok := Options{Version: "v1", Source: "s", CACerts: testCerts(t), Platforms: []Platform{{"linux", "amd64"}}, Binaries: placeholders(t)}
	for _, tc := range []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"no platforms", func(o *Options) { o.Platforms = nil }, "no platforms"},
		{"no version", func(o *Options) { o.Version = "" }, "version"},
		{"no CA bundle", func(o *Options) { o.CACerts = "/nonexistent/ca.crt" }, "/nonexistent/ca.crt"},
		{"a binary missing", func(o *Options) {
			o.Binaries = func(Platform) (map[string]string, error) { return map[string]string{"agent": "/bin/true"}, nil }
		}, "no core binary"},
	} {
		o := ok
		tc.edit(&o)
		if _, err := Build(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	for _, s := range []string{"linux", "linux/", "/amd64", "linux/arm/v7"} {
		if _, err := ParsePlatform(s); err == nil {
			t.Errorf("ParsePlatform(%q) accepted", s)
		}
	}
}

func TestTarballRoundTrip(t *testing.T) {
	t.Parallel()
	p := Platform{"linux", "amd64"}
	idx, err := Build(Options{Version: "v1", Source: "s", CACerts: testCerts(t), Platforms: []Platform{p}, Binaries: placeholders(t)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteLayout(filepath.Join(dir, "oci"), idx, "v1"); err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(dir, "kubecrew.oci.tar")
	if err := WriteTarball(filepath.Join(dir, "oci"), tarPath); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTarball(tarPath, filepath.Join(dir, "read"))
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := idx.Digest()
	d2, _ := back.Digest()
	if d1 != d2 {
		t.Errorf("read back %s, wrote %s", d2, d1)
	}
	img, err := PlatformImage(back, p)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "rootfs")
	if err := Unpack(img, root); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "usr", "local", "bin", "agent"))
	if err != nil || string(b) != "agent for linux/amd64" {
		t.Errorf("unpacked agent %q, %v", b, err)
	}
}
