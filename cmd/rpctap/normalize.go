package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/portable"
	"github.com/spf13/pflag"
)

type normalizeOptions struct {
	Home string
	Tmp  string
}

func init() {
	register(&command{
		Name:    "normalize",
		Summary: "make a cassette portable: this machine's paths, session ids, UUIDs, times and pids become placeholders",
		Usage:   "normalize [flags] IN OUT",
		Long: `Writes OUT, a copy of the cassette IN in which the values that belong to the
run are replaced with named placeholders: the session's working directory
(${RPCTAP_CWD}, from IN's header), $HOME (${RPCTAP_HOME}), the temporary
directory (${RPCTAP_TMP}), session ids (${RPCTAP_SESSION_1}, ...), UUIDs,
timestamps and process ids. The same value always gets the same name. OUT's
header lists the placeholders. replay and verify fill them in with the live
values, so a cassette recorded on one machine replays on another.
rpctap record --portable does the same while recording. OUT may be IN (it is
replaced through a temporary file). See docs/replay.md.`,
		Example: `  rpctap normalize session.cassette session.portable.cassette
  rpctap normalize --home /Users/ann old.cassette old.cassette`,
		Flags: func(fs *pflag.FlagSet) func([]string, Stdio) error {
			o := &normalizeOptions{}
			fs.StringVar(&o.Home, "home", "", "the recording machine's home `DIR` (default: guessed from the recorded cwd, else this machine's)")
			fs.StringVar(&o.Tmp, "tmp", "/tmp", "the recording machine's temporary `DIR`")
			return func(args []string, stdio Stdio) error {
				if len(args) != 2 {
					return Usagef("normalize needs IN and OUT (got %d arguments)", len(args))
				}
				return runNormalize(args[0], args[1], o, stdio)
			}
		},
	})
}

func runNormalize(in, out string, o *normalizeOptions, stdio Stdio) error {
	recs, damage, err := readAllRecords(in)
	if err != nil {
		return Inputf("normalize: %v", err)
	}
	if len(damage) > 0 && sameFile(in, out) {
		// Replacing a damaged original with a copy of what could be read
		// would lose the damaged records for good (another tool, or a
		// later rpctap, may read more of them).
		for _, d := range damage {
			fmt.Fprintf(stdio.Err, "rpctap normalize: %s: %v\n", in, d)
		}
		return Inputf("normalize: %s is damaged: not replacing it with a copy of its readable records; write the copy to another OUT", in)
	}
	h := *recs[0].Header
	if h.Portable != nil {
		return Inputf("normalize: %s is portable already", in)
	}
	ctx := portable.Context{Cwd: h.Cwd, Home: o.Home, Tmp: o.Tmp}
	if ctx.Home == "" {
		ctx.Home = guessHome(h.Cwd)
	}
	n := portable.NewNormalizer(ctx)
	changed := 0
	for i := 1; i < len(recs); i++ {
		r := &recs[i]
		switch r.K {
		case cassette.KindFrame:
			if r.JSON != nil {
				if b, ok := n.Frame(r.JSON); ok {
					r.SetPayload(b)
					r.Redacted, changed = true, changed+1
				}
				continue
			}
			fallthrough
		case cassette.KindStderr:
			p := string(r.Payload())
			if s := n.String(p, ""); s != p {
				r.SetPayload([]byte(s))
				r.Redacted, changed = true, changed+1
			}
		case cassette.KindEvent:
			if r.Cwd != "" {
				r.Cwd = n.String(r.Cwd, "")
			}
			for j, a := range r.Argv {
				r.Argv[j] = n.String(a, "")
			}
		}
	}
	h = portableHeader(h, ctx)
	for _, ph := range n.Used() {
		if _, ok := h.Portable[ph]; !ok {
			h.Portable[ph] = familyOf(ph)
		}
	}
	recs[0].Header = &h
	if err := writeCassetteFile(out, recs); err != nil {
		return writeFailed("normalize", err)
	}
	warnCut(stdio.Err, "normalize", in, out, recs, damage)
	fmt.Fprintf(stdio.Err, "rpctap normalize: %d of %d records changed, %d placeholders (%s); wrote %s\n",
		changed, len(recs)-1, len(n.Used()), strings.Join(n.Used(), " "), out)
	return damageExit("normalize", in, damage, stdio.Err)
}

// runContext is this machine's context for a recording made in cwd.
func runContext(cwd string) portable.Context {
	home, _ := os.UserHomeDir()
	return portable.Context{Cwd: cwd, Home: home, Tmp: strings.TrimRight(os.TempDir(), "/")}
}

// portableHeader returns h with its cwd, argv and the table of placeholder
// families made portable for a run with context c.
func portableHeader(h cassette.Header, c portable.Context) cassette.Header {
	n := portable.NewNormalizer(c)
	h.Portable = map[string]string{}
	for k, v := range portable.Kinds {
		h.Portable[k] = v
	}
	if h.Cwd != "" {
		h.Cwd = n.String(h.Cwd, "")
	}
	argv := make([]string, len(h.Argv))
	for i, a := range h.Argv {
		argv[i] = n.String(a, "")
	}
	h.Argv = argv
	return h
}

// familyOf describes a numbered placeholder by its family's entry.
func familyOf(ph string) string {
	for k, v := range portable.Kinds {
		if i := strings.Index(k, "_n}"); i > 0 && strings.HasPrefix(ph, k[:i+1]) {
			return v
		}
	}
	return "a value of the recorded run"
}

// guessHome takes /home/NAME or /Users/NAME from the front of cwd, else
// this machine's home when it is a prefix of cwd.
func guessHome(cwd string) string {
	parts := strings.Split(filepath.Clean(cwd), "/")
	if len(parts) >= 3 && (parts[1] == "home" || parts[1] == "Users") {
		return "/" + parts[1] + "/" + parts[2]
	}
	if home, err := os.UserHomeDir(); err == nil && strings.HasPrefix(cwd, home+"/") {
		return home
	}
	return ""
}
