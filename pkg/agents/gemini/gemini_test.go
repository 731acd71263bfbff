package gemini

import "testing"

// TestTrustsTheWorkingCopyForItsSessionOnly: gemini gets the working copy trusted through its env, not by
// the trust dialog (which restarts it) nor by an entry in the user's trustedFolders.json.
func TestTrustsTheWorkingCopyForItsSessionOnly(t *testing.T) {
	p := Adapter().Profile()
	env, err := p.RunEnv(t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if env["GEMINI_CLI_TRUST_WORKSPACE"] != "true" {
		t.Fatalf("gemini's env %v does not trust the working copy", env)
	}
}
