package fakeagent

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// HeadlessMain is `demo-agent headless --format claude|codex|gemini --script FILE [--record FILE] [--state FILE]
// [ARGS…]`: a stand-in for `claude -p`, `codex exec --json` and `gemini -p` that reads its prompt from stdin and
// prints the chosen CLI's JSON stream. Each invocation is one turn: it runs script actions from where the last
// turn stopped (kept in --state, default FILE.state) until one ends the turn, then exits. `--resume ID` or
// `resume ID` anywhere in ARGS continues conversation ID (under a new id with --fork, as claude may); otherwise a
// new session id is made. Every invocation
// appends {"prompt", "argv", "session_id"} to --record, so tests can check what was resumed.
//
// In a turn: say, busy/sleep, write, append and sh work as in the terminal agent (tool calls in the stream);
// done and question write the protocol files and end the turn; idle and --- end it; hang stays silent until
// killed; crash CODE prints to stderr and exits with CODE; warn TEXT prints TEXT, $VARIABLES expanded, to stderr;
// linger keeps the process running silently after the turn's result until it is killed (gemini 0.61 did so once
// on a loaded machine).
func HeadlessMain(args []string) int {
	h := newHeadlessAgent(args)
	switch h.format {
	case "claude", "codex", "gemini":
	default:
		fmt.Fprintf(os.Stderr, "demo-agent headless: --format %q is not claude, codex or gemini\n", h.format)
		return 2
	}
	prompt, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo-agent headless: read the prompt: %v\n", err)
		return 2
	}
	h.prompt = string(prompt)
	return h.run()
}

type headlessAgent struct {
	format, script, record, state string
	argv                          []string
	out                           io.Writer
	prompt, session               string
	fork                          bool // a new session id even when resuming
	linger                        bool // stay after the result until killed
	items, outTokens              int
	started                       time.Time
}

// newHeadlessAgent reads the command line of the headless and live agents; what it does not know it leaves to
// the CLI being played (its flags pass unread).
func newHeadlessAgent(args []string) *headlessAgent {
	h := &headlessAgent{argv: args, out: os.Stdout}
	for i := 0; i < len(args); i++ {
		val := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch args[i] {
		case "--format":
			h.format = val()
		case "--script":
			h.script = val()
		case "--record":
			h.record = val()
		case "--state":
			h.state = val()
		case "--resume", "resume", "--session-id":
			h.session = val()
		case "--fork":
			h.fork = true
		}
	}
	if h.state == "" && h.script != "" {
		h.state = h.script + ".state"
	}
	return h
}

func (h *headlessAgent) run() int {
	h.started = time.Now()
	if h.session == "" || h.fork {
		h.session = newSessionID()
	}
	h.recordTurn()
	script, err := h.loadScript()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	code, _ := h.turn(script, sigs)
	return code
}

func (h *headlessAgent) loadScript() ([]action, error) {
	if h.script == "" {
		return nil, nil
	}
	return parseScript(h.script)
}

// turn runs the script from where the last turn stopped until an action ends the turn, printing the stream;
// exit says the process ends with code (a scripted crash, a signal).
func (h *headlessAgent) turn(script []action, sigs chan os.Signal) (code int, exit bool) {
	h.emitInit()
	pc := h.loadPC()
	if pc >= len(script) {
		h.say("ok")
	}
	for pc < len(script) {
		act := script[pc]
		pc++
		h.savePC(pc)
		code, exit, end := h.do(act, sigs)
		if exit {
			return code, true
		}
		if end {
			break
		}
	}
	h.emitResult()
	if h.linger {
		<-sigs
		return 143, false
	}
	return 0, false
}

