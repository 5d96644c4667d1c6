package api

import "time"

// PRView is an agent pull request as the forge shows it now: an agent's
// GET /prs and the core's GET /api/v1/prs (docs/MANUAL.md, "Dashboard").
type PRView struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	URL    string `json:"url"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// HeadSHA is the branch head the forge reports.
	HeadSHA string `json:"head_sha,omitempty"`
	// Author is the agent the PR names (its proposed-by); Opener the forge
	// account that opened it, where the forge has accounts.
	Author    string    `json:"author"`
	Opener    string    `json:"opener,omitempty"`
	State     string    `json:"state"` // open|merged|closed
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Reviews is how many reviews it has; Review the newest (open PRs
	// only), ReviewStale when it was given on another head.
	Reviews     int         `json:"reviews"`
	Review      *ReviewView `json:"review,omitempty"`
	ReviewStale bool        `json:"review_stale,omitempty"`
	// Cluster is the CLUSTER_NAME of the agent that read it.
	Cluster string `json:"cluster"`
}

// ReviewView is one review of a PR.
type ReviewView struct {
	Reviewer string    `json:"reviewer"`
	Verdict  string    `json:"verdict"` // approve|request_changes|comment
	Body     string    `json:"body"`
	At       time.Time `json:"at"`
	Commit   string    `json:"commit,omitempty"`
}

// PRList is an agent's GET /prs: its forge's agent PRs, open ones and,
// with ?state=all, those merged or closed lately. Forge is "" when the
// agent has no GitOps repository (and Items is empty for that reason);
// AsOf is when the forge was read (the answer may be that old: the agent
// reads the forge at most every few seconds however often it is asked).
type PRList struct {
	Items   []PRView  `json:"items"`
	Forge   string    `json:"forge"`
	Cluster string    `json:"cluster"`
	AsOf    time.Time `json:"as_of"`
}
