// Package agents holds the five persona directories (noor, sol, vera, dax,
// ada) and embeds them into the agent binary. It imports nothing of ours:
// pkg/persona loads and validates these files from any fs.FS, so a mounted
// PERSONA_DIR works exactly like the embedded copy.
package agents

import "embed"

// FS holds noor/, sol/, vera/, dax/ and ada/ at its root, each with
// AGENTS.md, Identity.md, PULSE.md, agent.env and skills/<name>/SKILL.md.
//
//go:embed all:noor all:sol all:vera all:dax all:ada
var FS embed.FS
