package a2a

import (
	"net/http"
	"strings"

	sdk "github.com/a2aproject/a2a-go/a2a"
)

// CardPath is where every agent serves its card.
const CardPath = "/.well-known/agent-card.json"

// ProtocolVersion is the A2A spec version spoken here.
const ProtocolVersion = "0.3.0"

// BearerScheme names the bearer security scheme on the card.
const BearerScheme sdk.SecuritySchemeName = "bearer"

// SkillInfo is one skill of the persona (SKILL.md front matter).
type SkillInfo struct {
	Name        string
	Description string
}

// CardInfo is what an agent card says.
type CardInfo struct {
	Name        string
	Slug        string
	Description string
	// URL is the /invoke address.
	URL     string
	Version string
	Skills  []SkillInfo
	// Bearer declares that /invoke needs "Authorization: Bearer <token>".
	Bearer bool
}

// Card builds the agent card: JSON-RPC on URL, streaming, text and JSON in
// and out, one card skill per persona skill.
func Card(ci CardInfo) *sdk.AgentCard {
	modes := []string{"text/plain", "application/json"}
	c := &sdk.AgentCard{
		Name:               ci.Name,
		Description:        ci.Description,
		URL:                ci.URL,
		PreferredTransport: sdk.TransportProtocolJSONRPC,
		ProtocolVersion:    ProtocolVersion,
		Version:            ci.Version,
		Capabilities:       sdk.AgentCapabilities{Streaming: true},
		DefaultInputModes:  modes,
		DefaultOutputModes: modes,
		Provider:           &sdk.AgentProvider{Org: "kubecrew", URL: "https://github.com/kubecrew/kubecrew"},
		Skills:             []sdk.AgentSkill{},
	}
	for _, s := range ci.Skills {
		c.Skills = append(c.Skills, sdk.AgentSkill{
			ID: s.Name, Name: s.Name, Description: s.Description,
			Tags: []string{"kubecrew", ci.Slug},
		})
	}
	if ci.Bearer {
		c.SecuritySchemes = sdk.NamedSecuritySchemes{
			BearerScheme: sdk.HTTPAuthSecurityScheme{Scheme: "bearer", Description: "Authorization: Bearer <AUTH_TOKEN>"},
		}
		c.Security = []sdk.SecurityRequirements{{BearerScheme: sdk.SecuritySchemeScopes{}}}
	}
	return c
}

// RequestBaseURL is the scheme and host a request reached, for a card whose
// url must be the address clients used: X-Forwarded-Proto (http or https
// only) or TLS picks the scheme, the Host header the host.
func RequestBaseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("X-Forwarded-Proto"), ",")[0])); p == "http" || p == "https" {
		scheme = p
	}
	return scheme + "://" + r.Host
}
