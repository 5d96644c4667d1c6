//go:build !unix

package gitops

// lockFile is a no-op where flock does not exist: the in-process mutex is
// the only guard, so share a local repository between processes only on
// unix.
func lockFile(string) (func(), error) { return func() {}, nil }
