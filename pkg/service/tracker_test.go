package service_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
)

// TestTrackersFromTheList: tracker.kind picks a tracker of service's list, and what needs no tracker client
// (ConfiguredRepo) asks one that opens without secrets — the local tracker names its folder's repository, GitHub
// with no github.repos names none; an unknown kind names the ones there are.
func TestTrackersFromTheList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "repo.toml"), []byte("name = \"acme/widgets\"\nremote = \"remote.git\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Workspace.Root = t.TempDir()
	cfg.Tracker.Kind, cfg.Tracker.Path = "local", dir
	if repo, err := service.ConfiguredRepo(cfg, ""); err != nil || repo != "acme/widgets" {
		t.Errorf("ConfiguredRepo(local) = %q, %v", repo, err)
	}
	trk, err := service.NewTracker(context.Background(), cfg, secrets.NewResolver(secrets.Options{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := trk.GitAuth("file://" + filepath.Join(dir, "remote.git")); ok || trk.Secret() != "" || len(trk.Endpoints()) != 0 {
		t.Errorf("the local tracker lends a credential or an endpoint")
	}
	cfg.Tracker.Path = filepath.Join(dir, "nowhere")
	if _, err := service.ConfiguredRepo(cfg, ""); err == nil || !strings.Contains(err.Error(), "local tracker at") {
		t.Errorf("ConfiguredRepo(a local tracker without its folder) = %v", err)
	}
	cfg.Tracker.Kind = "github"
	if _, err := service.ConfiguredRepo(cfg, ""); !errors.Is(err, service.ErrAmbiguous) {
		t.Errorf("ConfiguredRepo(github without repos) = %v", err)
	}
	cfg.Tracker.Kind = "gitlab"
	if _, err := service.NewTracker(context.Background(), cfg, secrets.NewResolver(secrets.Options{}), nil); err == nil ||
		!strings.Contains(err.Error(), `tracker.kind: unknown "gitlab" (want "github" or "local")`) {
		t.Errorf("NewTracker(gitlab) = %v", err)
	}
}
