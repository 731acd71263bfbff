package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// ServeConfig is `ace serve` (and `ace poll --addr`): the dashboard, JSON API and GitHub webhooks.
type ServeConfig struct {
	// Addr is where the server listens. Anything but a loopback address needs TokenEnv.
	Addr string `toml:"addr"`
	// TokenEnv names the environment variable holding the API token ("" = no token: loopback only).
	TokenEnv string `toml:"token_env"`
	// WebhookSecretEnv names the environment variable holding GitHub's webhook secret ("" = webhooks refused).
	WebhookSecretEnv string `toml:"webhook_secret_env"`
	// MaxBodyBytes bounds a request body (webhook payloads included).
	MaxBodyBytes int64 `toml:"max_body_bytes"`
}

// NotifyConfig is one [[notify]] receiver of run events.
type NotifyConfig struct {
	// Kind is "webhook" (JSON), "slack" (incoming webhook) or "ntfy".
	Kind string `toml:"kind"`
	// URL is the receiver; URLEnv names an environment variable holding it instead (a Slack URL is a secret).
	URL    string `toml:"url"`
	URLEnv string `toml:"url_env"`
	// Events are the kinds sent (NotifyEvents); empty = all.
	Events []string `toml:"events"`
}

// NotifyEvents are the run events a [[notify]] receiver may ask for.
var NotifyEvents = []string{"needs-input", "failed", "pr-opened", "pr-merged", "paused"}

// NotifyKinds are the receivers ace knows how to talk to.
var NotifyKinds = []string{"webhook", "slack", "ntfy"}

// IsLoopback reports whether addr (host:port) listens on the loopback interface only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *Config) validateServe(bad func(key, format string, args ...any)) {
	s := c.Serve
	if _, port, err := net.SplitHostPort(s.Addr); err != nil || port == "" {
		bad("serve.addr", "%q is not host:port (like \"127.0.0.1:7777\")", s.Addr)
	} else if !IsLoopback(s.Addr) && s.TokenEnv == "" {
		bad("serve.token_env", "empty, but serve.addr %q is not a loopback address: name the environment variable holding the API token", s.Addr)
	}
	if s.MaxBodyBytes < 1024 {
		bad("serve.max_body_bytes", "must be at least 1024 bytes, is %d", s.MaxBodyBytes)
	}
	for i, n := range c.Notify {
		key := fmt.Sprintf("notify[%d]", i)
		if !slices.Contains(NotifyKinds, n.Kind) {
			bad(key+".kind", "%q is not one of %s", n.Kind, strings.Join(NotifyKinds, ", "))
		}
		switch {
		case n.URL == "" && n.URLEnv == "":
			bad(key+".url", "empty (set url, or url_env naming the variable that holds it)")
		case n.URL != "" && n.URLEnv != "":
			bad(key+".url", "set url or url_env, not both")
		case n.URL != "":
			if u, err := url.Parse(n.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(key+".url", "%q is not an http(s) URL", n.URL)
			}
		}
		for j, ev := range n.Events {
			if !slices.Contains(NotifyEvents, ev) {
				bad(fmt.Sprintf("%s.events[%d]", key, j), "%q is not one of %s", ev, strings.Join(NotifyEvents, ", "))
			}
		}
	}
}
