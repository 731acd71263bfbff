// Package scripts embeds ace's helper scripts so that an installed ace binary can put them where agents run
// them from, wherever ace was installed.
package scripts

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

//go:embed codex-gh
var codexGH []byte

// Install writes the helper scripts into dir (0755), replacing older copies, and returns dir.
func Install(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "codex-gh")
	if old, err := os.ReadFile(path); err == nil && string(old) == string(codexGH) {
		return dir, nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, codexGH, 0o755); err != nil {
		return "", fmt.Errorf("install codex-gh: %w", err)
	}
	return dir, os.Rename(tmp, path)
}
