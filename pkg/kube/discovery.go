package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// APIResourcesArgs are the slots of k8s_api_resources.
type APIResourcesArgs struct {
	Group string `json:"group,omitempty" description:"e.g. apps; core for the core group"`
}

const maxAPIResources = 300

// APIResources lists the resource types of each group's preferred version
// (discovery),
// bounded. Groups that failed discovery are named, not hidden.
func (c *Client) APIResources(ctx context.Context, a APIResourcesArgs) (string, error) {
	if err := c.avail(); err != nil {
		return "", err
	}
	group := a.Group
	if group == "core" {
		group = ""
	} else if err := validOptionalName("group", group); err != nil {
		return "", err
	}
	groups, all, err := discovery.ToDiscoveryInterfaceWithContext(c.cs.Discovery()).ServerGroupsAndResourcesWithContext(ctx)
	var failed []string
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			return "", c.apiErr(err, "API discovery")
		}
		for gv, gerr := range gdf.Groups {
			failed = append(failed, gv.String()+": "+safetext.Clean(gerr.Error(), 120))
		}
		sort.Strings(failed)
	}
	preferred := map[string]string{} // group -> preferred group/version
	for _, g := range groups {
		if g != nil {
			preferred[g.Name] = g.PreferredVersion.GroupVersion
		}
	}
	type row struct{ group, name, short, gv, ns, kind, verbs string }
	var rows []row
	for _, l := range all {
		if l == nil {
			continue
		}
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil || (a.Group != "" && gv.Group != group) {
			continue
		}
		if p, ok := preferred[gv.Group]; ok && p != "" && p != l.GroupVersion {
			continue // only the preferred version of each group
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") { // subresources
				continue
			}
			name := r.Name
			if gv.Group == "" && r.Name == "secrets" {
				name += " (denied to kubecrew)"
			}
			rows = append(rows, row{gv.Group, name, strings.Join(r.ShortNames, ","), l.GroupVersion,
				strconv.FormatBool(r.Namespaced), r.Kind, strings.Join(sortedVerbs(r.Verbs), ",")})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].group != rows[j].group {
			return rows[i].group < rows[j].group
		}
		return rows[i].name < rows[j].name
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%s", plural(len(rows), "resource type"))
	if a.Group != "" {
		fmt.Fprintf(&b, " in group %q", a.Group)
	}
	if len(rows) > maxAPIResources {
		fmt.Fprintf(&b, " (first %d shown; narrow with group)", maxAPIResources)
		rows = rows[:maxAPIResources]
	}
	b.WriteString("\n")
	if len(rows) > 0 {
		t := &table{head: []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS"}}
		for _, r := range rows {
			t.add(r.name, r.short, r.gv, r.ns, r.kind, r.verbs)
		}
		b.WriteString(t.String())
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, "partial: discovery failed for %d group versions: %s\n", len(failed), strings.Join(failed, "; "))
	}
	return b.String(), nil
}

func sortedVerbs(v metav1.Verbs) []string {
	out := append([]string(nil), v...)
	sort.Strings(out)
	return out
}
