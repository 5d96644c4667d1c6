package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// RejectControlChars answers 400 {"error": …} for a request whose path or
// query holds a control character (NUL, C0, DEL, C1) or invalid UTF-8 once
// decoded. No id, slug or filter of either service holds one; refused at
// the door, such an id never reaches a store (Postgres refuses NUL with an
// error that would otherwise surface as a 500). Both services mount it
// first, so every route taking a run or investigation id answers alike.
func RejectControlChars(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		where, bad := "", ""
		if !PlainText(r.URL.Path) {
			where, bad = "path", r.URL.Path
		} else if r.URL.RawQuery != "" { // no query: nothing to parse (the webhook's path)
			for k, vs := range r.URL.Query() {
				for _, v := range append([]string{k}, vs...) {
					if !PlainText(v) {
						where, bad = "query parameter "+fmt.Sprintf("%q", k), v
					}
				}
			}
		}
		if where != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(ErrorBody{Error: fmt.Sprintf("%s %q holds a control character or invalid UTF-8", where, bad)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// PlainText reports whether s is valid UTF-8 without control characters.
func PlainText(s string) bool { return plainText(s, false) }

// PlainProse is PlainText that also allows tab, newline and carriage
// return (a label value or message may be prose).
func PlainProse(s string) bool { return plainText(s, true) }

func plainText(s string, prose bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if prose && (r == '\t' || r == '\n' || r == '\r') {
			continue
		}
		if Control(r) {
			return false
		}
	}
	return true
}

// Control reports whether r is a control character: C0, DEL or C1.
func Control(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// AllowQuery refuses, with 400 {"error": …}, a request carrying a query
// parameter the route does not take, naming it and what the route takes:
// a misspelt filter must not silently return everything.
func AllowQuery(allowed ...string) func(http.Handler) http.Handler {
	ok := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		ok[a] = true
	}
	takes := "no query parameters"
	if len(allowed) > 0 {
		takes = "only " + strings.Join(allowed, ", ")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var bad []string
			for k := range r.URL.Query() {
				if !ok[k] {
					bad = append(bad, strconv.Quote(k))
				}
			}
			if len(bad) > 0 {
				sort.Strings(bad)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(ErrorBody{Error: fmt.Sprintf("unknown query parameter %s: %s takes %s",
					strings.Join(bad, ", "), r.URL.Path, takes)})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
