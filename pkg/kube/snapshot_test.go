package kube

import (
	"context"
	"errors"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPageAllFollowsContinue(t *testing.T) {
	t.Parallel()
	const total = 12345
	var calls []metav1.ListOptions
	list := func(_ context.Context, o metav1.ListOptions) (*corev1.PodList, error) {
		calls = append(calls, o)
		start := 0
		if o.Continue != "" {
			start, _ = strconv.Atoi(o.Continue)
		}
		end := min(start+int(o.Limit), total)
		l := &corev1.PodList{}
		for i := start; i < end; i++ {
			l.Items = append(l.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: strconv.Itoa(i)}})
		}
		if end < total {
			l.Continue = strconv.Itoa(end)
			rest := int64(total - end)
			l.RemainingItemCount = &rest
		}
		return l, nil
	}
	pages := 0
	pods, err := pageAll(context.Background(), metav1.ListOptions{LabelSelector: "a=b"}, list,
		func(l *corev1.PodList) []corev1.Pod { return l.Items }, func(l *corev1.PodList) metav1.ListMeta { return l.ListMeta }, &pages)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != total || pods[total-1].Name != strconv.Itoa(total-1) {
		t.Fatalf("got %d pods", len(pods))
	}
	if len(calls) != 3 || pages != 3 || calls[2].Continue != "10000" || calls[2].LabelSelector != "a=b" || calls[0].Limit != pageSize {
		t.Errorf("calls = %+v", calls)
	}
	boom := errors.New("boom")
	_, err = pageAll(context.Background(), metav1.ListOptions{}, func(context.Context, metav1.ListOptions) (*corev1.PodList, error) { return nil, boom },
		func(l *corev1.PodList) []corev1.Pod { return l.Items }, func(l *corev1.PodList) metav1.ListMeta { return l.ListMeta }, &pages)
	if !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
}
