package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// git runs the git CLI on one repository with a fixed, config-independent
// environment: no system or global config, no prompts, C locale, and an
// identity given on the command line.
type git struct {
	repo string
}

type gitOpts struct {
	stdin []byte
	env   []string
}

func (g git) run(ctx context.Context, o gitOpts, args ...string) (string, error) {
	full := append([]string{
		"-C", g.repo,
		"-c", "user.name=kubecrew", "-c", "user.email=kubecrew@localhost",
		"-c", "core.quotePath=true", "-c", "diff.noprefix=false", "-c", "color.ui=false",
	}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(cleanEnv(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
	cmd.Env = append(cmd.Env, o.env...)
	if o.stdin != nil {
		cmd.Stdin = bytes.NewReader(o.stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.String(), &gitError{args: args, code: ee.ExitCode(), stderr: strings.TrimSpace(stderr.String())}
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return stdout.String(), nil
}

// cleanEnv is the process environment without GIT_* variables: a GIT_DIR or
// GIT_INDEX_FILE inherited from a hook or a shell must not redirect the
// forge to another repository or index.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			out = append(out, kv)
		}
	}
	return out
}

// out runs git and returns its output without the trailing newline.
func (g git) out(ctx context.Context, args ...string) (string, error) {
	s, err := g.run(ctx, gitOpts{}, args...)
	return strings.TrimRight(s, "\n"), err
}

type gitError struct {
	args   []string
	code   int
	stderr string
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: exit %d: %s", strings.Join(e.args, " "), e.code, e.stderr)
}

func exitCode(err error) int {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.code
	}
	return -1
}

// gitDate formats t for GIT_AUTHOR_DATE / GIT_COMMITTER_DATE.
func gitDate(t time.Time) string {
	return fmt.Sprintf("@%d +0000", t.Unix())
}

// identityEnv sets author and committer of a commit.
func identityEnv(name string, at time.Time) []string {
	if name == "" {
		name = "kubecrew"
	}
	email := strings.ReplaceAll(strings.ToLower(name), " ", "-") + "@kubecrew.local"
	return []string{
		"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email, "GIT_AUTHOR_DATE=" + gitDate(at),
		"GIT_COMMITTER_NAME=kubecrew", "GIT_COMMITTER_EMAIL=kubecrew@localhost", "GIT_COMMITTER_DATE=" + gitDate(at),
	}
}

// commitFiles writes a commit whose tree is parent's tree (or empty) with
// files set, using a private index file: the repository's own index and
// working tree are never read or written. It returns the commit and whether
// the tree differs from the parent's.
func (g git) commitFiles(ctx context.Context, parent string, files map[string][]byte, msg, author string, at time.Time) (commit string, changed bool, err error) {
	tmp, err := os.MkdirTemp("", "kubecrew-index-")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp)
	idx := []string{"GIT_INDEX_FILE=" + tmp + "/index"}
	if parent != "" {
		if _, err := g.run(ctx, gitOpts{env: idx}, "read-tree", parent); err != nil {
			return "", false, err
		}
	}
	for p, content := range files {
		mode := "100644"
		if parent != "" {
			ls, err := g.out(ctx, "ls-tree", parent, "--", p)
			if err != nil {
				return "", false, err
			}
			if ls != "" {
				f := strings.Fields(ls)
				if len(f) < 2 || f[1] != "blob" {
					return "", false, fmt.Errorf("%s is not a file on the base branch", p)
				}
				mode = f[0]
			}
		}
		blob, err := g.run(ctx, gitOpts{stdin: content}, "hash-object", "-w", "--stdin")
		if err != nil {
			return "", false, err
		}
		info := fmt.Sprintf("%s,%s,%s", mode, strings.TrimSpace(blob), p)
		if _, err := g.run(ctx, gitOpts{env: idx}, "update-index", "--add", "--cacheinfo", info); err != nil {
			return "", false, err
		}
	}
	tree, err := g.run(ctx, gitOpts{env: idx}, "write-tree")
	if err != nil {
		return "", false, err
	}
	tree = strings.TrimSpace(tree)
	args := []string{"commit-tree", tree}
	changed = true
	if parent != "" {
		ptree, err := g.out(ctx, "rev-parse", parent+"^{tree}")
		if err != nil {
			return "", false, err
		}
		changed = ptree != tree
		args = append(args, "-p", parent)
	}
	args = append(args, "-F", "-")
	c, err := g.run(ctx, gitOpts{stdin: []byte(msg), env: identityEnv(author, at)}, args...)
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(c), changed, nil
}

// InitLocalRepo creates a bare git repository at dir whose branch "main"
// holds one commit with files (path → content). It is the GitOps repository
// of demos and tests; NewLocal(dir, "main") serves it.
func InitLocalRepo(dir string, files map[string][]byte) error {
	ctx := context.Background()
	if len(files) == 0 {
		return errors.New("InitLocalRepo needs at least one file")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	g := git{repo: dir}
	if _, err := g.run(ctx, gitOpts{}, "init", "--bare", "--quiet", "--initial-branch=main"); err != nil {
		return err
	}
	clean := make(map[string][]byte, len(files))
	for p, c := range files {
		cp, err := cleanRepoPath(p, false)
		if err != nil {
			return err
		}
		clean[cp] = c
	}
	c, _, err := g.commitFiles(ctx, "", clean, "Initial GitOps repository\n", "kubecrew", time.Now())
	if err != nil {
		return err
	}
	_, err = g.run(ctx, gitOpts{}, "update-ref", "refs/heads/main", c, "")
	return err
}
