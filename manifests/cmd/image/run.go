package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/manifests/image"
)

// run parses the flags, builds the binaries and the index, writes the
// layout and the tarball, and prints the index digest (sizes on stderr).
func run() error {
	root := flag.String("root", "..", "the repository (go.work)")
	out := flag.String("out", "../bin/image", "output directory: oci/ (layout), kubecrew.oci.tar, binaries")
	version := flag.String("version", "dev", "org.opencontainers.image.version and the binaries' version")
	source := flag.String("source", "https://github.com/kubecrew/kubecrew", "org.opencontainers.image.source")
	ref := flag.String("tag", "", "the tag recorded in the layout (default: the version)")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch")
	certs := flag.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to ship")
	flag.Parse()
	var ps []image.Platform
	for _, s := range strings.Split(*platforms, ",") {
		p, err := image.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	if *ref == "" {
		*ref = *version
	}
	ctx := context.Background()
	start := time.Now()
	idx, err := image.Build(image.Options{
		Version: *version, Source: *source, CACerts: *certs, Platforms: ps,
		Binaries: func(p image.Platform) (map[string]string, error) {
			t := time.Now()
			bins, err := image.GoBuild(ctx, *root, p, *version, filepath.Join(*out, "bin"))
			if err == nil {
				fmt.Fprintf(os.Stderr, "image: built %s binaries in %s\n", p, time.Since(t).Round(time.Millisecond))
			}
			return bins, err
		},
	})
	if err != nil {
		return err
	}
	dir := filepath.Join(*out, "oci")
	if err := image.WriteLayout(dir, idx, *ref); err != nil {
		return err
	}
	tarPath := filepath.Join(*out, "kubecrew.oci.tar")
	if err := image.WriteTarball(dir, tarPath); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	sizes, err := image.CompressedSizes(idx)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "image: %s (%s) in %s\n", dir, tarPath, time.Since(start).Round(time.Millisecond))
	for _, p := range ps {
		fmt.Fprintf(os.Stderr, "image: %s compressed %.1f MB\n", p, float64(sizes[p.String()])/1e6)
	}
	fmt.Println(d)
	return nil
}
