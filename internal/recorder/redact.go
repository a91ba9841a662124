package recorder

import (
	"github.com/rpctap/rpctap/internal/jsonscan"
	"github.com/rpctap/rpctap/internal/redact"
)

// redactor replaces secrets in a line before it is written. The live
// session is never altered: only the copy in the cassette.
type redactor interface {
	redact(line []byte) (out []byte, changed bool)
	// redactJSON is redact for a line already found to be valid JSON.
	redactJSON(line []byte, idx *jsonscan.Index) (out []byte, changed bool)
}

type redactAdapter struct{ r *redact.Redactor }

func (a redactAdapter) redact(line []byte) ([]byte, bool) { return a.r.Line(line) }

func (a redactAdapter) redactJSON(line []byte, idx *jsonscan.Index) ([]byte, bool) {
	return a.r.LineJSONIndexed(line, idx)
}

// newRedactor builds the redactor for opts: the redact package's default
// rules plus opts.Keys, or nil when redaction is off.
func newRedactor(opts RedactOptions) redactor {
	r := redact.New(redact.Options{Keys: opts.Keys, Off: opts.Off})
	if !r.Enabled() {
		return nil
	}
	return redactAdapter{r}
}

// redact applies the recorder's redactor to a frame or stderr line.
func (r *Recorder) redact(payload []byte) ([]byte, bool) {
	if r.redactor == nil {
		return payload, false
	}
	return r.redactor.redact(payload)
}

// redactFrame is redact for a frame whose JSON validity the recorder has
// already checked (verbatim: valid JSON, valid UTF-8, nothing around it),
// so the redactor need not check it again.
func (r *Recorder) redactFrame(payload []byte, verbatim bool) ([]byte, bool) {
	if r.redactor == nil {
		return payload, false
	}
	if verbatim {
		return r.redactor.redactJSON(payload, r.indexOf(payload))
	}
	return r.redactor.redact(payload)
}

// Redacting reports whether a recorder with these options replaces secrets
// (the cassette header's "redacted" field says the same).
func Redacting(opts RedactOptions) bool { return newRedactor(opts) != nil }
