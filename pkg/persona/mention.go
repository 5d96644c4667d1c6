package persona

// MentionedTools returns the names in universe that occur in text as whole
// words — delimited by anything other than ASCII letters, digits and '_' —
// in universe order, each once. "get_pr" is not mentioned by "get_prs" or
// "forget_pr", and is by "`get_pr`" or "get_pr,".
func MentionedTools(text string, universe []string) []string {
	words := map[string]bool{}
	start := -1
	for i := 0; i <= len(text); i++ {
		if i < len(text) && isWordByte(text[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			words[text[start:i]] = true
			start = -1
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, name := range universe {
		if words[name] && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
