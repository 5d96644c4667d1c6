package gitops

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGitHub speaks the subset of GitHub's REST API the forge uses, with the
// real paths, JSON shapes and status codes, over an in-memory repository.
// It records every call as "METHOD /path[?query]" and, like GitHub, refuses
// to let a user approve their own pull request.
type fakeGitHub struct {
	t     *testing.T
	srv   *httptest.Server
	now   func() time.Time
	owner string
	repo  string

	mu       sync.Mutex
	calls    []string
	users    map[string]string            // token → login
	commits  map[string]map[string]string // sha → files
	branches map[string]string            // name → commit sha
	prs      []*fakePR
	seq      int
	// branch protection of the base branch (nil: none), the logins that
	// may read it (admins), the commit statuses (sha → context → state),
	// and whether GitHub is still computing mergeable_state.
	protection   *fakeProtection
	admins       map[string]bool
	statuses     map[string]map[string]string
	stateUnknown bool
	// userForbidden answers GET /user 403, as GitHub does for an App
	// installation token.
	userForbidden bool
	// apps: installation id → the App's slug; an installation token minted
	// for it acts as "<slug>[bot]".
	apps map[int64]string
}

type fakePR struct {
	Number                  int
	Title, Body, Head, Base string
	User                    string
	State                   string
	Merged                  bool
	BaseSHA                 string
	MergedHead              string
	CreatedAt               time.Time
	MergedAt                *time.Time
	Reviews                 []fakeReview
}

type fakeReview struct {
	ID                        int
	User, Body, State, Commit string
	At                        time.Time
}

func newFakeGitHub(t *testing.T, files map[string]string, now func() time.Time) *fakeGitHub {
	f := &fakeGitHub{t: t, now: now, owner: "acme", repo: "gitops",
		users:    map[string]string{"sol-token": "kubecrew-sol", "vera-token": "kubecrew-vera", "alice-token": "alice"},
		commits:  map[string]map[string]string{},
		branches: map[string]string{},
		admins:   map[string]bool{},
		statuses: map[string]map[string]string{},
	}
	f.branches["main"] = f.commit(files)
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitHub) commit(files map[string]string) string {
	f.seq++
	sha := fmt.Sprintf("%040x", f.seq)
	cp := map[string]string{}
	for k, v := range files {
		cp[k] = v
	}
	f.commits[sha] = cp
	return sha
}

func blobSHA(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func (f *fakeGitHub) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeGitHub) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

