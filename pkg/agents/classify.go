package agents

import "strings"

// bottomLines is how much of the screen dialogs and prompts are looked for in: older text scrolled up (a
// question that was answered, a finished turn) must not decide the state.
const bottomLines = 15

func bottom(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	if len(lines) > bottomLines {
		lines = lines[len(lines)-bottomLines:]
	}
	return strings.Join(lines, "\n")
}

// Classify reads a state from the screen and the pane: a dead pane is exited (status 0) or crashed; then
// dialogs, approvals and questions near the bottom; then busy; then ready; else starting.
func (p Profile) Classify(screen string, paneDead bool, exitStatus int) State {
	if paneDead {
		if exitStatus == 0 {
			return StateExited
		}
		return StateCrashed
	}
	b := bottom(screen)
	m := p.Markers
	if m.Starting != nil && m.Starting.MatchString(b) {
		return StateStarting
	}
	for _, d := range p.Dialogs {
		if !d.Permission && d.Match != nil && d.Match.MatchString(b) {
			return StateDialog
		}
	}
	switch {
	case m.Approval != nil && m.Approval.MatchString(b):
		return StateApproval
	case m.Question != nil && m.Question.MatchString(b):
		return StateQuestion
	case m.Busy != nil && m.Busy.MatchString(b):
		return StateBusy
	case m.Ready != nil && m.Ready.MatchString(b):
		return StateReady
	}
	return StateStarting
}

// IsReady reports whether the composer takes input.
func (p Profile) IsReady(screen string) bool { return p.Classify(screen, false, 0) == StateReady }

// IsBusy reports whether the agent is working.
func (p Profile) IsBusy(screen string) bool { return p.Classify(screen, false, 0) == StateBusy }

// DialogResponse returns the keys that answer a dialog on screen: first-run dialogs always, permission
// dialogs only when the profile auto-approves.
func (p Profile) DialogResponse(screen string) (keys []string, name string, ok bool) {
	b := bottom(screen)
	if p.Markers.Starting != nil && p.Markers.Starting.MatchString(b) {
		return nil, "", false
	}
	for _, d := range p.Dialogs {
		if d.Match == nil || !d.Match.MatchString(b) {
			continue
		}
		if d.Permission && !p.AutoApprove {
			continue
		}
		return d.Keys, d.Name, true
	}
	return nil, "", false
}
