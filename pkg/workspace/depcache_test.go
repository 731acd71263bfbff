package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDepCacheEnvPerRepository(t *testing.T) {
	t.Parallel()
	m, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.DepCacheEnv("acme/widgets")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := m.DepCacheEnv("acme/widgets")
	b, _ := m.DepCacheEnv("acme/gadgets")
	if strings.Join(a, " ") != strings.Join(again, " ") {
		t.Errorf("two calls for one repository differ:\n%v\n%v", a, again)
	}
	want := filepath.Join(m.o.Root, "cache", "deps", "acme", "widgets")
	seen := map[string]bool{}
	for i, kv := range a {
		name, dir, ok := strings.Cut(kv, "=")
		if !ok || seen[name] {
			t.Errorf("entry %q: not NAME=dir, or a name twice", kv)
		}
		seen[name] = true
		if filepath.Dir(dir) != want {
			t.Errorf("%s=%s is not under %s", name, dir, want)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Errorf("%s: directory not made: %v", name, err)
		}
		if b[i] == kv {
			t.Errorf("two repositories share %s", kv)
		}
	}
	for _, name := range []string{"GOMODCACHE", "GOCACHE", "npm_config_cache", "PIP_CACHE_DIR"} {
		if !seen[name] {
			t.Errorf("no %s", name)
		}
	}
	for _, bad := range []string{"../x", "a/b/c", "a/..", ""} {
		if env, err := m.DepCacheEnv(bad); err == nil {
			t.Errorf("DepCacheEnv(%q) = %v, want an error", bad, env)
		}
	}
}

// The tools themselves take the directories from the environment.
func TestDepCacheEnvIsWhatTheToolsUse(t *testing.T) {
	t.Parallel()
	m, _ := New(Options{Root: t.TempDir()})
	env, err := m.DepCacheEnv("acme/widgets")
	if err != nil {
		t.Fatal(err)
	}
	lookup := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		lookup[k] = v
	}
	for _, c := range []struct {
		tool string
		args []string
		env  string
	}{
		{"go", []string{"env", "GOMODCACHE"}, "GOMODCACHE"},
		{"go", []string{"env", "GOCACHE"}, "GOCACHE"},
		{"npm", []string{"config", "get", "cache"}, "npm_config_cache"},
		{"pip3", []string{"cache", "dir"}, "PIP_CACHE_DIR"},
	} {
		path, err := exec.LookPath(c.tool)
		if err != nil {
			t.Logf("%s not installed; not checked", c.tool)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, path, c.args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Logf("%s %v: %v (not checked)", c.tool, c.args, err)
			continue
		}
		if got := strings.TrimSpace(string(out)); got != lookup[c.env] {
			t.Errorf("%s %v = %q, want %q", c.tool, c.args, got, lookup[c.env])
		}
	}
}
