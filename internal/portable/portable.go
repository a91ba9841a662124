// Package portable makes cassettes replayable on another machine: it
// replaces the values that belong to one run — the session's working
// directory, $HOME, the temporary directory, session ids, UUIDs, timestamps
// and process ids — with named placeholders such as ${RPCTAP_CWD} or
// ${RPCTAP_SESSION_1}, and fills them in again with the live values when a
// cassette is replayed or verified.
//
// Placeholders are plain text inside JSON strings, so a portable cassette is
// still valid JSON lines and `zstdcat | jq` still works. A number stays a
// number (each JSON value keeps its type): a process id or an epoch
// timestamp is a placeholder by its member's name (NumberKeys), which the
// header's table of placeholders (Kinds) names; replay learns the live
// value by field. The same original value always gets the same
// placeholder within a cassette, so a session id that appears in a response
// and in every later request stays one name.
//
// The package is pure (no I/O): callers pass the context (cwd, home, temp
// directory) in.
package portable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Prefix starts every placeholder; a string without it has none.
const Prefix = "${RPCTAP_"

// The fixed placeholders; the numbered families are SESSION_n, UUID_n, TIME_n.
const (
	Cwd  = "${RPCTAP_CWD}"
	Home = "${RPCTAP_HOME}"
	Tmp  = "${RPCTAP_TMP}"
	PID  = "${RPCTAP_PID}"
)

// Kinds describes each placeholder family for the cassette header's table.
var Kinds = map[string]string{
	Cwd:                   "the session's working directory",
	Home:                  "the user's home directory",
	Tmp:                   "the temporary directory",
	PID:                   "a process id: the number under processId or pid (kept in the frame)",
	"${RPCTAP_SESSION_n}": "a session id (sessionId, session_id)",
	"${RPCTAP_UUID_n}":    "a UUID",
	"${RPCTAP_TIME_n}":    "a timestamp: RFC 3339 in a string, or the number under a timestamp key (kept in the frame)",
}

// NumberKeys are the members whose number is a placeholder of the family
// named, on a cassette whose header lists that family: the number stays in
// the frame (a string in its place would change the JSON type a peer
// checks), and replay compares it as "a number" and learns the live one by
// field.
var NumberKeys = map[string]string{
	"processId": PID, "pid": PID,
	"timestamp": "${RPCTAP_TIME_n}", "timestamp_ms": "${RPCTAP_TIME_n}",
	"createdAt": "${RPCTAP_TIME_n}", "updatedAt": "${RPCTAP_TIME_n}",
}

// Context is what one run's values were.
type Context struct {
	Cwd  string // the session's working directory
	Home string // $HOME
	Tmp  string // the temporary directory (os.TempDir)
}

// Normalizer replaces one run's values in the frames of a session. It keeps
// the numbering across frames; it is not safe for concurrent use.
type Normalizer struct {
	paths  []pathRule         // longest first
	seen   map[string]string  // original value -> placeholder
	counts map[string]int     // family -> last number used
	used   map[string]bool    // placeholders written
	cache  map[string]*string // string content -> normalized (nil: unchanged)
}

type pathRule struct{ from, to string }

// NewNormalizer returns a Normalizer for a run with the given context.
// Empty or root ("/") directories are not replaced.
func NewNormalizer(c Context) *Normalizer {
	n := &Normalizer{seen: map[string]string{}, counts: map[string]int{}, used: map[string]bool{}, cache: map[string]*string{}}
	for _, p := range []pathRule{{c.Cwd, Cwd}, {c.Home, Home}, {c.Tmp, Tmp}} {
		p.from = strings.TrimRight(p.from, "/")
		if len(p.from) > 1 {
			n.paths = append(n.paths, p)
		}
	}
	sort.SliceStable(n.paths, func(i, j int) bool { return len(n.paths[i].from) > len(n.paths[j].from) })
	return n
}

