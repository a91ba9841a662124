package wrap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rpctap/rpctap/internal/safefile"
)

// Op is what an edit does.
type Op int

const (
	OpWrap Op = iota
	OpUnwrap
)

// Options are the inputs of an edit.
type Options struct {
	Self string   // rpctap's absolute path, written as the command
	Dir  string   // the cassette directory, written after --dir
	Only []string // entry names to edit; all when empty
	// Deep adds record's --deep to ACP agent entries (Zed's agent_servers),
	// so that the MCP servers each agent is given in a session are recorded
	// too, as linked cassettes (docs/deep.md). MCP entries are unaffected.
	Deep bool
}

// Change is what an edit did (or would do) to one entry.
type Change struct {
	Entry  Entry
	Action string // "wrapped", "unwrapped", "already wrapped", "not wrapped", "left alone"
	Note   string // why it was left alone, or that it was wrapped by hand
}

// Result is an edit of one file, planned and not yet written.
type Result struct {
	Spec    Spec
	Target  string // the file written: Spec.Path with symlinks resolved
	Before  []byte
	After   []byte
	Changes []Change
	mode    fs.FileMode
}

// Changed reports whether the edit changes the file.
func (r *Result) Changed() bool { return !bytes.Equal(r.Before, r.After) }

// Plan reads the file of spec and works out the edit; it writes nothing.
func Plan(spec Spec, op Op, o Options) (*Result, error) {
	target, err := filepath.EvalSymlinks(spec.Path)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(target)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", spec.Path)
	}
	src, err := os.ReadFile(target)
	if err != nil {
		return nil, err
	}
	r, err := PlanBytes(spec, src, op, o)
	if err != nil {
		return nil, err
	}
	r.Target, r.mode = target, st.Mode().Perm()
	return r, nil
}

// PlanBytes is Plan on the contents of a file.
func PlanBytes(spec Spec, src []byte, op Op, o Options) (*Result, error) {
	entries, err := spec.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", spec.Path, err)
	}
	r := &Result{Spec: spec, Before: src}
	var sp []splice
	for _, e := range entries {
		if !selected(e.Name, o.Only) {
			continue
		}
		c := Change{Entry: e}
		switch {
		case e.Skip != "":
			c.Action, c.Note = "left alone", e.Skip
		case op == OpWrap && e.Wrapped != nil:
			c.Action = "already wrapped"
			if e.Wrapped.ByHand {
				c.Note = "by hand"
			} else if o.Deep && e.ACP() && !e.Wrapped.Deep() {
				c.Note = "without --deep: unwrap it first to wrap it with --deep"
			}
		case op == OpWrap:
			c.Action = "wrapped"
			sp = append(sp, e.wrapSplices(o.Self, o.Dir, o.Deep && e.ACP())...)
		case e.Wrapped == nil:
			c.Action = "not wrapped"
		case len(e.Wrapped.Inner) == 0:
			c.Action, c.Note = "left alone", "rpctap record in socket mode: there is no child command to give back"
		default:
			c.Action = "unwrapped"
			if e.Wrapped.ByHand {
				c.Note = "it was wrapped by hand"
			}
			sp = append(sp, e.unwrapSplices(src)...)
		}
		r.Changes = append(r.Changes, c)
	}
	r.After = apply(src, sp)
	// The edit must leave a file the same parser reads, with the entries
	// in the state asked for; anything else is a bug, and the file is not
	// written.
	again, err := spec.Parse(r.After)
	if err != nil {
		return nil, fmt.Errorf("%s: the edited file does not parse (%v); nothing written", spec.Path, err)
	}
	for _, e := range again {
		if !selected(e.Name, o.Only) || e.Skip != "" || (e.Wrapped != nil && len(e.Wrapped.Inner) == 0) {
			continue
		}
		if (op == OpWrap) != (e.Wrapped != nil) {
			return nil, fmt.Errorf("%s: entry %q did not come out %s; nothing written", spec.Path, e.Name, map[Op]string{OpWrap: "wrapped", OpUnwrap: "unwrapped"}[op])
		}
	}
	return r, nil
}

func selected(name string, only []string) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if o == name {
			return true
		}
	}
	return false
}

// Write writes the backup of the target's current contents, then the
// edited contents, each through internal/safefile (a temporary file beside
// the target, synced, read back and compared, renamed; the target untouched
// on any failure). It refuses when the file changed since Plan read it (a
// client rewriting its config meanwhile), so nothing the client wrote is
// lost. Both files keep the config's mode and, when rpctap runs as root
// (sudo), its owner. It returns the backup's path.
func (r *Result) Write(now time.Time) (backup string, err error) {
	cur, err := os.ReadFile(r.Target)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(cur, r.Before) {
		return "", fmt.Errorf("%s changed while rpctap was editing it; nothing written, run again", r.Spec.Path)
	}
	backup = r.Target + ".rpctap-" + now.UTC().Format("20060102T150405Z") + ".bak"
	for i := 2; ; i++ {
		if _, err := os.Lstat(backup); errors.Is(err, fs.ErrNotExist) {
			break
		}
		backup = fmt.Sprintf("%s.rpctap-%s-%d.bak", r.Target, now.UTC().Format("20060102T150405Z"), i)
	}
	owner := ownerOf(r.Target)
	if err := writeSafely(backup, r.Before, r.mode); err != nil {
		return "", fmt.Errorf("cannot write the backup: %w", err)
	}
	owner.apply(backup)
	if err := writeSafely(r.Target, r.After, r.mode); err != nil {
		return backup, err
	}
	owner.apply(r.Target)
	return backup, nil
}

// writeSafely writes data to path through safefile, reading the temporary
// file back and comparing it before it is renamed.
func writeSafely(path string, data []byte, perm fs.FileMode) error {
	return safefile.Write(path, safefile.Options{Perm: perm, Verify: func(tmp string) error {
		back, err := os.ReadFile(tmp)
		if err != nil {
			return err
		}
		if !bytes.Equal(back, data) {
			return fmt.Errorf("%s read back %d bytes that differ from the %d written", tmp, len(back), len(data))
		}
		return nil
	}}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
