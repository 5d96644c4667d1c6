package kube

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// GetEventsArgs are the slots of k8s_get_events.
type GetEventsArgs struct {
	Namespace string `json:"namespace,omitempty" description:"omit for all"`
	Type      string `json:"type,omitempty" enum:"Normal,Warning"`
	Reason    string `json:"reason,omitempty" description:"e.g. BackOff, FailedScheduling"`
	Kind      string `json:"kind,omitempty" description:"involved object kind"`
	Name      string `json:"name,omitempty" description:"involved object name"`
	Since     string `json:"since,omitempty" description:"e.g. 30m, 2h (default 1h, max 7d)"`
	Limit     int    `json:"limit,omitempty" description:"default 50, max 200"`
}

const (
	defaultEventWindow = time.Hour
	defaultEvents      = 50
	maxEvents          = 200
	eventMsgMax        = 240
)

// GetEvents lists events newest first, filtered by type, reason, object and
// window. Messages are sanitized and bounded.
func (c *Client) GetEvents(ctx context.Context, a GetEventsArgs) (string, error) {
	if err := c.avail(); err != nil {
		return "", err
	}
	if err := validOptionalName("namespace", a.Namespace); err != nil {
		return "", err
	}
	if err := validOptionalName("name", a.Name); err != nil {
		return "", err
	}
	if a.Type != "" && a.Type != corev1.EventTypeNormal && a.Type != corev1.EventTypeWarning {
		return "", fmt.Errorf("invalid type %q: Normal or Warning", safetext.Clean(a.Type, 40))
	}
	if a.Reason != "" && !reasonRE.MatchString(a.Reason) {
		return "", fmt.Errorf("invalid reason %q: letters and digits only, e.g. BackOff", safetext.Clean(a.Reason, 40))
	}
	kind := ""
	if a.Kind != "" {
		if strings.EqualFold(a.Kind, "secret") || strings.EqualFold(a.Kind, "secrets") {
			return "", ErrSecretsDenied
		}
		if !reasonRE.MatchString(a.Kind) {
			return "", fmt.Errorf("invalid kind %q: an API kind such as Pod or Deployment", safetext.Clean(a.Kind, 40))
		}
		kind = apiKind(a.Kind)
	}
	since, err := parseSince(a.Since, defaultEventWindow)
	if err != nil {
		return "", err
	}
	limit, err := bound(a.Limit, defaultEvents, maxEvents)
	if err != nil {
		return "", err
	}
	var sel []fields.Selector
	if a.Type != "" {
		sel = append(sel, fields.OneTermEqualSelector("type", a.Type))
	}
	if a.Reason != "" {
		sel = append(sel, fields.OneTermEqualSelector("reason", a.Reason))
	}
	if kind != "" {
		sel = append(sel, fields.OneTermEqualSelector("involvedObject.kind", kind))
	}
	if a.Name != "" {
		sel = append(sel, fields.OneTermEqualSelector("involvedObject.name", a.Name))
	}
	opts := metav1.ListOptions{}
	if len(sel) > 0 {
		opts.FieldSelector = fields.AndSelectors(sel...).String()
	}
	now := c.now()
	cutoff := now.Add(-since)
	var evs []*corev1.Event // the newest limit so far, copied (a page is not held)
	total := 0
	err = c.eachEvent(ctx, a.Namespace, opts, func(e *corev1.Event) {
		// the field selector already filtered; checked again so a server
		// (or fake) that ignored it cannot widen the answer
		if (a.Type != "" && e.Type != a.Type) || (a.Reason != "" && e.Reason != a.Reason) ||
			(kind != "" && e.InvolvedObject.Kind != kind) || (a.Name != "" && e.InvolvedObject.Name != a.Name) {
			return
		}
		if eventLastSeen(e).Before(cutoff) {
			return
		}
		total++
		evs = append(evs, keptEvent(e))
		if len(evs) >= 4*limit {
			sortEventsNewestFirst(evs)
			evs = evs[:limit]
		}
	})
	if err != nil {
		return "", c.apiErr(err, "list events in "+scope(a.Namespace))
	}
	sortEventsNewestFirst(evs)
	var b strings.Builder
	fmt.Fprintf(&b, "events in %s within %s", scope(a.Namespace), window(since))
	if opts.FieldSelector != "" {
		fmt.Fprintf(&b, " where %s", opts.FieldSelector)
	}
	if len(evs) == 0 {
		b.WriteString(": none\n")
		return b.String(), nil
	}
	fmt.Fprintf(&b, ": %d", total)
	if len(evs) > limit {
		fmt.Fprintf(&b, " (newest %d shown)", limit)
		evs = evs[:limit]
	}
	b.WriteString("\n")
	t := &table{head: []string{"LAST-SEEN", "TYPE", "REASON", "OBJECT", "COUNT", "MESSAGE"}}
	for _, e := range evs {
		t.add(shortDur(now.Sub(eventLastSeen(e)))+" ago", e.Type, e.Reason,
			nsName(e.InvolvedObject.Namespace, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name),
			strconv.Itoa(eventCount(e)), safetext.Clean(e.Message, eventMsgMax))
	}
	b.WriteString(t.String())
	return b.String(), nil
}

// eachEvent lists events page by page, handing each on (snapshot.go),
// so a tool's listing holds one page at a time.
func (c *Client) eachEvent(ctx context.Context, ns string, opts metav1.ListOptions, f func(*corev1.Event)) error {
	pages, n := 0, 0
	return pageEach(ctx, pager{timeout: requestTimeout, pages: &pages, n: &n}, opts, c.cs.CoreV1().Events(ns).List,
		func(l *corev1.EventList) []corev1.Event { return l.Items }, func(l *corev1.EventList) metav1.ListMeta { return l.ListMeta },
		func(page []corev1.Event) {
			for i := range page {
				f(&page[i])
			}
		})
}

// apiKind turns "pod", "Pods" or "deployment" into the API's "Pod",
// "Deployment"; unknown kinds keep their spelling with a capital.
func apiKind(s string) string {
	if k, err := parseKind(s, nil); err == nil {
		return kindNames[k]
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func sortEventsNewestFirst(evs []*corev1.Event) {
	sort.SliceStable(evs, func(i, j int) bool {
		ti, tj := eventLastSeen(evs[i]), eventLastSeen(evs[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		if evs[i].Namespace != evs[j].Namespace {
			return evs[i].Namespace < evs[j].Namespace
		}
		return evs[i].Name < evs[j].Name
	})
}