// Used lists the placeholders written so far, sorted.
func (n *Normalizer) Used() []string {
	out := make([]string, 0, len(n.used))
	for p := range n.used {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

var (
	uuidRe = lazyRegexp(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	timeRe = lazyRegexp(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})`)
)

// sessionKeys are the members whose string value is a session id (ACP and
// opi sessionId, synaps and brainwires session_id).
var sessionKeys = map[string]bool{"sessionId": true, "session_id": true, "sessionID": true}

func (n *Normalizer) next(family string) string {
	n.counts[family]++
	return fmt.Sprintf("${RPCTAP_%s_%d}", family, n.counts[family])
}

// name returns the placeholder for original (numbered in family), reusing
// the one given before.
func (n *Normalizer) name(original, family string) string {
	if p, ok := n.seen[original]; ok {
		return p
	}
	p := n.next(family)
	n.seen[original] = p
	n.cache = map[string]*string{} // a new known value changes later results
	return p
}

// String returns s with this run's values replaced. key is the member name
// s is the value of ("" inside arrays and at the top).
func (n *Normalizer) String(s, key string) string {
	if sessionKeys[key] && s != "" && !strings.HasPrefix(s, Prefix) {
		p := n.name(s, "SESSION")
		n.used[p] = true
		return p
	}
	if c, ok := n.cache[s]; ok {
		if c == nil {
			return s
		}
		n.markUsed(*c)
		return *c
	}
	out := s
	// Values named before (a session id quoted in a text or a path).
	for orig, p := range n.seen {
		if len(orig) >= 6 && strings.Contains(out, orig) {
			out = strings.ReplaceAll(out, orig, p)
		}
	}
	for _, r := range n.paths {
		out = replacePath(out, r.from, r.to)
	}
	out = uuidRe().ReplaceAllStringFunc(out, func(u string) string { return n.name(strings.ToLower(u), "UUID") })
	out = timeRe().ReplaceAllStringFunc(out, func(t string) string { return n.name(t, "TIME") })
	if out == s {
		n.cache[s] = nil
		return s
	}
	n.cache[s] = &out
	n.markUsed(out)
	return out
}

func (n *Normalizer) markUsed(s string) {
	for i := strings.Index(s, Prefix); i >= 0; {
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return
		}
		n.used[s[i:i+j+1]] = true
		k := strings.Index(s[i+j+1:], Prefix)
		if k < 0 {
			return
		}
		i += j + 1 + k
	}
}

// replacePath replaces dir in s where it stands as a whole path prefix: at
// the start of s or after a separator a path can follow ("file://", a
// space, "=", a quote), and followed by "/" or the end.
func replacePath(s, dir, to string) string {
	if !strings.Contains(s, dir) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, dir)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(dir)
		before := i == 0 || strings.ContainsRune("/ =:\"'(\t,;", rune(s[i-1])) && (i < 2 || s[i-1] != '/' || s[i-2] == '/' || s[i-2] == ':')
		after := end == len(s) || s[end] == '/' || s[end] == '"' || s[end] == ' ' || s[end] == '\'' || s[end] == ')' || s[end] == ':' || s[end] == '\n'
		b.WriteString(s[:i])
		if before && after {
			b.WriteString(to)
		} else {
			b.WriteString(dir)
		}
		s = s[end:]
	}
}

// Frame returns frame (one valid JSON text) with this run's values replaced,
// and whether anything changed. Everything else is kept byte for byte: only
// the string tokens that change are rewritten; numbers stay (NumberKeys).
func (n *Normalizer) Frame(frame []byte) ([]byte, bool) {
	var out []byte
	last := 0 // frame[last:] not copied yet
	key := ""
	for i := 0; i < len(frame); {
		c := frame[i]
		switch {
		case c == '"':
			end := stringEnd(frame, i)
			if end < 0 {
				return frame, false // not JSON after all: leave it alone
			}
			tok := frame[i:end]
			j := skipWS(frame, end)
			if j < len(frame) && frame[j] == ':' {
				key = unquote(tok)
				i = end
				continue
			}
			s := unquote(tok)
			if ns := n.String(s, key); ns != s {
				out = append(append(out, frame[last:i]...), quote(ns)...)
				last = end
			}
			i, key = end, ""
		case c == '-' || (c >= '0' && c <= '9'):
			end := i + 1
			for end < len(frame) && strings.IndexByte("0123456789.eE+-", frame[end]) >= 0 {
				end++
			}
			if NumberKeys[key] == PID {
				n.used[PID] = true // the number stays (NumberKeys)
			}
			i, key = end, ""
		case c == '{' || c == '[' || c == ',':
			key = ""
			i++
		default:
			i++
		}
	}
	if out == nil {
		return frame, false
	}
	return append(out, frame[last:]...), true
}

func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func unquote(tok []byte) string {
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return string(tok[1 : len(tok)-1])
	}
	return s
}

func quote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Names lists the placeholders in b, each once, in order of appearance.
func Names(b []byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range phRe().FindAll(b, -1) {
		if !seen[string(m)] {
			seen[string(m)] = true
			out = append(out, string(m))
		}
	}
	return out
}

// IsPlaceholder reports whether s is exactly one placeholder.
func IsPlaceholder(s string) bool {
	loc := phRe().FindStringIndex(s)
	return loc != nil && loc[0] == 0 && loc[1] == len(s)
}

// HasPlaceholder reports whether s holds a placeholder.
func HasPlaceholder(s string) bool { return strings.Contains(s, Prefix) }

// Match reports whether live fits recorded, a string that may hold
// placeholders (each stands for one or more characters; the same
// placeholder twice must stand for the same text), and adds what each
// placeholder stood for to binds.
func Match(recorded, live string, binds map[string]string) bool {
	if !HasPlaceholder(recorded) {
		return recorded == live
	}
	names, re := pattern(recorded)
	m := re.FindStringSubmatch(live)
	if m == nil {
		return false
	}
	got := map[string]string{}
	for i, name := range names {
		v := m[i+1]
		if prev, ok := got[name]; ok && prev != v {
			return false
		}
		got[name] = v
	}
	for k, v := range got {
		if binds != nil {
			binds[k] = v
		}
	}
	return true
}

var patterns = map[string]struct {
	names []string
	re    *regexp.Regexp
}{}

var phRe = lazyRegexp(`\$\{RPCTAP_[A-Z]+(_[0-9]+)?\}`)

func pattern(s string) ([]string, *regexp.Regexp) {
	if p, ok := patterns[s]; ok {
		return p.names, p.re
	}
	var names []string
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, loc := range phRe().FindAllStringIndex(s, -1) {
		b.WriteString(regexp.QuoteMeta(s[last:loc[0]]))
		b.WriteString("(.+?)")
		names = append(names, s[loc[0]:loc[1]])
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(s[last:]))
	b.WriteString("$")
	re := regexp.MustCompile(b.String())
	if len(patterns) < 4096 {
		patterns[s] = struct {
			names []string
			re    *regexp.Regexp
		}{names, re}
	}
	return names, re
}

// Fill returns frame with every placeholder that binds names replaced by
// its value (JSON-escaped). A string that is only a placeholder whose value
// is a number ("${RPCTAP_PID}" bound to "4242") becomes that number again.
// Placeholders binds does not name are left as they are.
func Fill(frame []byte, binds map[string]string) []byte {
	if !bytes.Contains(frame, []byte(Prefix)) {
		return frame
	}
	return phRe().ReplaceAllFunc(frame, func(ph []byte) []byte {
		v, ok := binds[string(ph)]
		if !ok {
			return ph
		}
		q := quote(v)
		return q[1 : len(q)-1]
	})
}

// FillNumbers turns "${RPCTAP_PID}"-style tokens whose bound value is a
// number back into JSON numbers; run it before Fill.
func FillNumbers(frame []byte, binds map[string]string) []byte {
	if !bytes.Contains(frame, []byte(`"`+Prefix)) {
		return frame
	}
	for ph, v := range binds {
		if _, err := strconv.ParseFloat(v, 64); err != nil || !strings.HasPrefix(ph, Prefix) {
			continue
		}
		frame = bytes.ReplaceAll(frame, []byte(`"`+ph+`"`), []byte(v))
	}
	return frame
}

// lazyRegexp compiles a regular expression on first use: a package-level
// regexp.MustCompile runs in every rpctap process at start (the tap and
// the sink of every recording), though few commands use it.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
