package wrap

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
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
			}
		case op == OpWrap:
			c.Action = "wrapped"
			sp = append(sp, e.wrapSplices(o.Self, o.Dir)...)
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
// edited contents, each through a temporary file that is fsynced, read back
// and renamed. It refuses when the file changed since Plan read it (a client
// rewriting its config meanwhile), so nothing the client wrote is lost. It
// returns the backup's path.
//
// TODO(safefile): internal/safefile (h20a) is the shared helper for this;
// writeSafely is a local stand-in until it lands in main.
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
	if err := writeSafely(backup, r.Before, r.mode, r.Target); err != nil {
		return "", fmt.Errorf("cannot write the backup: %w", err)
	}
	if err := writeSafely(r.Target, r.After, r.mode, r.Target); err != nil {
		return backup, err
	}
	return backup, nil
}

// writeSafely writes data to path through a temporary file in the same
// directory: written, fsynced, read back and compared, then renamed over
// path, and the directory fsynced. On any failure path is untouched. The
// file gets perm and, when rpctap runs as root, the owner of like (so that
// editing a user's config with sudo leaves it theirs).
func writeSafely(path string, data []byte, perm fs.FileMode, like string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	sameOwner(f, like)
	if err := f.Sync(); err != nil {
		return err
	}
	back := make([]byte, len(data)+1)
	n, _ := f.ReadAt(back, 0)
	if n != len(data) || !bytes.Equal(back[:n], data) {
		return fmt.Errorf("%s: read back %d bytes that differ from the %d written", tmp, n, len(data))
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
