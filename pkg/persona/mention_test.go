package persona

import (
	"slices"
	"testing"
)

func TestMentionedTools(t *testing.T) {
	t.Parallel()
	universe := []string{"get_pr", "list_agent_prs", "k8s_rollout", "post_report"}
	tests := []struct {
		text string
		want []string
	}{
		{"call `get_pr` first", []string{"get_pr"}},
		{"get_pr, then get_pr again.", []string{"get_pr"}},
		{"forget_pr and get_prs and get_pr_x are other words", nil},
		{"list_agent_prs\nk8s_rollout(restart)", []string{"list_agent_prs", "k8s_rollout"}},
		{"post_report.k8s_rollout", []string{"k8s_rollout", "post_report"}}, // universe order
		{"a k8s-rollout or a rollout restart is not the tool name", nil},
		{"", nil},
	}
	for _, tc := range tests {
		got := MentionedTools(tc.text, universe)
		if !slices.Equal(got, tc.want) {
			t.Errorf("MentionedTools(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}
