package service

import (
	"fmt"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
)

// Profile resolves an agent name to its profile: the built-in one (claude, codex, gemini, fake) with the
// configuration's [agents.<name>] laid over it, or a custom agent defined by configuration alone.
func (s *Service) Profile(name string) (agents.Profile, error) {
	return Profile(s.Config, name)
}

// Profile is Service.Profile without a service.
func Profile(cfg *config.Config, name string) (agents.Profile, error) {
	ac, _ := cfg.AgentConfigFor(name)
	o := agents.Override{
		Command:        ac.Command,
		Model:          ac.Model,
		Home:           ac.Home,
		Nudge:          ac.Nudge,
		CompactCommand: ac.CompactCommand,
		Headless:       ac.Headless,
		HeadlessResume: ac.HeadlessResume,
		HeadlessFormat: ac.HeadlessFormat,
		Runner:         ac.Runner,
		Env:            ac.Env,
		Secrets:        ac.Secrets,
		Markers: agents.MarkerOverride{
			Ready: ac.Markers.Ready, Busy: ac.Markers.Busy, Approval: ac.Markers.Approval,
			Question: ac.Markers.Question, Dialog: ac.Markers.Dialog,
		},
	}
	if ac.AutoApprove {
		yes := true
		o.AutoApprove = &yes
	}
	p, err := agents.Resolve(name, o)
	if err != nil {
		return agents.Profile{}, fmt.Errorf("agents.%s: %w", name, err)
	}
	return p, nil
}
