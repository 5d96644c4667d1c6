package httpauth

// RequireToken is the start-up rule both binaries keep (docs/MANUAL.md,
// "Authentication"): no write token is an error unless authentication is
// disabled on purpose, a read token needs the write token beside it, and
// disabling authentication beside a token is a contradiction. It names the
// setting at fault and what is wrong with it; "" when the tokens are
// usable (or authentication is off on purpose, which the caller warns of).
func RequireToken(write, read string, disabled bool) (setting, problem string) {
	switch {
	case disabled && (write != "" || read != ""):
		return "AUTH_DISABLED", "is true but AUTH_TOKEN or AUTH_READ_TOKEN is set too: unset AUTH_DISABLED to require the tokens, or unset the tokens"
	case disabled:
		return "", ""
	case write == "" && read != "":
		return "AUTH_READ_TOKEN", "is set without AUTH_TOKEN: a read-only token needs the write token beside it (set AUTH_TOKEN), " +
			"or set AUTH_DISABLED=true to run without authentication"
	case write == "":
		return "AUTH_TOKEN", "is not set: every route would be open to anyone who reaches the port; set AUTH_TOKEN to a long random string " +
			"(e.g. openssl rand -hex 32), or AUTH_DISABLED=true on a laptop"
	}
	return "", ""
}
