// Package image builds kubecrew's container image without a container
// engine: an OCI image index (one image per platform) from scratch, holding
// the static agent and core binaries, the system's CA certificates and a
// non-root user, with go-containerregistry. It lays out the files the
// Dockerfile's image has (docs/MANUAL.md, "Install with Helm"; the Dockerfile
// test compares them), so either build runs the same manifests.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's layout; the Dockerfile's final stage must match it.
const (
	BinDir     = "/usr/local/bin"
	Entrypoint = BinDir + "/agent"
	User       = "65532:65532"
	UID        = 65532
	CACerts    = "/etc/ssl/certs/ca-certificates.crt"
	Home       = "/home/nonroot"
)

// Ports the binaries listen on by default (agent, core).
var Ports = []string{"8000/tcp", "8080/tcp"}

// Binaries the image holds, by name (installed under BinDir).
var Binaries = []string{"agent", "core"}

// Platform is one os/arch the index carries.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatform reads "linux/amd64".
func ParsePlatform(s string) (Platform, error) {
	os, arch, ok := strings.Cut(s, "/")
	if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("platform %q: want os/arch, e.g. linux/amd64", s)
	}
	return Platform{OS: os, Arch: arch}, nil
}

// Options describe one build.
type Options struct {
	Version string // org.opencontainers.image.version
	Source  string // org.opencontainers.image.source
	// Created is the images' creation time; the zero time keeps the build
	// reproducible (the same inputs give the same digests).
	Created time.Time
	// CACerts is the CA bundle to ship (the system's).
	CACerts string
	// Platforms and, for each, the path of each binary in Binaries.
	Platforms []Platform
	Binaries  func(p Platform) (map[string]string, error)
	// Compression is the gzip level of the layers (0 = best compression,
	// what `make image` ships; tests use gzip.BestSpeed).
	Compression int
}

// Labels are the OCI labels every image (and the index, as annotations) carries.
func (o Options) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.source":      o.Source,
		"org.opencontainers.image.title":       "kubecrew",
		"org.opencontainers.image.description": "kubecrew: agent and core binaries",
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
}

// Build assembles the index: per platform, a base layer (CA certificates,
// /etc/passwd and /etc/group with the non-root user, /tmp, its home; the
// same bytes on every platform, so registries store it once) and a layer of
// the binaries.
func Build(o Options) (v1.ImageIndex, error) {
	if len(o.Platforms) == 0 {
		return nil, fmt.Errorf("no platforms")
	}
	if o.Version == "" || o.Source == "" {
		return nil, fmt.Errorf("version and source labels are required")
	}
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	base, err := layer(baseFiles(certs), o.level())
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.Platforms {
		img, err := platformImage(o, p, base)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	return mutate.Annotations(idx, o.Labels()).(v1.ImageIndex), nil
}

func platformImage(o Options, p Platform, base v1.Layer) (v1.Image, error) {
	bins, err := o.Binaries(p)
	if err != nil {
		return nil, fmt.Errorf("binaries: %w", err)
	}
	var files []file
	for _, name := range Binaries {
		src, ok := bins[name]
		if !ok {
			return nil, fmt.Errorf("no %s binary", name)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("%s binary: %w", name, err)
		}
		files = append(files, file{name: path.Join(BinDir, name), mode: 0o755, data: b})
	}
	bl, err := layer(withParents(files), o.level())
	if err != nil {
		return nil, fmt.Errorf("binaries layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, base, bl)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = p.OS, p.Arch
	cfg.Created = v1.Time{Time: o.Created}
	ports := map[string]struct{}{}
	for _, port := range Ports {
		ports[port] = struct{}{}
	}
	cfg.Config = v1.Config{
		Entrypoint:   []string{Entrypoint},
		User:         User,
		WorkingDir:   "/",
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=" + CACerts},
		ExposedPorts: ports,
		Labels:       o.Labels(),
	}
	return mutate.ConfigFile(img, cfg)
}

func (o Options) level() int {
	if o.Compression == 0 {
		return gzip.BestCompression
	}
	return o.Compression
}

// file is one entry of a layer.
type file struct {
	name     string // absolute path
	mode     int64
	uid, gid int
	dir      bool
	data     []byte
}

// baseFiles: what the Dockerfile's distroless base gives the binaries.
func baseFiles(certs []byte) []file {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnonroot:x:65532:\n"
	return withParents([]file{
		{name: CACerts, mode: 0o644, data: certs},
		{name: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "/etc/group", mode: 0o644, data: []byte(group)},
		{name: "/tmp", mode: 0o1777, dir: true},
		{name: Home, mode: 0o700, dir: true, uid: UID, gid: UID},
	})
}

// withParents adds each file's missing parent directories (root, 0755) and
// sorts the entries so a layer's bytes depend only on its contents.
func withParents(files []file) []file {
	have := map[string]bool{}
	for _, f := range files {
		have[f.name] = true
	}
	out := append([]file(nil), files...)
	for _, f := range files {
		for d := path.Dir(f.name); d != "/" && !have[d]; d = path.Dir(d) {
			have[d] = true
			out = append(out, file{name: d, mode: 0o755, dir: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// layer writes files as a gzip'd OCI layer with fixed timestamps.
func layer(files []file, level int) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: strings.TrimPrefix(f.name, "/"), Mode: f.mode, Uid: f.uid, Gid: f.gid,
			ModTime: time.Unix(0, 0).UTC(), Format: tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(level))
}

// CompressedSizes is what a pull of each platform's image transfers: its
// manifest, config and compressed layers, by "os/arch".
func CompressedSizes(idx v1.ImageIndex) (map[string]int64, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		im, err := img.Manifest()
		if err != nil {
			return nil, err
		}
		n := d.Size + im.Config.Size
		for _, l := range im.Layers {
			n += l.Size
		}
		if d.Platform != nil {
			out[d.Platform.OS+"/"+d.Platform.Architecture] = n
		}
	}
	return out, nil
}