func (f *fakeGitHub) file(branch, path string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.commits[f.branches[branch]][path]
	return s, ok
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func ghError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := r.Method + " " + r.URL.Path
	if q := r.URL.Query(); len(q) > 0 {
		call += "?" + q.Encode()
	}
	f.calls = append(f.calls, call)
	if strings.HasPrefix(r.URL.Path, "/app") {
		f.serveApp(w, r)
		return
	}
	// GitHub takes "Bearer <token>" and "token <token>" (ghinstallation's)
	auth := r.Header.Get("Authorization")
	user, ok := f.users[strings.TrimPrefix(strings.TrimPrefix(auth, "Bearer "), "token ")]
	if !ok {
		ghError(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/user" {
		f.serveUser(w, user)
		return
	}
	prefix := "/repos/" + f.owner + "/" + f.repo + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		ghError(w, http.StatusNotFound, "Not Found")
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, prefix)
	var body map[string]any
	if r.Body != nil && (r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch) {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			ghError(w, http.StatusBadRequest, "Problems parsing JSON")
			return
		}
	}
	str := func(k string) string { s, _ := body[k].(string); return s }
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(rest, "contents/"):
		f.getContents(w, strings.TrimPrefix(rest, "contents/"), r.URL.Query().Get("ref"))
	case r.Method == http.MethodPut && strings.HasPrefix(rest, "contents/"):
		p := strings.TrimPrefix(rest, "contents/")
		branch := str("branch")
		head, ok := f.branches[branch]
		if !ok {
			ghError(w, http.StatusNotFound, "Branch not found")
			return
		}
		cur, exists := f.commits[head][p]
		if exists && str("sha") != blobSHA(cur) || !exists && str("sha") != "" {
			ghError(w, http.StatusConflict, p+" does not match "+str("sha"))
			return
		}
		content, err := base64.StdEncoding.DecodeString(str("content"))
		if err != nil {
			ghError(w, http.StatusUnprocessableEntity, "content is not valid Base64")
			return
		}
		files := map[string]string{}
		for k, v := range f.commits[head] {
			files[k] = v
		}
		files[p] = string(content)
		sha := f.commit(files)
		f.branches[branch] = sha
		code := http.StatusOK
		if !exists {
			code = http.StatusCreated
		}
		writeJSON(w, code, map[string]any{"content": map[string]any{"path": p, "sha": blobSHA(string(content)), "type": "file"}, "commit": map[string]any{"sha": sha, "message": str("message")}})
	case r.Method == http.MethodGet && strings.HasPrefix(rest, "git/trees/"):
		ref := strings.TrimPrefix(rest, "git/trees/")
		sha := f.resolve(ref)
		if sha == "" {
			ghError(w, http.StatusNotFound, "Not Found")
			return
		}
		var entries []map[string]any
		dirs := map[string]bool{}
		var paths []string
		for p := range f.commits[sha] {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			parts := strings.Split(p, "/")
			for i := 1; i < len(parts); i++ {
				d := strings.Join(parts[:i], "/")
				if !dirs[d] {
					dirs[d] = true
					entries = append(entries, map[string]any{"path": d, "mode": "040000", "type": "tree", "sha": blobSHA(d)})
				}
			}
			entries = append(entries, map[string]any{"path": p, "mode": "100644", "type": "blob", "sha": blobSHA(f.commits[sha][p]), "size": len(f.commits[sha][p])})
		}
		writeJSON(w, http.StatusOK, map[string]any{"sha": sha, "tree": entries, "truncated": false})
	case r.Method == http.MethodGet && strings.HasPrefix(rest, "git/ref/heads/"):
		b := strings.TrimPrefix(rest, "git/ref/heads/")
		sha, ok := f.branches[b]
		if !ok {
			ghError(w, http.StatusNotFound, "Not Found")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ref": "refs/heads/" + b, "object": map[string]any{"sha": sha, "type": "commit"}})
	case r.Method == http.MethodPost && rest == "git/refs":
		b := strings.TrimPrefix(str("ref"), "refs/heads/")
		if _, ok := f.branches[b]; ok {
			ghError(w, http.StatusUnprocessableEntity, "Reference already exists")
			return
		}
		if _, ok := f.commits[str("sha")]; !ok {
			ghError(w, http.StatusUnprocessableEntity, "Object does not exist")
			return
		}
		f.branches[b] = str("sha")
		writeJSON(w, http.StatusCreated, map[string]any{"ref": str("ref"), "object": map[string]any{"sha": str("sha"), "type": "commit"}})
	case r.Method == http.MethodPatch && strings.HasPrefix(rest, "git/refs/heads/"):
		b := strings.TrimPrefix(rest, "git/refs/heads/")
		if _, ok := f.branches[b]; !ok {
			ghError(w, http.StatusUnprocessableEntity, "Reference does not exist")
			return
		}
		f.branches[b] = str("sha")
		writeJSON(w, http.StatusOK, map[string]any{"ref": "refs/heads/" + b, "object": map[string]any{"sha": str("sha"), "type": "commit"}})
	case r.Method == http.MethodGet && rest == "pulls":
		q := r.URL.Query()
		var out []map[string]any
		for _, p := range f.prs {
			switch q.Get("state") {
			case "", "open":
				if p.State != "open" {
					continue
				}
			case "closed":
				if p.State != "closed" {
					continue
				}
			}
			if h := q.Get("head"); h != "" && h != f.owner+":"+p.Head {
				continue
			}
			if b := q.Get("base"); b != "" && b != p.Base {
				continue
			}
			out = append(out, f.prJSON(p))
		}
		if q.Get("sort") == "updated" && q.Get("direction") == "desc" {
			sort.SliceStable(out, func(i, j int) bool { return out[i]["updated_at"].(string) > out[j]["updated_at"].(string) })
		}
		if n, err := strconv.Atoi(q.Get("per_page")); err == nil && len(out) > n {
			out = out[:n]
		}
		if out == nil {
			out = []map[string]any{}
		}
		writeJSON(w, http.StatusOK, out)
	case r.Method == http.MethodPost && rest == "pulls":
		head, base := str("head"), str("base")
		if _, ok := f.branches[head]; !ok {
			ghError(w, http.StatusUnprocessableEntity, "Validation Failed: head invalid")
			return
		}
		for _, p := range f.prs {
			if p.Head == head && p.State == "open" {
				ghError(w, http.StatusUnprocessableEntity, "A pull request already exists for "+f.owner+":"+head+".")
				return
			}
		}
		p := &fakePR{Number: len(f.prs) + 1, Title: str("title"), Body: str("body"), Head: head, Base: base, User: user, State: "open", BaseSHA: f.branches[base], CreatedAt: f.now()}
		f.prs = append(f.prs, p)
		writeJSON(w, http.StatusCreated, f.prJSON(p))
	case strings.HasPrefix(rest, "pulls/"):
		f.servePull(w, r, user, strings.TrimPrefix(rest, "pulls/"), str)
	case r.Method == http.MethodGet && rest == "branches/main/protection":
		f.serveProtection(w, user)
	default:
		ghError(w, http.StatusNotFound, "Not Found")
	}
}

func (f *fakeGitHub) resolve(ref string) string {
	if sha, ok := f.branches[ref]; ok {
		return sha
	}
	if _, ok := f.commits[ref]; ok {
		return ref
	}
	return ""
}

func (f *fakeGitHub) getContents(w http.ResponseWriter, p, ref string) {
	if ref == "" {
		ref = "main"
	}
	sha := f.resolve(ref)
	c, ok := f.commits[sha][p]
	if sha == "" || !ok {
		ghError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"type": "file", "encoding": "base64", "size": len(c), "name": p[strings.LastIndex(p, "/")+1:], "path": p,
		"content": base64.StdEncoding.EncodeToString([]byte(c)), "sha": blobSHA(c),
	})
}

