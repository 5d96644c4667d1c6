package kube

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pagedPods serves total pods named p00000.. page by page; expire makes
// the continue token at that offset answer 410 Gone once.
type pagedPods struct {
	total, expireAt int
	calls           []metav1.ListOptions
}

func (f *pagedPods) list(_ context.Context, o metav1.ListOptions) (*corev1.PodList, error) {
	f.calls = append(f.calls, o)
	start := 0
	if o.Continue != "" {
		start, _ = strconv.Atoi(o.Continue)
	}
	if f.expireAt > 0 && start == f.expireAt {
		f.expireAt = 0
		return nil, apierrors.NewResourceExpired("the provided continue parameter is too old")
	}
	end := min(start+int(o.Limit), f.total)
	l := &corev1.PodList{}
	for i := start; i < end; i++ {
		l.Items = append(l.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%05d", i)}})
	}
	if end < f.total {
		l.Continue = strconv.Itoa(end)
		rest := int64(f.total - end)
		l.RemainingItemCount = &rest
	}
	return l, nil
}

func collectPods(t *testing.T, f *pagedPods, gate <-chan struct{}) ([]string, int, error) {
	t.Helper()
	var names []string
	pages, n := 0, 0
	err := pageEach(context.Background(), pager{timeout: time.Minute, gate: gate, pages: &pages, n: &n}, metav1.ListOptions{LabelSelector: "a=b"},
		f.list, func(l *corev1.PodList) []corev1.Pod { return l.Items }, func(l *corev1.PodList) metav1.ListMeta { return l.ListMeta },
		func(page []corev1.Pod) {
			for _, p := range page {
				names = append(names, p.Name)
			}
		})
	if n != len(names) {
		t.Errorf("counted %d, handed on %d", n, len(names))
	}
	return names, pages, err
}

func TestPageEachFollowsContinue(t *testing.T) {
	t.Parallel()
	const total = 4*pageSize + 345 // five pages
	cases := []struct {
		name      string
		expireAt  int
		wantPages int
	}{
		{"five pages", 0, 5},
		// the token of the third page expired (the 410 is a request): the
		// list starts again and skips the pods already handed on
		{"410 Gone restarts", 2 * pageSize, 2 + 1 + 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &pagedPods{total: total, expireAt: tc.expireAt}
			names, pages, err := collectPods(t, f, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != total || pages != tc.wantPages {
				t.Fatalf("got %d pods in %d pages", len(names), pages)
			}
			for i, n := range names {
				if n != fmt.Sprintf("p%05d", i) {
					t.Fatalf("pod %d is %s: seen twice or missed", i, n)
				}
			}
			if f.calls[0].Limit != pageSize || f.calls[len(f.calls)-1].LabelSelector != "a=b" {
				t.Errorf("calls = %+v", f.calls)
			}
		})
	}
}

func TestPageEachErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	pages, n := 0, 0
	err := pageEach(context.Background(), pager{timeout: time.Minute, pages: &pages, n: &n}, metav1.ListOptions{},
		func(context.Context, metav1.ListOptions) (*corev1.PodList, error) { return nil, boom },
		func(l *corev1.PodList) []corev1.Pod { return l.Items }, func(l *corev1.PodList) metav1.ListMeta { return l.ListMeta }, func([]corev1.Pod) {})
	if !errors.Is(err, boom) || pages != 1 {
		t.Errorf("err = %v after %d pages", err, pages)
	}
	// a 410 on the first page has nothing to continue from: it is the error
	gone := apierrors.NewResourceExpired("too old")
	err = pageEach(context.Background(), pager{timeout: time.Minute, pages: &pages, n: &n}, metav1.ListOptions{},
		func(context.Context, metav1.ListOptions) (*corev1.PodList, error) { return nil, gone },
		func(l *corev1.PodList) []corev1.Pod { return l.Items }, func(l *corev1.PodList) metav1.ListMeta { return l.ListMeta }, func([]corev1.Pod) {})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("err = %v", err)
	}
}

// TestPageEachWaitsForItsGate: a gated list asks for its first page at
// once but hands nothing on before the gate opens.
func TestPageEachWaitsForItsGate(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	asked := make(chan struct{})
	f := &pagedPods{total: 10}
	list := func(ctx context.Context, o metav1.ListOptions) (*corev1.PodList, error) {
		defer close(asked)
		return f.list(ctx, o)
	}
	handed := make(chan int, 1)
	go func() {
		pages, n := 0, 0
		_ = pageEach(context.Background(), pager{timeout: time.Minute, gate: gate, pages: &pages, n: &n}, metav1.ListOptions{}, list,
			func(l *corev1.PodList) []corev1.Pod { return l.Items }, func(l *corev1.PodList) metav1.ListMeta { return l.ListMeta },
			func(page []corev1.Pod) { handed <- len(page) })
	}()
	<-asked
	select {
	case n := <-handed:
		t.Fatalf("%d pods handed on before the gate opened", n)
	default:
	}
	close(gate)
	if n := <-handed; n != 10 {
		t.Errorf("handed on %d pods", n)
	}
}
