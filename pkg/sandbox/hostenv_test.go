package sandbox_test

import (
	"testing"

	"github.com/aceworks/ace/pkg/sandbox"
)

// TestHostVarsPassOnlyThePlainOnes: where programs are, the locale and who the user is pass; a token does not.
func TestHostVarsPassOnlyThePlainOnes(t *testing.T) {
	t.Setenv("PATH", "/opt/bin:/usr/bin")
	t.Setenv("LC_ALL", "C.UTF-8")
	t.Setenv("GITHUB_TOKEN", "ghs_secret")
	t.Setenv("ANTHROPIC_API_KEY", "sk-secret")
	env := sandbox.HostVars()
	if env["PATH"] != "/opt/bin:/usr/bin" || env["LC_ALL"] != "C.UTF-8" {
		t.Fatalf("PATH and LC_ALL did not pass: %v", env)
	}
	for _, k := range []string{"GITHUB_TOKEN", "ANTHROPIC_API_KEY", "HOME"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s passed", k)
		}
	}
}