func (f *fakeGitHub) prJSON(p *fakePR) map[string]any {
	head := f.branches[p.Head]
	if p.Merged {
		head = p.MergedHead
	}
	m := map[string]any{
		"number": p.Number, "state": p.State, "title": p.Title, "body": p.Body,
		"user":       map[string]any{"login": p.User},
		"head":       map[string]any{"ref": p.Head, "sha": head, "label": f.owner + ":" + p.Head},
		"base":       map[string]any{"ref": p.Base, "sha": p.BaseSHA},
		"html_url":   fmt.Sprintf("https://github.example/%s/%s/pull/%d", f.owner, f.repo, p.Number),
		"created_at": p.CreatedAt.Format(time.RFC3339),
		"merged":     p.Merged,
	}
	updated := p.CreatedAt
	for _, r := range p.Reviews {
		updated = later(updated, r.At)
	}
	if p.MergedAt != nil {
		m["merged_at"] = p.MergedAt.Format(time.RFC3339)
		updated = later(updated, *p.MergedAt)
	}
	m["updated_at"] = updated.UTC().Format(time.RFC3339)
	return m
}

func (f *fakeGitHub) diff(p *fakePR) string {
	head := f.branches[p.Head]
	if p.Merged {
		head = p.MergedHead
	}
	a, b := f.commits[p.BaseSHA], f.commits[head]
	var paths []string
	for k := range b {
		if a[k] != b[k] {
			paths = append(paths, k)
		}
	}
	sort.Strings(paths)
	var sb strings.Builder
	for _, k := range paths {
		sb.WriteString(unifiedDiff(k, a[k], b[k]))
	}
	return sb.String()
}

func (f *fakeGitHub) servePull(w http.ResponseWriter, r *http.Request, user, rest string, str func(string) string) {
	parts := strings.SplitN(rest, "/", 2)
	n, err := strconv.Atoi(parts[0])
	if err != nil || n < 1 || n > len(f.prs) {
		ghError(w, http.StatusNotFound, "Not Found")
		return
	}
	p := f.prs[n-1]
	sub := ""
	if len(parts) == 2 {
		sub = parts[1]
	}
	switch {
	case r.Method == http.MethodGet && sub == "":
		if r.Header.Get("Accept") == "application/vnd.github.v3.diff" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte(f.diff(p)))
			return
		}
		m := f.prJSON(p)
		m["mergeable_state"] = f.mergeableState(p)
		writeJSON(w, http.StatusOK, m)
	case r.Method == http.MethodGet && sub == "reviews":
		out := []map[string]any{}
		for _, rv := range p.Reviews {
			out = append(out, map[string]any{"id": rv.ID, "user": map[string]any{"login": rv.User}, "body": rv.Body, "state": rv.State, "commit_id": rv.Commit, "submitted_at": rv.At.Format(time.RFC3339)})
		}
		writeJSON(w, http.StatusOK, out)
	case r.Method == http.MethodPost && sub == "reviews":
		state := map[string]string{"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}[str("event")]
		if state == "" {
			ghError(w, http.StatusUnprocessableEntity, "Unprocessable Entity: event")
			return
		}
		if user == p.User && state != "COMMENTED" {
			// the documented shape: errors[] holds plain strings here
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Unprocessable Entity",
				"errors": []string{"Can not approve your own pull request"}, "status": "422",
				"documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request"})
			return
		}
		commit := str("commit_id")
		if commit == "" {
			commit = f.branches[p.Head]
		}
		rv := fakeReview{ID: 100 + len(p.Reviews), User: user, Body: str("body"), State: state, Commit: commit, At: f.now()}
		p.Reviews = append(p.Reviews, rv)
		writeJSON(w, http.StatusOK, map[string]any{"id": rv.ID, "state": state, "body": rv.Body, "user": map[string]any{"login": user}, "commit_id": commit})
	case r.Method == http.MethodPut && sub == "merge":
		head := f.branches[p.Head]
		if p.State != "open" {
			ghError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
			return
		}
		if s := str("sha"); s != "" && s != head {
			ghError(w, http.StatusConflict, "Head branch was modified. Review and try the merge again.")
			return
		}
		if msg := f.protectionUnmet(p); msg != "" {
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"message": msg, "status": "405",
				"documentation_url": "https://docs.github.com/articles/about-protected-branches"})
			return
		}
		files := map[string]string{}
		for k, v := range f.commits[f.branches[p.Base]] {
			files[k] = v
		}
		for k, v := range f.commits[head] {
			if f.commits[p.BaseSHA][k] != v {
				files[k] = v
			}
		}
		f.branches[p.Base] = f.commit(files)
		now := f.now()
		p.State, p.Merged, p.MergedAt, p.MergedHead = "closed", true, &now, head
		writeJSON(w, http.StatusOK, map[string]any{"sha": f.branches[p.Base], "merged": true, "message": "Pull Request successfully merged"})
	default:
		ghError(w, http.StatusNotFound, "Not Found")
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
