package replay

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/rpctap/rpctap/internal/portable"
	"github.com/rpctap/rpctap/protocol"
)

// Portable cassettes (rpctap record --portable, rpctap normalize) hold
// placeholders such as ${RPCTAP_CWD} or ${RPCTAP_SESSION_1} instead of one
// run's values. Replay fills them in:
//   - the fixed ones with this run's values as soon as the first recorded
//     frame with a placeholder is met: the working directory, $HOME and the
//     temporary directory of the rpctap process (a parent starts its fake
//     child in its own cwd; verify starts the real child in its own), and
//     its pid (the fake child is this process; verify is the parent);
//   - the numbered ones with what the live side said at the same place (a
//     session id the real child made up, a path the live parent sent),
//     learnt when a live frame matches a recorded one, like the bindings of
//     ignored fields;
//   - any still unknown when a frame is sent, with a fresh value of the
//     same kind (a new UUID, the time now, a new session id), kept for the
//     rest of the replay.
// Matching treats a placeholder as "one or more characters" (portable.Match).

// portableNumbers returns, for a portable cassette whose header lists a
// family of numbers (portable.NumberKeys: a process id, an epoch time), the
// members holding them as invented numbers: the number stays in the frame
// (its JSON type kept), compares as "a number", and is learnt by field. A
// process id no live frame gave is this process's, as ${RPCTAP_PID} is.
func portableNumbers(table map[string]string) []protocol.Invented {
	var out []protocol.Invented
	for key, family := range portable.NumberKeys {
		if _, ok := table[family]; ok {
			out = append(out, protocol.Invented{Path: "/**/" + key, Name: family})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// seedPortable binds the fixed placeholders once.
func (e *engine) seedPortable() {
	if e.portableSeeded {
		return
	}
	e.portableSeeded = true
	if cwd, err := os.Getwd(); err == nil {
		e.bindPlaceholder(portable.Cwd, cwd)
	}
	if home, err := os.UserHomeDir(); err == nil {
		e.bindPlaceholder(portable.Home, home)
	}
	e.bindPlaceholder(portable.Tmp, strings.TrimRight(os.TempDir(), "/"))
	e.bindPlaceholder(portable.PID, fmt.Sprint(os.Getpid()))
}

func (e *engine) bindPlaceholder(ph, v string) {
	if _, ok := e.binds[ph]; ok {
		return
	}
	e.binds[ph] = v
	e.reorderBinds()
}

// reorderBinds keeps e.border, the keys of e.binds, longest first.
func (e *engine) reorderBinds() {
	e.border = e.border[:0]
	for k := range e.binds {
		e.border = append(e.border, k)
	}
	sort.Slice(e.border, func(a, b int) bool {
		if len(e.border[a]) != len(e.border[b]) {
			return len(e.border[a]) > len(e.border[b])
		}
		return e.border[a] < e.border[b]
	})
}

// fillPortable fills the placeholders of a frame about to be sent.
func (e *engine) fillPortable(raw []byte) []byte {
	if !bytes.Contains(raw, []byte(portable.Prefix)) {
		return raw
	}
	e.seedPortable()
	for _, ph := range portable.Names(raw) {
		if _, ok := e.binds[ph]; !ok {
			e.bindPlaceholder(ph, freshValue(ph))
		}
	}
	return portable.Fill(portable.FillNumbers(raw, e.binds), e.binds)
}

// learnPortable binds the placeholders of a recorded frame to what the
// live frame that matched it says at the same places.
func (e *engine) learnPortable(rec *Frame, live any) {
	if !bytes.Contains(rec.Raw, []byte(portable.Prefix)) || live == nil {
		return
	}
	e.seedPortable()
	before := len(e.binds)
	bindPlaceholders(e.value(rec), live, e.binds)
	if len(e.binds) != before {
		e.reorderBinds()
	}
}

// bindPlaceholders walks a recorded value and the live one side by side.
// A binding already made is kept: the first live value wins.
func bindPlaceholders(rec, live any, binds map[string]string) {
	switch r := rec.(type) {
	case string:
		if !portable.HasPlaceholder(r) {
			return
		}
		switch l := live.(type) {
		case string:
			got := map[string]string{}
			if portable.Match(r, l, got) {
				for k, v := range got {
					if _, ok := binds[k]; !ok {
						binds[k] = v
					}
				}
			}
		case json.Number:
			if _, ok := binds[r]; !ok && portable.IsPlaceholder(r) {
				binds[r] = string(l)
			}
		}
	case map[string]any:
		if l, ok := live.(map[string]any); ok {
			for k, v := range r {
				bindPlaceholders(v, l[k], binds)
			}
		}
	case []any:
		if l, ok := live.([]any); ok {
			for i := range r {
				if i < len(l) {
					bindPlaceholders(r[i], l[i], binds)
				}
			}
		}
	}
}

// freshValue makes up a value for a placeholder no live frame named.
func freshValue(ph string) string {
	var b [16]byte
	rand.Read(b[:])
	switch {
	case strings.HasPrefix(ph, "${RPCTAP_UUID_"):
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	case strings.HasPrefix(ph, "${RPCTAP_TIME_"):
		return time.Now().UTC().Format(time.RFC3339Nano)
	case strings.HasPrefix(ph, "${RPCTAP_SESSION_"):
		return fmt.Sprintf("sess_%x", b[:12])
	}
	return fmt.Sprintf("%x", b[:8])
}
