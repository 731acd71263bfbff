package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aceworks/ace/pkg/egress"
)

// Sandbox modes.
const (
	// SandboxAuto boxes each agent where boxes work here, and runs it unboxed elsewhere, with one warning event
	// per run saying why and what to install.
	SandboxAuto = "auto"
	// SandboxOn boxes each agent, and fails a run whose box cannot be built.
	SandboxOn = "on"
	// SandboxOff runs agents on the host, as the user.
	SandboxOff = "off"
)

// SandboxConfig is the box each agent process runs in ([sandbox]; per agent [agents.<name>.sandbox]; per
// repository [repos."owner/name".sandbox] in ace.toml only). Lists add up from the global table to the agent's
// and the repository's; the most specific mode set wins (repository, then agent, then global).
type SandboxConfig struct {
	// Mode is "auto", "on" or "off"; "" in an agent's or a repository's table keeps the one above.
	Mode string `toml:"mode"`
	// ReadOnly are further host paths the box sees read-only: toolchains, package caches ("~/" is the home).
	ReadOnly []string `toml:"read_only"`
	// Allow are the network destinations the box's proxy lets out besides the built-in ones (egress.ParseAllow:
	// "host", "*.domain", "host:port").
	Allow []string `toml:"allow"`
	// Forward are loopback ports of the host the box reaches at the same port of its own loopback (a local model
	// server, say), through the proxy like any other connection.
	Forward []int `toml:"forward"`
}

// SandboxFor is the sandbox of agent's runs on repo: the global table, then the agent's, then the repository's.
func (c *Config) SandboxFor(agent, repo string) SandboxConfig {
	out := SandboxConfig{Mode: c.Sandbox.Mode}
	for _, s := range []SandboxConfig{c.Sandbox, c.Agents[agent].Sandbox, c.Repos[repo].Sandbox} {
		if s.Mode != "" {
			out.Mode = s.Mode
		}
		out.ReadOnly = appendNew(out.ReadOnly, s.ReadOnly...)
		out.Allow = appendNew(out.Allow, s.Allow...)
		out.Forward = appendNew(out.Forward, s.Forward...)
	}
	if out.Mode == "" {
		out.Mode = SandboxAuto
	}
	return out
}

func appendNew[T comparable](list []T, add ...T) []T {
	for _, v := range add {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// validate checks one sandbox table; key is its dotted name ("sandbox", "agents.claude.sandbox"); inherit says
// whether an empty mode means the table above's.
func (s SandboxConfig) validate(key string, inherit bool, bad func(key, format string, args ...any)) {
	switch s.Mode {
	case SandboxAuto, SandboxOn, SandboxOff:
	case "":
		if !inherit {
			bad(key+".mode", "empty (\"auto\", \"on\" or \"off\")")
		}
	default:
		bad(key+".mode", "%q is not \"auto\", \"on\" or \"off\"", s.Mode)
	}
	for i, p := range s.ReadOnly {
		if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~/") || filepath.Clean(p) == "/" {
			bad(fmt.Sprintf("%s.read_only[%d]", key, i), "%q must be an absolute path (or start with ~/), not the root", p)
		}
	}
	for i, a := range s.Allow {
		if _, err := egress.ParseAllow([]string{a}); err != nil {
			bad(fmt.Sprintf("%s.allow[%d]", key, i), "%v", err)
		}
	}
	for i, p := range s.Forward {
		switch {
		case p <= 0 || p > 65535:
			bad(fmt.Sprintf("%s.forward[%d]", key, i), "%d is not a port (1-65535)", p)
		case p < 1024:
			// Listening there takes CAP_NET_BIND_SERVICE in the box's network, which no process of a box holds.
			bad(fmt.Sprintf("%s.forward[%d]", key, i), "port %d is below 1024, which a box cannot listen on: run the "+
				"server on a port from 1024 up, or name it by this machine's hostname (the proxy reaches it)", p)
		}
	}
}

// validateSandboxes checks [sandbox] and the agents' and repositories' sandbox tables.
func (c *Config) validateSandboxes(bad func(key, format string, args ...any)) {
	c.Sandbox.validate("sandbox", false, bad)
	for _, n := range slices.Sorted(maps.Keys(c.Agents)) {
		c.Agents[n].Sandbox.validate("agents."+n+".sandbox", true, bad)
	}
	for _, n := range slices.Sorted(maps.Keys(c.Repos)) {
		c.Repos[n].Sandbox.validate(fmt.Sprintf("repos.%q.sandbox", n), true, bad)
	}
}

// expandSandboxHomes turns "~/" in every read_only list into the home directory.
func (c *Config) expandSandboxHomes(getenv func(string) string) {
	expand := func(s *SandboxConfig) {
		for i, p := range s.ReadOnly {
			s.ReadOnly[i] = expandHome(strings.TrimSpace(p), getenv)
		}
	}
	expand(&c.Sandbox)
	for n, a := range c.Agents {
		expand(&a.Sandbox)
		c.Agents[n] = a
	}
	for n, r := range c.Repos {
		expand(&r.Sandbox)
		c.Repos[n] = r
	}
}
