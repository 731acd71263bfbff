package eval

import (
	"context"
	"errors"
	"fmt"

	"github.com/aceworks/ace/pkg/clirelease"
)

// Releases finds the CLI releases --agents names (claude@2.1.331): in the directories given (the repository's
// pinned sets, say), else among those ace keeps under its root, installing it there when it is in neither.
type Releases struct {
	Root string   // ace's root: it keeps releases in clirelease.Dir(Root, agent, version)
	Dirs []string // install prefixes looked in first
	// NoInstall refuses a release found nowhere instead of installing it.
	NoInstall bool
	Installer clirelease.Installer
}

// Find is release version of agent's CLI, the npm package pkg whose program is cli.
func (rs Releases) Find(ctx context.Context, agent, version, pkg, cli string) (clirelease.Release, error) {
	if err := clirelease.CheckVersion(version); err != nil {
		return clirelease.Release{}, err
	}
	own := clirelease.Dir(rs.Root, agent, version)
	r, err := clirelease.Find(append(append([]string(nil), rs.Dirs...), own), pkg, cli, version)
	switch {
	case err == nil:
		return r, nil
	case !errors.Is(err, clirelease.ErrNotFound):
		return r, err
	case rs.NoInstall:
		return r, fmt.Errorf("%w: install it with ace agents install %s@%s, or name a directory that holds it (--releases)", err,
			agent, version)
	}
	return rs.Installer.Install(ctx, own, pkg, cli, version)
}
