package headless

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/secrets"
)

// SupervisorMain is the body of `ace __headless SPECFILE`: it runs one turn of a headless agent, reading its
// stream with the parser parsers have for the spec's format, and writes what happened to the spec's status file.
// Its own stdout and stderr are the run's debug log.
func SupervisorMain(parsers Parsers, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: ace __headless SPECFILE")
		return 2
	}
	// The turn lock arrives as fd 3 and must stay with the supervisor alone: an agent that inherited it would
	// keep the run "running" after its supervisor is gone.
	syscall.CloseOnExec(lockFD)
	spec, err := readSpec(args[0], parsers)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ace __headless: %v\n", err)
		return 2
	}
	self := ProcOf(os.Getpid())
	parser, _ := parsers.New(spec.Format) // readSpec checked the format
	s := &supervisor{spec: spec, parser: parser, log: capped(os.Stdout, debugCap), status: Status{
		Turn: spec.Turn, SupervisorPID: self.PID, SupervisorStart: self.Start, StartedAt: time.Now().UTC(), Outcome: OutcomeRunning,
		SessionID: spec.SessionID,
	}}
	if err := s.run(); err != nil {
		fmt.Fprintf(s.log, "ace __headless: %v\n", err)
		return 1
	}
	return 0
}

type supervisor struct {
	spec   *Spec
	log    io.Writer
	status Status
	parser Parser

	redact     *secrets.Redactor // secret values → [redacted]
	transcript *os.File
	capped     io.Writer // transcript, stopping at transcriptCap
	pending    [][]byte  // stream lines read before the session id was known
	stderr     tail
	resulted   bool // the stream reported the turn's result
}

// line is one line of the agent's stdout or stderr.
type line struct {
	b      []byte
	stderr bool
}

func (s *supervisor) run() error {
	// First of all, so that the secrets file is gone whatever happens next.
	secrets, err := readSecrets(s.spec.SecretsFile)
	if err != nil {
		return s.startFailed(err)
	}
	s.redact = redactor(secrets)
	if s.spec.SessionID != "" {
		if err := s.openTranscript(s.spec.SessionID); err != nil {
			// The stream names its session again: the transcript is opened then.
			fmt.Fprintf(s.log, "ace __headless: transcript: %v\n", err)
		}
	}
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(s.log, "ace __headless: cannot adopt the agent's orphans: %v\n", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	cmd, lines, err := s.start(secrets)
	if err != nil {
		return s.startFailed(err)
	}
	agent := ProcOf(cmd.Process.Pid)
	s.status.AgentPID, s.status.AgentStart = agent.PID, agent.Start
	if err := s.save(); err != nil {
		fmt.Fprintf(s.log, "ace __headless: status: %v\n", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	idle := time.NewTimer(s.spec.IdleTimeout)
	quiet := s.look(agent.PID) // the agent's signs of work when its output last moved (idle.go)
	turn := time.NewTimer(s.spec.TurnTimeout)
	defer idle.Stop()
	defer turn.Stop()
	var lingered <-chan time.Time // armed by the turn's result: the agent has that long to exit
	exitGrace := cmp.Or(s.spec.ExitGrace, DefaultExitGrace)
	var waitErr error
	outcome := ""
loop:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil // the streams closed; wait for the exit
				continue
			}
			s.handle(l)
			if s.resulted && lingered == nil {
				lingered = time.After(exitGrace)
			}
			quiet = s.moved(quiet, agent.PID)
			if !idle.Stop() {
				select {
				case <-idle.C:
				default:
				}
			}
			idle.Reset(s.spec.IdleTimeout)
		case <-idle.C:
			now := s.look(agent.PID)
			if why := working(quiet, now); why != "" {
				// Silent but working (a build, a test run, a slow answer through its proxy): not idle.
				fmt.Fprintf(s.log, "ace __headless: no output for %s, but %s: not idle\n", s.spec.IdleTimeout, why)
				quiet = now
				idle.Reset(s.spec.IdleTimeout)
				continue
			}
			outcome = OutcomeIdleTimeout
			fmt.Fprintf(s.log, "ace __headless: no output nor sign of work for %s: killing the agent\n", s.spec.IdleTimeout)
			break loop
		case <-lingered:
			// The turn is over by the agent's own word: ending the process loses nothing of it, where waiting
			// for monitor.exec_idle_timeout held the run for minutes and then took the turn for a failure.
			outcome = OutcomeLingered
			fmt.Fprintf(s.log, "ace __headless: the agent reported its turn's result but had not exited %s later: ending it\n", exitGrace)
			break loop
		case <-turn.C:
			outcome = OutcomeTurnTimeout
			fmt.Fprintf(s.log, "ace __headless: the turn took longer than %s: killing the agent\n", s.spec.TurnTimeout)
			break loop
		case sig := <-sigs:
			outcome = OutcomeStopped
			fmt.Fprintf(s.log, "ace __headless: %s: stopping the agent\n", sig)
			break loop
		case waitErr = <-exited:
			exited = nil
			break loop
		}
	}
	if outcome != "" {
		waitErr = s.kill(cmd.Process.Pid, exited)
	} else {
		outcome = OutcomeExited
	}
	s.killLeftovers(cmd.Process.Pid)
	s.drain(lines)
	s.finish(outcome, waitErr)
	return s.save()
}

