// Command image builds kubecrew's OCI image index (linux/amd64 and
// linux/arm64 by default) without a container engine and writes it as an OCI
// layout directory and an OCI tarball (docs/MANUAL.md, "The image without a
// container engine"):
//
//	go run ./cmd/image -root .. -version v0.1.0 -out ../bin/image
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}