// do performs one action like the terminal agent's do, printing stream events instead of a screen.
func (h *headlessAgent) do(act action, sigs chan os.Signal) (code int, exit, end bool) {
	switch act.verb {
	case "---", "idle":
		return 0, false, true
	case "say", "ask", "approve":
		h.say(act.arg)
	case "busy", "sleep":
		d, _ := time.ParseDuration(act.arg)
		select {
		case <-time.After(d):
		case <-sigs:
			return 143, true, true
		}
	case "write", "append":
		path, text, _ := strings.Cut(act.arg, " ")
		flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if act.verb == "append" {
			flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		out, isErr := "ok", false
		if err := writeFile(path, unescape(text), flags); err != nil {
			out, isErr = err.Error(), true
		}
		h.tool("write", map[string]string{"file_path": path, "content": unescape(text)}, out, isErr)
	case "sh":
		out, signalled, err := runShell(act.arg, sigs)
		if signalled {
			return 143, true, true
		}
		h.tool("shell", map[string]string{"command": act.arg}, string(out), err != nil)
	case "done":
		if err := writeFile(filepath.Join(".ace", "DONE"), act.arg+"\n", os.O_CREATE|os.O_WRONLY|os.O_TRUNC); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		h.say("Done: " + act.arg)
		return 0, false, true
	case "question":
		if err := writeFile(filepath.Join(".ace", "QUESTION"), act.arg+"\n", os.O_CREATE|os.O_WRONLY|os.O_TRUNC); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		h.say("I need a decision: " + act.arg)
		return 0, false, true
	case "warn":
		fmt.Fprintln(os.Stderr, os.ExpandEnv(act.arg))
	case "stall":
		fmt.Fprintln(os.Stderr, unescape(act.arg))
		<-sigs
		return 143, true, true
	case "linger":
		h.linger = true
	case "hang":
		// Silent: no output at all until killed, like a CLI stuck on a network call.
		<-sigs
		return 143, true, true
	case "crash":
		c, _ := strconv.Atoi(act.arg)
		if c == 0 {
			c = 1
		}
		fmt.Fprintf(os.Stderr, "fatal: scripted crash (exit %d)\n", c)
		return c, true, true
	}
	return 0, false, false
}

// emit prints one stream line; like the real (Node) CLIs it leaves <, > and & unescaped.
func (h *headlessAgent) emit(v any) {
	enc := json.NewEncoder(h.out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func (h *headlessAgent) emitInit() {
	switch h.format {
	case "claude":
		wd, _ := os.Getwd()
		h.emit(map[string]any{"type": "system", "subtype": "init", "session_id": h.session, "model": "fake-model", "cwd": wd})
	case "codex":
		h.emit(map[string]any{"type": "thread.started", "thread_id": h.session})
		h.emit(map[string]any{"type": "turn.started"})
	case "gemini":
		h.emit(map[string]any{"type": "init", "session_id": h.session, "model": "fake-model"})
		h.emit(map[string]any{"type": "message", "role": "user", "content": h.prompt})
	}
}

func (h *headlessAgent) say(text string) {
	h.outTokens += len(strings.Fields(text))
	h.items++
	switch h.format {
	case "claude":
		h.emit(map[string]any{"type": "assistant", "session_id": h.session,
			"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}}})
	case "codex":
		h.emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": h.itemID(), "type": "agent_message", "text": text}})
	case "gemini":
		// Gemini streams assistant text in pieces: send it as two deltas.
		half := len(text) / 2
		for half > 0 && half < len(text) && (text[half]&0xC0) == 0x80 {
			half--
		}
		for _, part := range []string{text[:half], text[half:]} {
			h.emit(map[string]any{"type": "message", "role": "assistant", "content": part, "delta": true})
		}
	}
}

func (h *headlessAgent) tool(name string, input map[string]string, output string, isErr bool) {
	h.items++
	id := h.itemID()
	switch h.format {
	case "claude":
		tool := map[string]string{"shell": "Bash", "write": "Write"}[name]
		h.emit(map[string]any{"type": "assistant", "session_id": h.session, "message": map[string]any{"role": "assistant",
			"content": []any{map[string]any{"type": "tool_use", "id": id, "name": tool, "input": input}}}})
		h.emit(map[string]any{"type": "user", "session_id": h.session, "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": output, "is_error": isErr}}}})
	case "codex":
		if name == "write" {
			h.emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": id, "type": "file_change",
				"status": "completed", "changes": []any{map[string]string{"path": input["file_path"], "kind": "add"}}}})
			return
		}
		code, status := 0, "completed"
		if isErr {
			code, status = 1, "failed"
		}
		h.emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": id, "type": "command_execution",
			"command": input["command"], "aggregated_output": output, "exit_code": code, "status": status}})
	case "gemini":
		tool := map[string]string{"shell": "run_shell_command", "write": "write_file"}[name]
		status := "success"
		if isErr {
			status = "error"
		}
		h.emit(map[string]any{"type": "tool_use", "tool_name": tool, "tool_id": id, "parameters": input})
		h.emit(map[string]any{"type": "tool_result", "tool_id": id, "status": status, "output": output})
	}
}

func (h *headlessAgent) emitResult() {
	in := len(strings.Fields(h.prompt))
	ms := time.Since(h.started).Milliseconds()
	switch h.format {
	case "claude":
		h.emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "num_turns": 1,
			"session_id": h.session, "result": "turn complete", "duration_ms": ms,
			"usage": map[string]int{"input_tokens": in, "output_tokens": h.outTokens}})
	case "codex":
		h.emit(map[string]any{"type": "turn.completed", "usage": map[string]int{"input_tokens": in,
			"cached_input_tokens": 0, "output_tokens": h.outTokens}})
	case "gemini":
		h.emit(map[string]any{"type": "result", "status": "success",
			"stats": map[string]any{"input_tokens": in, "output_tokens": h.outTokens, "duration_ms": ms}})
	}
}

func (h *headlessAgent) itemID() string { return "item_" + strconv.Itoa(h.items) }

func (h *headlessAgent) recordTurn() {
	if h.record == "" {
		return
	}
	f, err := os.OpenFile(h.record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer f.Close()
	b, _ := json.Marshal(map[string]any{"prompt": h.prompt, "argv": h.argv, "session_id": h.session})
	_, _ = f.Write(append(b, '\n'))
}

func (h *headlessAgent) loadPC() int {
	b, err := os.ReadFile(h.state)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// savePC is written before each action, so that a turn killed mid-action resumes after it, as a real agent's
// conversation would.
func (h *headlessAgent) savePC(pc int) {
	if h.state != "" {
		_ = os.WriteFile(h.state, []byte(strconv.Itoa(pc)), 0o644)
	}
}

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	s := hex.EncodeToString(b)
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}