// startFailed records a turn that never got its agent running.
func (s *supervisor) startFailed(err error) error {
	s.status.Outcome, s.status.ExitCode, s.status.Done = OutcomeStartFailed, 127, true
	s.stderr.add([]byte(err.Error()))
	s.status.StderrTail = s.stderr.String()
	return errors.Join(err, s.save())
}

// start runs the agent in its own process group with the prompt on stdin and both output streams read line by
// line into one channel.
func (s *supervisor) start(secrets map[string]string) (*exec.Cmd, <-chan line, error) {
	cmd := exec.Command(s.spec.Argv[0], s.spec.Argv[1:]...)
	cmd.Dir = s.spec.Dir
	// The environment, not argv: /proc/<pid>/environ is readable by the same user only, like the env file.
	if !s.spec.Boxed {
		cmd.Env = os.Environ()
	}
	for k, v := range s.spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range secrets {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if cmd.Env == nil {
		cmd.Env = []string{} // exactly what is added above: nil would be the supervisor's own
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, err
	}
	// *os.File outputs go straight to the child: Wait then waits for the process only, not for the pipes,
	// which a grandchild could hold open forever.
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, nil, fmt.Errorf("start %s: %w", s.spec.Argv[0], err)
	}
	go func() {
		_, _ = io.WriteString(stdin, s.spec.Prompt)
		stdin.Close()
	}()
	lines := make(chan line, 64)
	done := make(chan struct{}, 2)
	read := func(r *os.File, isErr bool) {
		defer func() { r.Close(); done <- struct{}{} }()
		if err := readLines(r, maxLine, func(b []byte) { lines <- line{b: b, stderr: isErr} }); err != nil {
			fmt.Fprintf(s.log, "ace __headless: reading the agent's output: %v\n", err)
		}
	}
	go read(outR, false)
	go read(errR, true)
	go func() { <-done; <-done; close(lines) }()
	return cmd, lines, nil
}

// handle keeps one output line: the debug log gets every line, the transcript every stdout line.
func (s *supervisor) handle(l line) {
	l.b = []byte(s.redact.Redact(string(l.b)))
	if l.stderr {
		fmt.Fprintf(s.log, "[stderr] %s\n", l.b)
		s.stderr.add(l.b)
		if sp, ok := s.parser.(StderrParser); ok {
			for _, e := range sp.ParseStderr(l.b) {
				s.event(e)
			}
		}
		return
	}
	fmt.Fprintf(s.log, "[stdout] %s\n", l.b)
	for _, e := range s.parser.Parse(l.b) {
		s.event(e)
	}
	if s.transcript == nil {
		s.pending = append(s.pending, l.b)
		if sid := s.status.SessionID; sid != "" {
			if err := s.openTranscript(sid); err != nil {
				fmt.Fprintf(s.log, "ace __headless: transcript: %v\n", err)
			}
		}
		return
	}
	s.write(l.b)
}

