//go:build race

package app_test

// raceEnabled: the race detector slows the storm ~10x; its time bound is
// for normal builds.
const raceEnabled = true
