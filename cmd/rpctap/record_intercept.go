package main

import (
	"fmt"
	"sync"

	"github.com/rpctap/rpctap/internal/ctlsock"
	"github.com/rpctap/rpctap/internal/intercept"
	"github.com/rpctap/rpctap/internal/rewrite"
	"github.com/rpctap/rpctap/tap"
)

// checkIntercept checks the --intercept flags.
func (o *recordOptions) checkIntercept() error {
	for _, text := range o.Rewrite {
		r, err := rewrite.Parse(text)
		if err != nil {
			return Usagef("record: --rewrite: %v", err)
		}
		o.rewrites = append(o.rewrites, r)
	}
	if len(o.rewrites) > 0 {
		if o.Listen != "" {
			return Usagef("record: --rewrite is for stdio recordings")
		}
	}
	if !o.Intercept {
		if o.InterceptTimeout != 0 || len(o.Break) > 0 {
			return Usagef("record: --intercept-timeout and --break need --intercept")
		}
		return nil
	}
	if o.Listen != "" {
		return Usagef("record: --intercept is for stdio recordings")
	}
	if o.InterceptTimeout < 0 {
		return Usagef("record: --intercept-timeout must not be negative")
	}
	return nil
}

// interceptRun is the intercepting side of one `rpctap record --intercept`.
type interceptRun struct {
	ln  *ctlsock.Listener
	s   *intercept.Session
	srv *intercept.Server
	cmd *tap.Cmd
	mu  sync.Mutex
}

// startIntercept opens the control socket and says where it is on stderr
// (always: a user needs the path to attach, whatever stderr is).
func startIntercept(o *recordOptions, stdio Stdio) (*interceptRun, error) {
	if !o.Intercept && len(o.rewrites) == 0 && len(o.faults) == 0 {
		return nil, nil
	}
	ic := &interceptRun{}
	s, err := intercept.New(intercept.Options{
		Timeout:  o.InterceptTimeout,
		Protocol: o.Protocol,
		Note: func(e tap.Event) {
			if ic.cmd != nil {
				ic.cmd.Note(e)
			}
		},
		Rewrite: o.rewrites,
		Faults:  rewrite.NewFaults(o.faults),
		Faulted: func(msg string) {
			ic.mu.Lock()
			fmt.Fprintf(stdio.Err, "rpctap record: fault injected: %s\n", msg)
			ic.mu.Unlock()
		},
		Kill: func() {
			if ic.cmd != nil && ic.cmd.Process != nil {
				ic.cmd.Process.Kill()
			}
		},
		Tell: func(msg string) {
			ic.mu.Lock()
			fmt.Fprintf(stdio.Err, "rpctap: intercept: %s\n", msg)
			ic.mu.Unlock()
		},
	})
	if err != nil {
		return nil, Usagef("record: --protocol: %v", err)
	}
	for _, b := range o.Break {
		if _, err := s.Break(b, 0); err != nil {
			return nil, Usagef("record: --break %q: %v", b, err)
		}
	}
	ic.s = s
	if !o.Intercept {
		return ic, nil // --rewrite or --fault alone: the intercepting path, no control socket
	}
	ln, err := ctlsock.Listen("")
	if err != nil {
		return nil, err
	}
	ln.Refused = func(uid int, err error) {
		ic.mu.Lock()
		fmt.Fprintf(stdio.Err, "rpctap: intercept: refused a control connection (uid %d): %v\n", uid, err)
		ic.mu.Unlock()
	}
	ic.ln, ic.s = ln, s
	ic.srv = intercept.Serve(s, ln)
	fmt.Fprintf(stdio.Err, "rpctap: control socket: %s\n", ln.Path())
	return ic, nil
}

// install puts the session in c's forwarding path.
func (ic *interceptRun) install(c *tap.Cmd) {
	ic.cmd = c
	c.Intercept = ic.s
}

func (ic *interceptRun) close() {
	ic.s.Release()
	if ic.srv != nil {
		ic.srv.Close()
	}
}
