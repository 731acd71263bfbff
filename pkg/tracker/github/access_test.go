package github

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/tracker"
)

// TestGitAuth: the token goes, as x-access-token's basic auth, to http(s) remotes on GitHub's git host only.
func TestGitAuth(t *testing.T) {
	t.Parallel()
	const token = "ghs_gitAuthTestToken"
	c, err := New(context.Background(), Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{
		"https://github.com/acme/widgets.git":     token,
		"https://GitHub.com:443/acme/widgets.git": token,
		"http://github.com/acme/widgets.git":      token,
		"https://github.com.evil.example/x.git":   "",
		"https://evil.example/github.com/x.git":   "",
		"ssh://git@github.com/acme/widgets.git":   "",
		"file:///srv/git/widgets.git":             "",
		"/srv/git/widgets.git":                    "",
	} {
		user, secret, ok := c.GitAuth(url)
		if secret != want || ok != (want != "") || (ok && user != "x-access-token") {
			t.Errorf("GitAuth(%s) = %q, %q, %v; want the token: %q", url, user, secret, ok, want)
		}
	}
	// An Enterprise server's git is on its API's host.
	ghe, err := New(context.Background(), Options{APIURL: "https://ghe.example/api/v3/", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if _, secret, _ := ghe.GitAuth("https://ghe.example/acme/widgets.git"); secret != token {
		t.Errorf("Enterprise remote: %q", secret)
	}
	if _, secret, _ := ghe.GitAuth("https://github.com/acme/widgets.git"); secret != "" {
		t.Errorf("github.com for an Enterprise tracker: %q", secret)
	}
}

func TestGitHost(t *testing.T) {
	t.Parallel()
	for api, want := range map[string]string{"": "github.com", "https://api.github.com/": "github.com",
		"https://ghe.example/api/v3/": "ghe.example", "http://127.0.0.1:8080/": "127.0.0.1"} {
		if got := GitHost(api); got != want {
			t.Errorf("GitHost(%q) = %q, want %q", api, got, want)
		}
	}
}

// TestTokenFallsBack: GITHUB_TOKEN falls back to GITHUB_CONTROL_API_KEY; none is ErrNotFound with what was tried.
func TestTokenFallsBack(t *testing.T) {
	t.Parallel()
	env := map[string]string{"GITHUB_CONTROL_API_KEY": "control-key"}
	r := secrets.NewResolver(secrets.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	ctx := context.Background()
	if tok, err := Token(ctx, r, []string{"GITHUB_TOKEN"}); err != nil || tok != "control-key" {
		t.Fatalf("GITHUB_TOKEN fallback: %q %v", tok, err)
	}
	if _, err := Token(ctx, r, []string{"MY_TOKEN"}); !errors.Is(err, secrets.ErrNotFound) || !strings.Contains(err.Error(), "MY_TOKEN") {
		t.Fatalf("no token: %v", err)
	}
}

// TestOpenAndDoctor: the configured tracker lends its token and API to the rest of ace; ace doctor tells an
// accepted token from a refused one.
func TestOpenAndDoctor(t *testing.T) {
	t.Parallel()
	gh, _, _ := setup(t)
	ctx := context.Background()
	with := func(env map[string]string) tracker.Setup { // a resolver keeps what it resolved: one per case
		return tracker.Setup{APIURL: gh.URL(), TokenEnv: []string{"BOT_TOKEN"}, CacheDir: t.TempDir(),
			Secrets: secrets.NewResolver(secrets.Options{
				LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})}
	}
	s := with(map[string]string{"BOT_TOKEN": "bot-token"})
	c, err := Open(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Secret(); got != "bot-token" {
		t.Errorf("Secret() = %q", got)
	}
	if ep := c.Endpoints(); len(ep) != 1 || ep[0].URL != gh.URL() {
		t.Errorf("Endpoints() = %+v", ep)
	}
	if got, err := Doctor(ctx, s); err != nil || !strings.Contains(got, "token accepted by "+gh.URL()) {
		t.Errorf("Doctor() = %q, %v", got, err)
	}
	if _, err := Doctor(ctx, with(map[string]string{"BOT_TOKEN": "not-a-token"})); !errors.Is(err, tracker.ErrUnauthorized) {
		t.Errorf("Doctor() with a refused token: %v", err)
	}
	if _, err := Open(ctx, with(nil)); !errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("Open() without a token: %v", err)
	}
}
