package scripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestCodexGH runs the real script with a fake codex first on PATH.
func TestCodexGH(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\necho \"TOKEN=$GITHUB_TOKEN\"\necho \"MCP=${GITHUB_MCP_TOKEN_ENV:-}\"\nfor a in \"$@\"; do echo \"ARG=$a\"; done\n"
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := Install(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run := func(env ...string) string {
		cmd := exec.Command(filepath.Join(dir, "codex-gh"), "--model", "o3", "say \"hi\" $(x)", "")
		cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin"}, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("codex-gh: %v\n%s", err, out)
		}
		return string(out)
	}
	out := run("GITHUB_CONTROL_API_KEY=ctl-key", "GITHUB_MCP_TOKEN_ENV=GITHUB_TOKEN")
	for _, want := range []string{"TOKEN=ctl-key", "MCP=GITHUB_TOKEN", "ARG=--model", "ARG=o3", "ARG=say \"hi\" $(x)", "ARG=\n"} {
		if !strings.Contains(out+"\n", want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if out := run("GITHUB_TOKEN=own", "GITHUB_CONTROL_API_KEY=ctl-key"); !strings.Contains(out, "TOKEN=own") {
		t.Errorf("an existing GITHUB_TOKEN was replaced:\n%s", out)
	}
	release := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(release, []byte("#!/bin/sh\necho RELEASE \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out := run("ACE_CODEX_PROGRAM=" + release); !strings.HasPrefix(out, "RELEASE --model o3") {
		t.Errorf("ACE_CODEX_PROGRAM did not start the release, but:\n%s", out)
	}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		if out, err := exec.Command(sc, "codex-gh").CombinedOutput(); err != nil {
			t.Errorf("shellcheck: %s", out)
		}
	}
}

// installDirEnv makes the test binary a helper process that installs into the named dir and exits.
const installDirEnv = "ACE_SCRIPTS_TEST_INSTALL_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(installDirEnv); dir != "" {
		if _, err := Install(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestConcurrentInstallsIntoAFreshDir is two (here: many) ace processes starting on a fresh root at once: each
// installs the scripts, and every one of them must succeed and leave a whole script and no temporary file.
func TestConcurrentInstallsIntoAFreshDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "bin")
	const procs, goroutines = 6, 16
	var wg sync.WaitGroup
	errs := make(chan error, procs+goroutines)
	for i := 0; i < procs; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), installDirEnv+"="+dir)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("process %d: %v: %s", cmd.Process.Pid, err, out)
			}
		}()
	}
	for i := 0; i < goroutines; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Install(dir); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "codex-gh"))
	if err != nil || string(b) != string(codexGH) {
		t.Fatalf("installed script: %v, %d bytes of %d", err, len(b), len(codexGH))
	}
	if fi, _ := os.Stat(filepath.Join(dir, "codex-gh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left in %s: %v", dir, entries)
	}
}