// event updates the status from one typed event; the status file is rewritten when the session becomes known.
func (s *supervisor) event(e Event) {
	s.status.Events++
	switch e.Kind {
	case KindAssistant, KindToolCall:
		// The model answered: whatever was retried got through.
		if s.status.Retry != nil || !s.status.Answered {
			s.status.Retry, s.status.Answered = nil, true
			s.saveOrLog()
		}
	}
	switch e.Kind {
	case KindRaw:
		s.status.Raw++
	case KindRetry:
		s.status.Retry = &Retry{Attempt: e.Attempt, Max: e.MaxAttempts, Error: Truncate(e.Text), At: time.Now().UTC()}
		s.status.Answered = false
		s.saveOrLog() // the engine reads it while the turn runs
	case KindAssistant:
		s.status.LastText = Truncate(e.Text)
	case KindResult:
		s.resulted = true
		s.status.ResultStatus, s.status.ResultError = e.Status, e.IsError
		s.status.Usage.add(e.Usage)
		if e.IsError && e.Text != "" {
			s.status.LastText = Truncate(e.Text)
		}
	case KindError:
		if e.Text != "" {
			s.stderr.add([]byte(e.Text))
		}
	case KindLimit:
		s.status.Limited = true
		if e.ResetsAt > 0 {
			s.status.LimitResetsAt = time.Unix(e.ResetsAt, 0).UTC()
		}
		if e.Text != "" {
			s.stderr.add([]byte(e.Text))
		}
	}
	// A resumed CLI may continue under a new id (claude can fork the session): the latest init wins, so that the
	// next turn resumes the conversation as it is now. The transcript keeps the file it opened.
	if e.SessionID != "" && e.SessionID != s.status.SessionID && (s.status.SessionID == "" || e.Kind == KindInit) {
		s.status.SessionID = e.SessionID
		if err := s.save(); err != nil {
			fmt.Fprintf(s.log, "ace __headless: status: %v\n", err)
		}
	}
}

// saveOrLog writes the status, or says in the debug log why it could not.
func (s *supervisor) saveOrLog() {
	if err := s.save(); err != nil {
		fmt.Fprintf(s.log, "ace __headless: status: %v\n", err)
	}
}

// kill ends the agent's process group: SIGTERM, then SIGKILL after the grace period. A boxed agent's SIGTERM
// goes to the processes inside the box instead (ace __box passes it on to the agent's group): bwrap, the group's
// leader, forwards no signal and would end the box at once.
func (s *supervisor) kill(pid int, exited <-chan error) error {
	if s.spec.Boxed {
		for _, p := range procs.Descendants(pid) {
			_ = syscall.Kill(p, syscall.SIGTERM)
		}
	} else {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
	}
	grace := s.spec.KillGrace
	if grace <= 0 {
		grace = 2 * time.Second
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-exited:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return err
	case <-t.C:
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return <-exited
}

// killLeftovers ends what the agent left running once it is gone: its process group, and every process below the
// supervisor (orphans come to it, as a subreaper, even from another session), which may hold the output pipes.
func (s *supervisor) killLeftovers(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, p := range procs.Descendants(os.Getpid()) {
		fmt.Fprintf(s.log, "ace __headless: ending process %d the agent left behind\n", p)
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	// Reap them: they are this process's children now.
	for {
		if pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); pid <= 0 || err != nil {
			return
		}
	}
}

// drain reads what is left of the output once the process group is gone. A process that left the group and
// holds the pipes open is not waited for beyond a short bound.
func (s *supervisor) drain(lines <-chan line) {
	if lines == nil {
		return
	}
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return
			}
			s.handle(l)
		case <-t.C:
			fmt.Fprintln(s.log, "ace __headless: output still open after the agent ended; not waiting for it")
			return
		}
	}
}

// finish flushes the parser and the transcript and records how the turn ended.
func (s *supervisor) finish(outcome string, waitErr error) {
	for _, e := range s.parser.Flush() {
		s.event(e)
	}
	if s.transcript == nil && len(s.pending) > 0 {
		// The stream never named its session: keep it anyway, under the orphan name.
		if s.spec.Orphan != "" {
			if err := s.openFile(s.spec.Orphan); err != nil {
				fmt.Fprintf(s.log, "ace __headless: transcript: %v\n", err)
			}
		}
	}
	if s.transcript != nil {
		if err := s.transcript.Close(); err != nil {
			fmt.Fprintf(s.log, "ace __headless: transcript: %v\n", err)
		}
	}
	s.status.Outcome, s.status.Done = outcome, true
	s.status.ExitCode = exitCode(waitErr)
	s.status.StderrTail = s.stderr.String()
	fmt.Fprintf(s.log, "ace __headless: turn %d ended: %s, exit %d\n", s.spec.Turn, outcome, s.status.ExitCode)
}

func (s *supervisor) save() error { return writeJSON(s.spec.StatusPath, s.status) }

// exitCode maps Wait's error to a shell-style code: 128+N for a signal.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}
