// Command chartrender renders the kubecrew Helm chart with the Helm Go
// library, like `helm template`, for hack/manifests-check.sh (which then
// dry-runs the output on a real API server and asks its authorizer):
//
//	go run ./cmd/chartrender -f values.yaml -n kubecrew -notes notes.txt > out.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/kubecrew/kubecrew/manifests/helmchart"
)

type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chartrender:", err)
		os.Exit(1)
	}
}

func run() error {
	var vf files
	dir := flag.String("chart", "helm/kubecrew", "the chart directory")
	ns := flag.String("n", "kubecrew", "the release namespace")
	name := flag.String("name", "kubecrew", "the release name")
	notes := flag.String("notes", "", "write the rendered NOTES.txt here")
	flag.Var(&vf, "f", "a values file (repeatable; later files win)")
	flag.Parse()
	values := map[string]any{}
	for _, f := range vf {
		v, err := helmchart.ReadValues(f)
		if err != nil {
			return err
		}
		values = helmchart.Merge(values, v)
	}
	rel, err := helmchart.Render(context.Background(), *dir, *name, *ns, values)
	if err != nil {
		return err
	}
	if *notes != "" {
		if err := os.WriteFile(*notes, []byte(rel.Notes), 0o644); err != nil {
			return err
		}
	}
	_, err = os.Stdout.WriteString(rel.Manifest)
	return err
}
