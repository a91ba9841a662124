package recorder

import (
	"encoding/json"

	"github.com/rpctap/rpctap/internal/jsonscan"
	"github.com/rpctap/rpctap/internal/portable"
	"github.com/rpctap/rpctap/internal/redact"
)

// redactor replaces secrets in a line before it is written. The live
// session is never altered: only the copy in the cassette.
//
// at lists where a secret was replaced (redact.Redactor.Redact); changed
// is also true when only the portable stage changed the line.
type redactor interface {
	redact(line []byte) (out []byte, at []string, changed bool)
	// redactJSON is redact for a line already found to be valid JSON.
	redactJSON(line []byte, idx *jsonscan.Index) (out []byte, at []string, changed bool)
	// knowing returns the redactor for a session of a protocol that
	// declares fields not secret (protocol.NotSecret).
	knowing(fields []redact.Field) redactor
}

type redactAdapter struct{ r *redact.Redactor }

func (a redactAdapter) redact(line []byte) ([]byte, []string, bool) {
	out, at := a.r.Redact(line, false, nil)
	return out, at, at != nil
}

func (a redactAdapter) redactJSON(line []byte, idx *jsonscan.Index) ([]byte, []string, bool) {
	out, at := a.r.Redact(line, true, idx)
	return out, at, at != nil
}

func (a redactAdapter) knowing(fields []redact.Field) redactor {
	return redactAdapter{a.r.WithPublic(fields)}
}

// newRedactor builds the redactor for opts: the redact package's default
// rules plus opts.Keys, then the portable stage when asked for, or nil when
// neither is on.
func newRedactor(opts RedactOptions) redactor {
	var secrets redactor
	if r := redact.New(redact.Options{Keys: opts.Keys, Off: opts.Off}); r.Enabled() {
		secrets = redactAdapter{r}
	}
	if opts.Portable == nil {
		return secrets
	}
	return portableStage{secrets: secrets, n: portable.NewNormalizer(*opts.Portable)}
}

// portableStage runs the secret redactor (if any), then replaces the run's
// values with placeholders. Frames are normalized as JSON; stderr lines and
// other text as plain strings.
type portableStage struct {
	secrets redactor
	n       *portable.Normalizer
}

func (p portableStage) redact(line []byte) ([]byte, []string, bool) {
	out, at, changed := line, []string(nil), false
	if p.secrets != nil {
		out, at, changed = p.secrets.redact(line)
	}
	if json.Valid(out) {
		if o, ok := p.n.Frame(out); ok {
			return o, at, true
		}
		return out, at, changed
	}
	if s := p.n.String(string(out), ""); s != string(out) {
		return []byte(s), at, true
	}
	return out, at, changed
}

func (p portableStage) redactJSON(line []byte, idx *jsonscan.Index) ([]byte, []string, bool) {
	out, at, changed := line, []string(nil), false
	if p.secrets != nil {
		out, at, changed = p.secrets.redactJSON(line, idx)
	}
	if o, ok := p.n.Frame(out); ok {
		return o, at, true
	}
	return out, at, changed
}

func (p portableStage) knowing(fields []redact.Field) redactor {
	if p.secrets != nil {
		p.secrets = p.secrets.knowing(fields)
	}
	return p
}

// redact applies the recorder's redactor to a frame or stderr line.
func (r *Recorder) redact(payload []byte) ([]byte, []string, bool) {
	if r.redactor == nil {
		return payload, nil, false
	}
	return r.redactor.redact(payload)
}

// redactFrame is redact for a frame whose JSON validity the recorder has
// already checked (verbatim: valid JSON, valid UTF-8, nothing around it),
// so the redactor need not check it again.
func (r *Recorder) redactFrame(payload []byte, verbatim bool) ([]byte, []string, bool) {
	if r.redactor == nil {
		return payload, nil, false
	}
	if verbatim {
		return r.redactor.redactJSON(payload, r.indexOf(payload))
	}
	return r.redactor.redact(payload)
}

// Redacting reports whether a recorder with these options replaces secrets
// (the cassette header's "redacted" field says the same).
func Redacting(opts RedactOptions) bool { return newRedactor(opts) != nil }

// portableEvent returns an event's argv and cwd with the run's values
// replaced when the portable stage is on, else as they are.
func (r *Recorder) portableEvent(argv []string, cwd string) ([]string, string) {
	ps, ok := r.redactor.(portableStage)
	if !ok {
		return argv, cwd
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = ps.n.String(a, "")
	}
	if cwd != "" {
		cwd = ps.n.String(cwd, "")
	}
	return out, cwd
}
