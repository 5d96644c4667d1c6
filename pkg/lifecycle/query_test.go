package lifecycle

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/store"
)

func TestParseQuery(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		query string
		want  store.LifecycleFilter
		limit int
		err   string
	}{
		{"", store.LifecycleFilter{State: "open"}, 0, ""},
		{"state=all&namespace=shop&severity=critical,high", store.LifecycleFilter{Namespace: "shop", Severities: []string{"critical", "high"}}, 0, ""},
		{"state=resolved&since=24h&limit=10", store.LifecycleFilter{State: "resolved", ResolvedSince: now.Add(-24 * time.Hour)}, 10, ""},
		{"since=2026-11-30T08:00:00Z&cluster=prod-eu&kind=Deployment&reason=OOMKilled&agent=platform-sre",
			store.LifecycleFilter{State: "open", Cluster: "prod-eu", Kind: "Deployment", Reason: "OOMKilled", Agent: "platform-sre",
				FirstSeenSince: now.Add(-24 * time.Hour)}, 0, ""},
		{"state=closed", store.LifecycleFilter{}, 0, `state "closed"`},
		{"severity=urgent", store.LifecycleFilter{}, 0, `severity "urgent"`},
		{"since=yesterday", store.LifecycleFilter{}, 0, `since "yesterday"`},
		{"since=-1h", store.LifecycleFilter{}, 0, `since "-1h"`},
		{"limit=0", store.LifecycleFilter{}, 0, `limit "0"`},
		{"limit=501", store.LifecycleFilter{}, 0, `limit "501"`},
	}
	for _, tc := range tests {
		q, _ := url.ParseQuery(tc.query)
		got, err := ParseQuery(q, now)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one naming %s", tc.query, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.query, err)
			continue
		}
		if !got.Filter.FirstSeenSince.Equal(tc.want.FirstSeenSince) || !got.Filter.ResolvedSince.Equal(tc.want.ResolvedSince) {
			t.Errorf("%q: since %v/%v, want %v/%v", tc.query, got.Filter.FirstSeenSince, got.Filter.ResolvedSince, tc.want.FirstSeenSince, tc.want.ResolvedSince)
		}
		got.Filter.FirstSeenSince, got.Filter.ResolvedSince, tc.want.FirstSeenSince, tc.want.ResolvedSince = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if !reflect.DeepEqual(got.Filter, tc.want) || got.Page.Limit != tc.limit {
			t.Errorf("%q: %+v limit %d, want %+v limit %d", tc.query, got.Filter, got.Page.Limit, tc.want, tc.limit)
		}
	}
}
