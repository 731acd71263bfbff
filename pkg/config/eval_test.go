package config

import (
	"slices"
	"strings"
	"testing"
)

func TestEvalReleases(t *testing.T) {
	t.Parallel()
	cfg, _, err := loadFile(t, "[eval]\nreleases = [\"/opt/clis/newest\", \"~/clis\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Eval.Releases; len(r) != 2 || r[0] != "/opt/clis/newest" || !strings.HasSuffix(r[1], "/clis") || strings.HasPrefix(r[1], "~") {
		t.Errorf("eval.releases %q, want the first as it is and ~ expanded", r)
	}
	_, path, err := loadFile(t, "[eval]\njobs = 1\nreleases = [\"/ok\", \"tools/agent-clis/newest\"]\n")
	if want := path + `:3: eval.releases[1]: "tools/agent-clis/newest" must be an absolute path`; err == nil ||
		!slices.Contains(strings.Split(err.Error(), "\n"), want) {
		t.Errorf("a relative directory: %v, want %q", err, want)
	}
}
