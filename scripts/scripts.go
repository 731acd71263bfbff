// Package scripts embeds ace's helper scripts so that an installed ace binary can put them where agents run
// them from, wherever ace was installed.
package scripts

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aceworks/ace/pkg/atomicfile"
)

//go:embed codex-gh
var codexGH []byte

// Install writes the helper scripts into dir (0755), replacing older copies, and returns dir. Several ace
// processes may install into the same dir at once: each writes its own temporary file and renames it into
// place, so every one of them succeeds and a script is never seen half-written.
func Install(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "codex-gh")
	if old, err := os.ReadFile(path); err == nil && string(old) == string(codexGH) {
		return dir, nil
	}
	if err := atomicfile.Write(path, codexGH, 0o755); err != nil {
		return "", fmt.Errorf("install codex-gh: %w", err)
	}
	return dir, nil
}
