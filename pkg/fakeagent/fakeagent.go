// Package fakeagent is a scripted stand-in for a coding-agent TUI (claude, codex, gemini) used by tests, by
// `ace demo` and by benchmarks. It behaves like one in tmux: raw terminal, bracketed paste, a banner and a
// splash that swallows early input, an optional trust dialog, an idle composer with a ready marker, a busy
// marker while working, and scripted turns.
//
// Script format: one action per line; blank lines and lines starting with # are ignored. Each submitted prompt
// runs actions in order until one that ends the turn (idle, done, question, ask, hang, crash, or a line ---):
//
//	say TEXT            print TEXT
//	busy DUR, sleep DUR show the busy marker for DUR ("500ms", "2s")
//	write PATH TEXT     write TEXT (\n, \t and \\ escapes) to PATH, relative to the working directory
//	append PATH TEXT    append TEXT to PATH
//	sh COMMAND          run COMMAND with /bin/sh -c; its output is printed
//	done TEXT           write TEXT to .ace/DONE; ends the turn
//	question TEXT       write TEXT to .ace/QUESTION; ends the turn
//	ask TEXT            show an on-screen question (a numbered list, "Enter to select"); waits for a key or text
//	approve TEXT        show a permission dialog ("Do you want to proceed?"); 1/y continues, 2/n/Esc ends the turn
//	notice TEXT         show a notice ("Enter to continue"); Enter continues the turn
//	choose TEXT         show a permission as claude 2.1.332 asks one its check could not judge: options without
//	                    numbers, "No" first and preselected; the arrow keys move, Enter picks; No ends the turn
//	slow DUR            the next notice or choice stays drawn DUR after its answer (a CLI slow to redraw)
//	idle                do nothing; ends the turn
//	hang [N%]           stay busy forever, ignoring input; with N%, redraw the busy line ten times a second at N % of
//	                    a core's CPU (gemini 0.61's "Thinking..." costs 11 %)
//	stall TEXT          draw TEXT (\n escapes) where the composer was, as a dialog no CLI drew before, and then
//	                    nothing: not busy, every key ignored, until killed (headless: TEXT on stderr, then silence)
//	crash CODE          exit with CODE at once
//	warn TEXT           print TEXT to stderr with $VARIABLES expanded (headless only)
//	linger              once the turn's result is printed, do not exit until killed (headless only)
//
// When the script is used up, each further prompt is answered "ok". Every submitted prompt is appended to
// --record as one JSON line {"prompt": "…"}, byte-exact; a prompt typed while a turn was still running (which
// a driver should never do) is marked "during_turn": true. With --sessions each working directory's
// conversation is kept, and --continue goes on with it (conversation.go): records then say how many prompts
// came before ("history").
//
// `demo-agent headless` (headless.go) plays the CLIs' one-turn JSON streams for the exec runner, and
// `demo-agent live` (live.go) claude's stream-json protocol for the live runner.
package fakeagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
)

type options struct {
	script        string
	record        string
	splash        time.Duration
	trust         bool
	swallowEnters int
	lostEnters    time.Duration
	pasteLag      time.Duration
	tick          time.Duration
	readyMarker   string
	status        string
	sessions      string
	cont          bool
	startWork     time.Duration
}

