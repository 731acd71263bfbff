package service

import (
	"fmt"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
)

// Profile resolves an agent name to its profile: the built-in one (claude, codex, gemini, fake) with the
// configuration's [agents.<name>] laid over it, or a custom agent defined by configuration alone. Profiles are
// resolved once per name: the configuration does not change while ace runs, and a profile's markers are
// regexes that would otherwise be compiled again on every monitor tick of every run.
func (s *Service) Profile(name string) (agents.Profile, error) {
	s.profilesMu.Lock()
	defer s.profilesMu.Unlock()
	if p, ok := s.profiles[name]; ok {
		return p, nil
	}
	p, err := Profile(s.Config, name)
	if err != nil {
		return agents.Profile{}, err
	}
	if s.profiles == nil {
		s.profiles = map[string]agents.Profile{}
	}
	s.profiles[name] = p
	return p, nil
}

// Profile is Service.Profile without a service.
func Profile(cfg *config.Config, name string) (agents.Profile, error) {
	ac, _ := cfg.AgentConfigFor(name)
	p, err := agents.Resolve(name, ac.Override)
	if err != nil {
		return agents.Profile{}, fmt.Errorf("agents.%s: %w", name, err)
	}
	return p, nil
}
