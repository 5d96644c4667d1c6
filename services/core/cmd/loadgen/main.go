// Command loadgen posts alerts to the core or to Alertmanager and reports
// alerts/s and latency; with -compare it runs the side-by-side benchmark
// (docs/MANUAL.md, "Benchmark: the core beside Alertmanager"; make bench).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/kubecrew/kubecrew/services/core/internal/loadgen"
)

func main() {
	compare := flag.Bool("compare", false, "start Alertmanager and the core (memory, Postgres) and compare them")
	o := loadgen.CompareOptions{Out: os.Stdout}
	flag.StringVar(&o.CoreBin, "core", "bin/core", "the core binary (-compare)")
	flag.StringVar(&o.AlertmanagerBin, "alertmanager", "prometheus-alertmanager", "the Alertmanager binary (-compare)")
	flag.StringVar(&o.DatabaseURL, "database-url", "", "Postgres for the core's Postgres target (-compare; empty skips it)")
	flag.IntVar(&o.Rounds, "rounds", 3, "interleaved rounds (-compare)")
	per := flag.String("per-post", "1,10", "alerts per POST (comma-separated with -compare)")
	kind := flag.String("target", loadgen.Core, "core or alertmanager (without -compare)")
	url := flag.String("url", "", "the target's base URL (without -compare)")
	flag.IntVar(&o.Alerts, "alerts", 1000, "distinct alerts, cycled through")
	flag.IntVar(&o.Posts, "posts", 2000, "POSTs per run (per target and round with -compare)")
	flag.IntVar(&o.Concurrency, "concurrency", 8, "concurrent posters")
	flag.Parse()
	for _, f := range strings.Split(*per, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "loadgen: -per-post %q: want whole numbers of at least 1\n", *per)
			os.Exit(2)
		}
		o.PerPost = append(o.PerPost, n)
	}
	if err := run(*compare, *kind, *url, o); err != nil {
		fmt.Fprintf(os.Stderr, "loadgen: %v\n", err)
		os.Exit(1)
	}
}

func run(compare bool, kind, url string, o loadgen.CompareOptions) error {
	if compare {
		return loadgen.Compare(context.Background(), o)
	}
	res, err := loadgen.Run(context.Background(), loadgen.Options{Kind: kind, URL: url, Alerts: o.Alerts, PerPost: o.PerPost[0], Posts: o.Posts, Concurrency: o.Concurrency})
	if err != nil {
		return err
	}
	fmt.Printf("%d alerts in %d POSTs: %.0f alerts/s, p50 %s, p99 %s\n", res.Alerts, res.Posts, res.AlertsPerSecond(), res.Percentile(0.5), res.Percentile(0.99))
	return nil
}
