package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
)

// Socket is the tmux socket (tmux -L) of the engine of the ace eval run in directory dir, base being tmux.socket:
// each eval directory has one of its own. Two evals running at once on one host number their items each for
// itself, so their runs' sessions have the same names (ace-<repo>-<item>): on one socket the second would find
// the first's session taken, or re-attach to it. Its own socket also makes every session there the eval's: ace
// clean ends them all once the eval is over.
func Socket(base, dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	sum := sha256.Sum256([]byte(dir))
	return base + "-eval-" + hex.EncodeToString(sum[:4])
}

// SharedSocket is the tmux socket all eval runs shared before each had its own (Socket): ace clean still ends the
// sessions an interrupted eval of an older ace left there.
func SharedSocket(base string) string { return base + "-eval" }