// Main runs the fake agent with command-line args and returns its exit code.
func Main(args []string) int {
	if len(args) > 0 && args[0] == "headless" {
		return HeadlessMain(args[1:])
	}
	if len(args) > 0 && args[0] == "live" {
		return LiveMain(args[1:])
	}
	var o options
	fs := flag.NewFlagSet("fake-agent", flag.ContinueOnError)
	fs.StringVar(&o.script, "script", "", "script `file`")
	fs.StringVar(&o.record, "record", "", "append each submitted prompt to this JSONL `file`")
	fs.DurationVar(&o.splash, "splash", 0, "show a splash screen that discards input for this long")
	fs.BoolVar(&o.trust, "trust", false, "ask \"Trust this folder?\" first")
	fs.IntVar(&o.swallowEnters, "swallow-enters", 0, "ignore the first N Enters after each paste")
	fs.DurationVar(&o.lostEnters, "lost-enters", 0, "an Enter within this long of a paste clears the composer for a moment, then the text comes back unsent (gemini 0.61)")
	fs.DurationVar(&o.pasteLag, "paste-lag", 0, "show a paste only after this long; an Enter meanwhile is a newline in it (claude 2.1 on a loaded machine)")
	fs.DurationVar(&o.tick, "tick", 0, "print a line this often")
	fs.StringVar(&o.readyMarker, "ready-marker", "› Ask fake-agent anything", "composer placeholder when idle")
	fs.StringVar(&o.status, "status-line", "? for shortcuts", "status line when idle")
	fs.StringVar(&o.sessions, "sessions", "", "keep each working directory's conversation under this `dir`")
	fs.BoolVar(&o.cont, "continue", false, "go on with the working directory's last conversation (--sessions)")
	fs.DurationVar(&o.startWork, "start-work", 0, "work this much CPU time before drawing anything (gemini 0.61's start, slow on a loaded machine)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var actions []action
	if o.script != "" {
		var err error
		if actions, err = parseScript(o.script); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	a := &agent{o: o, script: actions, out: os.Stdout}
	return a.run()
}

type action struct {
	verb, arg string
	line      int
}

func parseScript(path string) ([]action, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []action
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		verb, arg, _ := strings.Cut(l, " ")
		switch verb {
		case "say", "busy", "sleep", "write", "append", "sh", "done", "question", "ask", "approve", "notice", "choose", "slow", "idle", "hang", "stall", "linger", "crash", "warn", "---":
		default:
			return nil, fmt.Errorf("%s:%d: unknown action %q", path, n, verb)
		}
		out = append(out, action{verb: verb, arg: strings.TrimSpace(arg), line: n})
	}
	return out, sc.Err()
}

// input is what the terminal sent: a paste, a key, or a submitted Enter.
type input struct {
	paste string
	key   byte
	arrow byte // 'A' up, 'B' down
	enter bool
	at    time.Time // when it was read from the terminal
}

type agent struct {
	o      options
	script []action
	pc     int
	out    io.Writer

	lines    []string
	composer string
	busy     bool
	dialog   []string
	swallow  int
	// slow is how long the next notice or choice stays drawn after its answer (the action slow).
	slow   time.Duration
	inputs chan input
	// pastedAt is when the composer's text arrived, turnEnded when the last turn ended: text that arrived
	// before the end of the turn was typed while the agent was busy.
	pastedAt  time.Time
	turnEnded time.Time
	// lagged is a paste not shown yet (--paste-lag), lagDone fires when it is.
	lagged  string
	lagDone <-chan time.Time
	// conv is the conversation kept under --sessions; nil without it.
	conv *conversation
}

func (a *agent) run() int {
	workUntil(a.o.startWork) // drawing nothing meanwhile
	fd := int(os.Stdin.Fd())
	if term.IsTerminal(fd) {
		old, err := term.MakeRaw(fd)
		if err == nil {
			defer term.Restore(fd, old)
		}
	}
	fmt.Fprint(a.out, "\x1b[?2004h") // bracketed paste on
	defer fmt.Fprint(a.out, "\x1b[?2004l")
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	a.inputs = make(chan input, 64)
	go a.readInput(os.Stdin)

	a.say("fake-agent 1.0 — a scripted stand-in for a coding agent")
	a.say("cwd: " + mustGetwd())
	if a.o.sessions != "" {
		conv, err := openConversation(a.o.sessions, mustGetwd(), a.o.cont)
		if err != nil {
			a.say("sessions: " + err.Error())
			return 1
		}
		a.conv, a.pc = conv, min(conv.PC, len(a.script))
		if a.o.cont {
			a.say(fmt.Sprintf("continuing the conversation: %d earlier prompts", conv.History))
		}
	}
	if a.o.splash > 0 {
		a.drawSplash()
		end := time.After(a.o.splash)
	splash:
		for {
			select {
			case <-end:
				break splash
			case <-a.inputs: // lost, as real CLIs lose what is pasted into their splash
			case <-sigs:
				return 0
			}
		}
	}
	if a.o.trust {
		a.dialog = []string{"Trust this folder?", "› 1. Trust and continue", "  2. Exit", "Enter to confirm"}
		a.draw()
		for in := range a.inputs {
			if in.enter || in.key == '1' {
				break
			}
			if in.key == '2' {
				return 1
			}
		}
		a.dialog = nil
	}
	a.draw()
	var tick <-chan time.Time
	if a.o.tick > 0 {
		t := time.NewTicker(a.o.tick)
		defer t.Stop()
		tick = t.C
	}
	n := 0
	for {
		select {
		case <-sigs:
			return 0
		case <-tick:
			n++
			a.say(fmt.Sprintf("tick %d", n))
			a.draw()
		case <-a.lagDone:
			a.lagDone = nil
			a.handle(input{paste: a.lagged, at: time.Now()}, sigs)
			a.lagged = ""
		case in := <-a.inputs:
			if a.lagging(in) {
				break
			}
			if code, exit := a.handle(in, sigs); exit {
				return code
			}
		}
	}
}

func mustGetwd() string {
	wd, _ := os.Getwd()
	return wd
}

// lagging holds a paste back for --paste-lag, with the Enters that arrive meanwhile as newlines in it, and
// says whether it took the input.
func (a *agent) lagging(in input) bool {
	switch {
	case a.o.pasteLag <= 0:
		return false
	case in.paste != "" && a.lagDone == nil:
		a.lagDone = time.After(a.o.pasteLag)
		a.lagged = in.paste
	case a.lagDone != nil && in.paste != "":
		a.lagged += in.paste
	case a.lagDone != nil && in.enter:
		a.lagged += "\n"
	default:
		return false
	}
	return true
}

// handle applies one input at the idle composer.
func (a *agent) handle(in input, sigs chan os.Signal) (int, bool) {
	switch {
	case in.paste != "":
		if a.composer == "" {
			a.pastedAt = in.at
		}
		a.composer += in.paste
		a.swallow = a.o.swallowEnters
	case in.enter:
		if a.swallow > 0 {
			a.swallow--
			return 0, false
		}
		prompt := a.composer
		if strings.TrimSpace(prompt) == "" {
			return 0, false
		}
		a.composer = ""
		if in.at.Sub(a.pastedAt) < a.o.lostEnters {
			a.draw() // taken, to look at
			time.Sleep(300 * time.Millisecond)
			a.composer = prompt
			break
		}
		if strings.TrimSpace(prompt) == "/exit" {
			return 0, true
		}
		a.record(prompt, in.at.Before(a.turnEnded) || a.pastedAt.Before(a.turnEnded))
		a.say("› " + firstLine(prompt))
		code, exit := a.turn(sigs)
		if a.conv != nil {
			a.conv.turn(prompt, a.pc)
		}
		return code, exit
	case in.key == 0x7f && a.composer != "":
		a.composer = a.composer[:len(a.composer)-1]
	case in.key == 0x03:
		return 130, true
	case in.key >= 0x20 && in.key < 0x7f:
		a.composer += string(in.key)
	}
	a.draw()
	return 0, false
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 100 {
		l = l[:100] + "…"
	}
	return l
}

func (a *agent) record(prompt string, duringTurn bool) {
	if a.o.record == "" {
		return
	}
	f, err := os.OpenFile(a.o.record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		a.say("record: " + err.Error())
		return
	}
	defer f.Close()
	rec := map[string]any{"prompt": prompt}
	if a.conv != nil {
		rec["history"] = a.conv.History // the prompts before this one in the conversation
	}
	if duringTurn {
		rec["during_turn"] = true
	}
	b, _ := json.Marshal(rec)
	f.Write(append(b, '\n'))
}

// turn runs script actions until one ends the turn.
func (a *agent) turn(sigs chan os.Signal) (int, bool) {
	start := time.Now()
	defer func() {
		a.busy = false
		a.turnEnded = time.Now()
		a.say(fmt.Sprintf("Worked for %s", time.Since(start).Round(time.Second)))
		a.draw()
	}()
	a.busy = true
	a.draw()
	if a.pc >= len(a.script) {
		a.say("ok")
		return 0, false
	}
	for a.pc < len(a.script) {
		act := a.script[a.pc]
		a.pc++
		code, exit, end := a.do(act, sigs)
		if exit || end {
			return code, exit
		}
	}
	return 0, false
}

// do performs one action: exit says to quit the program with code, end that the turn is over.
func (a *agent) do(act action, sigs chan os.Signal) (code int, exit, end bool) {
	switch act.verb {
	case "---", "idle":
		return 0, false, true
	case "say":
		a.say(act.arg)
	case "busy", "sleep":
		d, err := time.ParseDuration(act.arg)
		if err != nil {
			a.say("bad duration " + act.arg)
			break
		}
		a.draw()
		select {
		case <-time.After(d):
		case <-sigs:
			return 0, true, true
		}
	case "write", "append":
		path, text, _ := strings.Cut(act.arg, " ")
		flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if act.verb == "append" {
			flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		if err := writeFile(path, unescape(text), flags); err != nil {
			a.say("error: " + err.Error())
		} else {
			a.say("Wrote " + path)
		}
	case "sh":
		out, signalled, err := runShell(act.arg, sigs)
		if signalled {
			return 143, true, true
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				a.say("  " + l)
			}
		}
		if err != nil {
			a.say("  (" + err.Error() + ")")
		}
	case "done":
		if err := writeFile(filepath.Join(".ace", "DONE"), act.arg+"\n", os.O_CREATE|os.O_WRONLY|os.O_TRUNC); err != nil {
			a.say("error: " + err.Error())
		}
		a.say("Done: " + act.arg)
		return 0, false, true
	case "question":
		if err := writeFile(filepath.Join(".ace", "QUESTION"), act.arg+"\n", os.O_CREATE|os.O_WRONLY|os.O_TRUNC); err != nil {
			a.say("error: " + err.Error())
		}
		a.say("Question for a human: " + act.arg)
		return 0, false, true
	case "ask":
		a.busy = false
		a.dialog = []string{act.arg, "❯ 1. Yes", "  2. No", "  3. Type something", "Enter to select · ↑/↓ to navigate · Esc to cancel"}
		a.draw()
		answer := a.waitDialog(sigs, func(in input) (string, bool) {
			switch {
			case in.paste != "":
				return strings.TrimSpace(in.paste), true
			case in.enter:
				return "1", true
			case in.key >= '1' && in.key <= '9':
				return string(in.key), true
			case in.key == 0x1b:
				return "cancelled", true
			}
			return "", false
		})
		a.dialog = nil
		a.record("answer: "+answer, false)
		a.say("Answer: " + answer)
		return 0, false, true
	case "approve":
		a.busy = false
		a.dialog = []string{act.arg, "Do you want to proceed?", "❯ 1. Yes", "  2. No, and tell me what to do differently (esc)"}
		a.draw()
		answer := a.waitDialog(sigs, func(in input) (string, bool) {
			switch in.key {
			case '1', 'y':
				return "yes", true
			case '2', 'n', 0x1b:
				return "no", true
			}
			if in.enter {
				return "yes", true
			}
			return "", false
		})
		a.dialog = nil
		a.busy = true
		a.say("Permission: " + answer)
		if answer != "yes" {
			return 0, false, true
		}
	case "notice":
		// A notice the agent shows mid-turn and leaves on Enter (claude 2.1.331's auto-mode notice at its first
		// tool call; 2.1.332's "Auto mode can't check actions" in a later turn).
		a.busy = false
		a.dialog = []string{act.arg, "Enter to continue · Esc to cancel"}
		a.draw()
		// Only an Enter pressed on the notice passes it: one typed before (the prompt's second Enter) went to
		// the composer, as in a real CLI.
		drawn := time.Now()
		a.waitDialog(sigs, func(in input) (string, bool) { return "", in.enter && in.at.After(drawn) })
		a.lagRedraw()
		a.dialog = nil
		a.busy = true
		a.say("Noted: " + act.arg)
	case "slow":
		a.slow, _ = time.ParseDuration(act.arg)
	case "choose":
		a.busy = false
		options, at := []string{"No", "Yes"}, 0
		drawChoice := func() {
			a.dialog = []string{act.arg, "Do you want to proceed?"}
			for i, o := range options {
				cursor := "  "
				if i == at {
					cursor = "❯ "
				}
				a.dialog = append(a.dialog, cursor+o)
			}
			a.dialog = append(a.dialog, "Esc to cancel · Tab to amend")
			a.draw()
		}
		drawChoice()
		answer := a.waitDialog(sigs, func(in input) (string, bool) {
			switch {
			case in.arrow == 'A' && at > 0:
				at--
				drawChoice()
			case in.arrow == 'B' && at < len(options)-1:
				at++
				drawChoice()
			case in.enter:
				return strings.ToLower(options[at]), true
			case in.key == 0x1b:
				return "no", true
			}
			return "", false
		})
		a.lagRedraw()
		a.dialog = nil
		a.busy = true
		a.say("Permission: " + answer)
		if answer != "yes" {
			a.say("Interrupted · What should the agent do instead?")
			return 0, false, true
		}
	case "hang":
		a.draw()
		share, _ := strconv.ParseFloat(strings.TrimSuffix(act.arg, "%"), 64)
		for tick := time.Tick(100 * time.Millisecond); share > 0; {
			select {
			case <-sigs:
				return 0, true, true
			case <-tick:
				workUntil(cpuTime() + time.Duration(share/100*float64(100*time.Millisecond)))
				a.draw()
			}
		}
		<-sigs
		return 0, true, true
	case "stall":
		a.busy = false
		a.dialog = strings.Split(unescape(act.arg), "\n")
		a.draw()
		go func() {
			for range a.inputs { // read and drop: a dialog that takes no key ace could send
			}
		}()
		<-sigs
		return 0, true, true
	case "crash":
		code, _ := strconv.Atoi(act.arg)
		if code == 0 {
			code = 1
		}
		fmt.Fprintf(a.out, "\r\nfatal: scripted crash (exit %d)\r\n", code)
		return code, true, true
	}
	a.draw()
	return 0, false, false
}

// lagRedraw keeps the answered dialog on screen for the time the action slow asked, once.
func (a *agent) lagRedraw() {
	time.Sleep(a.slow)
	a.slow = 0
}

func (a *agent) waitDialog(sigs chan os.Signal, accept func(input) (string, bool)) string {
	for {
		select {
		case <-sigs:
			return "cancelled"
		case in := <-a.inputs:
			if s, ok := accept(in); ok {
				return s
			}
		}
	}
}

func writeFile(path, text string, flags int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func unescape(s string) string {
	r := strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\t`, "\t")
	return r.Replace(s)
}

// runShell runs command with /bin/sh -c and returns its output. A signal meanwhile (a stop, a hangup: tmux
// kill-server) is passed on to the command, which has a few seconds to end (a trap saving its work), and reported,
// as a CLI ends its tool and itself: a fake agent that waited for its command instead outlived its session and went
// on with its script.
func runShell(command string, sigs <-chan os.Signal) (out []byte, signalled bool, err error) {
	var buf bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return nil, false, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
		return buf.Bytes(), false, err
	case sig := <-sigs:
		_ = cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return buf.Bytes(), true, nil
	}
}

// workUntil works until this process has used cpu of CPU time: the wall time it takes is many times more on a
// loaded machine than on an idle core.
func workUntil(cpu time.Duration) {
	for n := 0; cpuTime() < cpu; n++ {
		for i := 0; i < 1e6; i++ {
			n ^= i
		}
	}
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
