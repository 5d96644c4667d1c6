package gitops

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
)

// maxScanFiles bounds how many files a repository scan reads.
const maxScanFiles = 400

// Located is where a workload's manifest lives.
type Located struct {
	Path    string
	Content []byte
	How     string // which convention found it
}

// LocateManifest finds the one file in the repository that defines kind
// name (in namespace, when the document names one) with the container. It
// tries the path conventions in order — apps/<name>/, apps/base/<name>/,
// <namespace>/<name>/ — and scans the repository's YAML when they miss; it
// never assumes a file name. Several candidate files are narrowed to those
// holding the container's memory limit; more than one left is an error.
func LocateManifest(ctx context.Context, f Forge, namespace, kind, name, container string) (*Located, error) {
	return LocateManifestIn(ctx, f, nil, namespace, kind, name, container)
}

// LocateManifestIn is LocateManifest trying the directories first, in
// order (expanded PathTemplates: a cluster's own part of the repository).
func LocateManifestIn(ctx context.Context, f Forge, first []string, namespace, kind, name, container string) (*Located, error) {
	ck := CanonicalKind(kind)
	if ck == "" {
		return nil, fmt.Errorf("%w: kind %q has no pod template", ErrRefused, kind)
	}
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return nil, fmt.Errorf("invalid workload name %q", name)
	}
	// One listing of the repository, filtered per convention: a forge call
	// per directory would cost a tree walk each on GitHub.
	all, err := f.ListFiles(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("listing the repository: %w", err)
	}
	seen := map[string]bool{}
	dirs := append(append([]string{}, first...), "apps/"+name, "apps/base/"+name)
	if namespace != "" && !strings.ContainsAny(namespace, "/\\") && namespace != ".." {
		dirs = append(dirs, namespace+"/"+name)
	}
	for _, d := range dirs {
		var files []string
		for _, p := range all {
			if strings.HasPrefix(p, d+"/") {
				files = append(files, p)
			}
		}
		loc, err := pickManifest(ctx, f, yamlFiles(files), seen, namespace, ck, name, container)
		if err != nil || loc != nil {
			if loc != nil {
				loc.How = "convention " + d + "/"
			}
			return loc, err
		}
	}
	cands := yamlFiles(all)
	// Files that mention the name in their path first: usually one read.
	sort.SliceStable(cands, func(i, j int) bool {
		return strings.Contains(cands[i], name) && !strings.Contains(cands[j], name)
	})
	var named []string
	for _, c := range cands {
		if strings.Contains(c, name) {
			named = append(named, c)
		}
	}
	if loc, err := pickManifest(ctx, f, named, seen, namespace, ck, name, container); err != nil || loc != nil {
		if loc != nil {
			loc.How = "scan (path mentions the name)"
		}
		return loc, err
	}
	if len(cands) > maxScanFiles {
		return nil, fmt.Errorf("%w: no file under apps/%s/, apps/base/%s/ or %s/%s/ defines %s %s, and the repository has %d YAML files, too many to scan (limit %d)", ErrNotFound, name, name, namespace, name, ck, name, len(cands), maxScanFiles)
	}
	loc, err := pickManifest(ctx, f, cands, seen, namespace, ck, name, container)
	if loc != nil {
		loc.How = "scan"
	}
	if err == nil && loc == nil {
		err = fmt.Errorf("%w: no YAML file in the repository defines %s %s (namespace %q)", ErrNotFound, ck, name, namespace)
	}
	return loc, err
}

func yamlFiles(files []string) []string {
	var out []string
	for _, p := range files {
		ext := strings.ToLower(path.Ext(p))
		if ext != ".yaml" && ext != ".yml" {
			continue
		}
		if bad, _ := SensitivePath(p); bad {
			continue // never a file an agent PR may change
		}
		out = append(out, p)
	}
	return out
}

// pickManifest reads files (skipping seen ones) and returns the single one
// defining the workload, nil when none does.
func pickManifest(ctx context.Context, f Forge, files []string, seen map[string]bool, namespace, kind, name, container string) (*Located, error) {
	type hit struct {
		path     string
		content  []byte
		hasLimit bool
	}
	var hits []hit
	for _, p := range files {
		if seen[p] {
			continue
		}
		seen[p] = true
		b, err := f.ReadFile(ctx, p)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		ok, hasLimit := definesWorkload(b, namespace, kind, name, container)
		if ok {
			hits = append(hits, hit{p, b, hasLimit})
		}
	}
	if len(hits) > 1 {
		var withLimit []hit
		for _, h := range hits {
			if h.hasLimit {
				withLimit = append(withLimit, h)
			}
		}
		if len(withLimit) == 1 {
			hits = withLimit
		}
	}
	switch len(hits) {
	case 0:
		return nil, nil
	case 1:
		return &Located{Path: hits[0].path, Content: hits[0].content}, nil
	}
	var ps []string
	for _, h := range hits {
		ps = append(ps, h.path)
	}
	return nil, fmt.Errorf("%w: %d files define %s %s (%s); refusing to guess which one to change", ErrRefused, len(hits), kind, name, strings.Join(ps, ", "))
}

// definesWorkload reports whether src holds a document of kind/name whose
// namespace (when set) is namespace, and whether the container's memory
// limit can be found in it.
func definesWorkload(src []byte, namespace, kind, name, container string) (ok, hasLimit bool) {
	if checkSource(src) != nil {
		return false, false
	}
	docs, err := decodeNodes(src)
	if err != nil {
		return false, false
	}
	for _, d := range docs {
		if len(d.Content) == 0 {
			continue
		}
		root := d.Content[0]
		if !isWorkload(root, kind, name) {
			continue
		}
		md, _ := lookup(root, "metadata")
		if ns := scalarAt(md, "namespace"); ns != "" && namespace != "" && ns != namespace {
			continue
		}
		ok = true
	}
	if ok {
		_, err := findLimit(docs, kind, name, container)
		hasLimit = err == nil
	}
	return ok, hasLimit
}
