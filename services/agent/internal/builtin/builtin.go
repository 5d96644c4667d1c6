// Package builtin holds the tools every persona gets whatever AGENT_TOOLS
// says: load_skill, report_finding, memory_read and memory_write. They act
// on the run they are called in (engine.RunFrom).
package builtin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// Names of the built-in tools, in the order they are added.
var Names = []string{"load_skill", "report_finding", "memory_read", "memory_write"}

// Tools returns the built-in tools.
func Tools() []tools.Tool {
	return []tools.Tool{loadSkill(), reportFinding(), memoryRead(), memoryWrite()}
}

var errNoRun = errors.New("this tool only works inside a run")

type loadSkillArgs struct {
	Name string `json:"name" description:"a name from your Skills section"`
}

func loadSkill() tools.Tool {
	return tools.New("load_skill", "Load the full text of one of your skills before following it.", false,
		func(ctx context.Context, a loadSkillArgs) (string, error) {
			r := engine.RunFrom(ctx)
			if r == nil {
				return "", errNoRun
			}
			name := strings.TrimSpace(a.Name)
			for _, s := range r.Persona.Skills {
				if s.Name == name {
					return s.Body, nil
				}
			}
			names := make([]string, 0, len(r.Persona.Skills))
			for _, s := range r.Persona.Skills {
				names = append(names, s.Name)
			}
			sort.Strings(names)
			return "", fmt.Errorf("no skill %q; your skills are: %s", name, strings.Join(names, ", "))
		})
}

func reportFinding() tools.Tool {
	return tools.New("report_finding", "Record one problem you found.", false,
		func(ctx context.Context, a api.FindingArgs) (string, error) {
			r := engine.RunFrom(ctx)
			if r == nil {
				return "", errNoRun
			}
			if !api.ValidSeverity(strings.ToLower(a.Severity)) {
				return "", fmt.Errorf("severity %q is not one of critical, high, medium, low", a.Severity)
			}
			if strings.TrimSpace(a.Name) == "" || strings.TrimSpace(a.Reason) == "" {
				return "", errors.New("name and reason are required")
			}
			f := r.ReportFinding(api.FindingFrom(a))
			return fmt.Sprintf("recorded finding %s (%s)", f.Key, f.Severity), nil
		})
}

type memoryReadArgs struct {
	Path string `json:"path,omitempty"`
}

func memoryRead() tools.Tool {
	return tools.New("memory_read", "Read one of your memory files, or list them (no path).", false,
		func(ctx context.Context, a memoryReadArgs) (string, error) {
			r := engine.RunFrom(ctx)
			if r == nil {
				return "", errNoRun
			}
			agent := r.Agent().Slug
			if strings.TrimSpace(a.Path) == "" {
				files, err := r.Store().ListMemory(ctx, agent)
				if err != nil {
					return "", fmt.Errorf("listing memory: %w", err)
				}
				if len(files) == 0 {
					return "no memory files yet", nil
				}
				var b strings.Builder
				for _, f := range files {
					fmt.Fprintf(&b, "%s (%d chars, updated %s)\n", f.Path, len(f.Content), f.UpdatedAt.UTC().Format("2006-01-02 15:04"))
				}
				return b.String(), nil
			}
			if err := store.ValidateMemoryPath(a.Path); err != nil {
				return "", err
			}
			f, err := r.Store().ReadMemory(ctx, agent, a.Path)
			if errors.Is(err, store.ErrNotFound) {
				return "", fmt.Errorf("%s does not exist yet", a.Path)
			}
			if err != nil {
				return "", fmt.Errorf("reading %s: %w", a.Path, err)
			}
			return f.Content, nil
		})
}

type memoryWriteArgs struct {
	Path    string `json:"path" description:"e.g. /memories/memory.md"`
	Content string `json:"content" description:"the whole file, or what to append"`
	Append  bool   `json:"append,omitempty"`
}

func memoryWrite() tools.Tool {
	return tools.New("memory_write", "Write or append to one of your memory files.", true,
		func(ctx context.Context, a memoryWriteArgs) (string, error) {
			r := engine.RunFrom(ctx)
			if r == nil {
				return "", errNoRun
			}
			if err := tools.Check(ctx, "memory.write"); err != nil {
				return "", err
			}
			if err := store.ValidateMemoryPath(a.Path); err != nil {
				return "", err
			}
			agent := r.Agent().Slug
			content := a.Content
			if a.Append {
				old, err := r.Store().ReadMemory(ctx, agent, a.Path)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					return "", fmt.Errorf("reading %s: %w", a.Path, err)
				}
				content = old.Content + content
			}
			if len(content) > store.MaxMemoryBytes {
				return "", fmt.Errorf("%s would be %d bytes; the limit is %d: summarise it", a.Path, len(content), store.MaxMemoryBytes)
			}
			if err := r.Store().WriteMemory(ctx, store.MemoryFile{Agent: agent, Path: a.Path, Content: content}); err != nil {
				return "", fmt.Errorf("writing %s: %w", a.Path, err)
			}
			return fmt.Sprintf("wrote %s (%d chars)", a.Path, len(content)), nil
		})
}
