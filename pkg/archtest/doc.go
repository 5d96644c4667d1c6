// Package archtest holds the test that enforces the dependency rules of
// docs/ARCHITECTURE.md across the repository's modules. It has no code.
package archtest
