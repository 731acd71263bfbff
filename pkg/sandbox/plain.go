package sandbox

import (
	"errors"
	"maps"
)

// Plain returns argv run in a box of its own without ace's first process: no proxy, no network, no recorder —
// bubblewrap's own reaper holds argv, which ends with the box. It is for ace's own short commands on what an
// agent wrote (git on its working copy): whatever such a command is made to run stays in there, seeing the
// system read-only, s.WorkDir and s.ReadWrite read-write, s.ReadOnly, and nothing else. s.Home may be empty
// (HOME is then s.Env's, or the box's own /tmp).
func (h *Host) Plain(s Spec, argv []string) (*Box, error) {
	if len(argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	if s.WorkDir == "" {
		return nil, errors.New("sandbox: a box needs a working directory")
	}
	if s.ProxySocket != "" || s.ReportSocket != "" || len(s.Forward) > 0 {
		return nil, errors.New("sandbox: a plain box has no network and records nothing")
	}
	if s.Home == "" {
		s.Env = maps.Clone(s.Env)
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		if _, ok := s.Env["HOME"]; !ok {
			s.Env["HOME"] = "/tmp"
		}
	}
	env, _, err := s.environ()
	if err != nil {
		return nil, err
	}
	args, err := h.bwrapArgs(s, "", argv)
	if err != nil {
		return nil, err
	}
	return &Box{Argv: append([]string{h.bwrap}, args...), Env: env}, nil
}
