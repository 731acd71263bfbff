package config

import "time"

// LimitsConfig is what ace does when an agent's account hits a usage or rate limit: the run pauses (no nudge,
// no human pinged) and resumes at the reset the CLI announced, or after a backoff when it announced none.
type LimitsConfig struct {
	// Backoff is the first wait when the CLI gives no reset time; each further limit in a row doubles it, up to
	// MaxBackoff.
	Backoff    Duration `toml:"backoff"`
	MaxBackoff Duration `toml:"max_backoff"`
	// ResumeMargin is added to an announced reset: most are given to the minute, and a resume refused as early
	// pauses the run again.
	ResumeMargin Duration `toml:"resume_margin"`
	// Continue is the message that resumes the agent's conversation after the reset.
	Continue string `toml:"continue"`
}

func defaultLimits() LimitsConfig {
	return LimitsConfig{Backoff: D(time.Minute), MaxBackoff: D(time.Hour), ResumeMargin: D(30 * time.Second), Continue: "continue"}
}

func (l LimitsConfig) validate(bad func(key, format string, args ...any)) {
	for k, d := range map[string]Duration{"limits.backoff": l.Backoff, "limits.max_backoff": l.MaxBackoff} {
		if d.Duration <= 0 {
			bad(k, "must be a positive duration, is %s", d.Duration)
		}
	}
	if l.ResumeMargin.Duration < 0 {
		bad("limits.resume_margin", "must not be negative, is %s", l.ResumeMargin.Duration)
	}
	if l.Continue == "" {
		bad("limits.continue", "must not be empty")
	}
}
