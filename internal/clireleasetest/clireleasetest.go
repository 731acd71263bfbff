// Package clireleasetest makes installed releases of an agent CLI for tests of pkg/clirelease and its users: an
// install prefix as npm leaves it, and a fake npm that makes one, so that no test reaches the network.
package clireleasetest

import (
	"os"
	"path/filepath"
	"testing"
)

// Package and CLI are the release tests' npm package and its program (claude's; the fake npm makes no other).
const (
	Package = "@anthropic-ai/claude-code"
	CLI     = "claude"
)

// Prefix makes dir an install prefix holding version of Package, its program a script that prints the version,
// linked from node_modules/.bin as npm links it.
func Prefix(t testing.TB, dir, version string) string {
	t.Helper()
	mod := filepath.Join(dir, "node_modules", Package)
	bin := filepath.Join(dir, "node_modules", ".bin")
	for _, d := range []string{mod, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(mod, "package.json"), `{"name": "`+Package+`", "version": "`+version+`"}`, 0o644)
	write(t, filepath.Join(mod, "cli.js"), "#!/bin/sh\necho "+version+"\n", 0o755)
	if err := os.Symlink("../"+Package+"/cli.js", filepath.Join(bin, CLI)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// NPM puts a program named npm that runs body (sh) first on a PATH of its own (the system's directories after it)
// and returns that PATH.
func NPM(t testing.TB, body string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "npm"), "#!/bin/sh\n"+body, 0o755)
	return dir + string(os.PathListSeparator) + "/usr/bin:/bin"
}

// Install is a fake npm's body: `npm install --prefix P … PKG@V` makes P a prefix holding V of Package (9.9.9
// when $NPM_LIE is set), and appends PKG@V to $NPM_LOG when it is set.
const Install = `[ "$1" = install ] || exit 3
while [ $# -gt 0 ]; do case "$1" in --prefix) p="$2"; shift;; *@*) spec="$1";; esac; shift; done
v="${spec##*@}"; [ -n "$NPM_LIE" ] && v=9.9.9
m="$p/node_modules/@anthropic-ai/claude-code"
mkdir -p "$m" "$p/node_modules/.bin"
printf '{"name": "@anthropic-ai/claude-code", "version": "%s"}' "$v" > "$m/package.json"
printf '#!/bin/sh\necho %s\n' "$v" > "$m/cli.js"
chmod +x "$m/cli.js"
ln -s ../@anthropic-ai/claude-code/cli.js "$p/node_modules/.bin/claude"
[ -z "$NPM_LOG" ] || echo "$spec" >> "$NPM_LOG"
`

func write(t testing.TB, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}
