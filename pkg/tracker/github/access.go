package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/tracker"
)

// Open is the GitHub tracker of the configuration: [github]'s API (api_url) with the token of token_env, its
// conditional requests cached in s.CacheDir.
func Open(ctx context.Context, s tracker.Setup) (*Client, error) {
	tok, err := Token(ctx, s.Secrets, s.TokenEnv)
	if err != nil {
		return nil, fmt.Errorf("GitHub token (github.token_env): %w", err)
	}
	c, err := New(ctx, Options{APIURL: s.APIURL, Token: tok, Logger: s.Logger, CacheDir: s.CacheDir})
	if err != nil {
		return nil, fmt.Errorf("GitHub client: %w", err)
	}
	return c, nil
}

// Token returns the first of names that resolves. GITHUB_TOKEN falls back to GITHUB_CONTROL_API_KEY.
func Token(ctx context.Context, res tracker.Secrets, names []string) (string, error) {
	tried := append([]string{}, names...)
	if len(tried) == 0 || (slices.Contains(tried, "GITHUB_TOKEN") && !slices.Contains(tried, "GITHUB_CONTROL_API_KEY")) {
		tried = append(tried, "GITHUB_TOKEN", "GITHUB_CONTROL_API_KEY")
	}
	for _, n := range tried {
		v, err := res.Resolve(ctx, n)
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, secrets.ErrNotFound) {
			return "", err
		}
	}
	return "", fmt.Errorf("no GitHub token (tried %s): %w", strings.Join(tried, ", "), secrets.ErrNotFound)
}

// Doctor is `ace doctor`'s look at the tracker: the token resolves, and the API takes it (GET /user). An API that
// does not answer, or answers otherwise, is tracker.ErrUnreachable: the token may be good.
func Doctor(ctx context.Context, s tracker.Setup) (string, error) {
	tok, err := Token(ctx, s.Secrets, s.TokenEnv)
	if err != nil {
		return "", fmt.Errorf("github token: %w", err)
	}
	apiURL := s.APIURL
	if apiURL == "" {
		apiURL = defaultAPI + "/"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	unclear := func(msg string) error {
		return &tracker.Error{Op: "github", Message: msg, Kind: tracker.ErrUnreachable}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, apiURL+"user", nil)
	if err != nil {
		return "", unclear(err.Error())
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", unclear("token present; API unreachable (" + err.Error() + ")")
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return "github: token accepted by " + apiURL, nil
	case http.StatusUnauthorized:
		return "", &tracker.Error{Op: "github", Message: "the token was refused (401): check github.token_env",
			Kind: tracker.ErrUnauthorized}
	default:
		return "", unclear("GET /user answered " + resp.Status)
	}
}

// defaultAPI is GitHub's API when github.api_url is "".
const defaultAPI = "https://api.github.com"

// gitUser is the user GitHub takes a token as over git's smart HTTP.
const gitUser = "x-access-token"

// GitHost is the host GitHub serves git from, the one host ace sends its token to with a push or a fetch: the
// API's host without "api." (api.github.com: github.com; an Enterprise server's API is on its own host).
func GitHost(apiURL string) string {
	if apiURL == "" {
		return "github.com"
	}
	u, err := url.Parse(apiURL)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(strings.ToLower(u.Hostname()), "api.")
}

// GitAuth is the token as basic auth for an http(s) remote on GitHub's git host, and nothing for a remote
// elsewhere (a local tracker's, a file URL, a host an agent named), whatever named it.
func (c *Client) GitAuth(remoteURL string) (user, secret string, ok bool) {
	u, err := url.Parse(remoteURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || !strings.EqualFold(u.Hostname(), GitHost(c.o.APIURL)) {
		return "", "", false
	}
	return gitUser, c.o.Token, true
}

// Secret is the token.
func (c *Client) Secret() string { return c.o.Token }

// Endpoints are GitHub's API: a run's agent reaches it from its box (gh, scripts/codex-gh).
func (c *Client) Endpoints() []tracker.Endpoint {
	if c.o.APIURL == "" {
		return []tracker.Endpoint{{From: "GitHub's API", URL: defaultAPI}}
	}
	return []tracker.Endpoint{{From: "github.api_url", URL: c.o.APIURL}}
}
