package workspace

import (
	"fmt"
	"os"
	"path/filepath"
)

// depCaches maps a cache directory's name under <root>/cache/deps/<owner>/<repo>/ to the variable that points
// a package manager at it. Only variables that name a cache are here: none that would also move a tool's own
// configuration or credentials (CARGO_HOME, GRADLE_USER_HOME), which stay the user's.
var depCaches = []struct{ dir, env string }{
	{"gomod", "GOMODCACHE"},          // go modules
	{"gobuild", "GOCACHE"},           // go build and test results
	{"npm", "npm_config_cache"},      // npm
	{"pnpm", "npm_config_store_dir"}, // pnpm reads npm's configuration; its store hard-links into node_modules
	{"yarn", "YARN_CACHE_FOLDER"},    // yarn 1 and berry
	{"pip", "PIP_CACHE_DIR"},         // pip
	{"uv", "UV_CACHE_DIR"},           // uv
}

// DepCacheEnv returns the environment ("NAME=dir" entries) that points package managers at repo's own cache
// directories under <root>/cache/deps/<owner>/<repo>/, creating them. Every working copy of a repository gets
// the same directories, so that a setup step (npm ci, go mod download) run in the 2nd copy finds what the 1st
// downloaded, while two repositories never share a cache (one cannot plant a package the other installs).
func (m *Manager) DepCacheEnv(repo string) ([]string, error) {
	owner, name, err := repoParts(repo)
	if err != nil {
		return nil, err
	}
	base, err := m.under("cache", "deps", owner, name)
	if err != nil {
		return nil, err
	}
	env := make([]string, 0, len(depCaches))
	for _, c := range depCaches {
		dir := filepath.Join(base, c.dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("dependency cache for %s: %w", repo, err)
		}
		env = append(env, c.env+"="+dir)
	}
	return env, nil
}
